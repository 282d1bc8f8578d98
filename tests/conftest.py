"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os

# Loop-owned state touched from a thread fails loudly in every test, in-process and in broker subprocesses (which
# inherit the environment): broker/loop_owner.py. Set before any broker module is imported.
os.environ.setdefault("MINIKAFKA_CHECK_LOOP_THREAD", "1")

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apache_kafka import SIDE_BY_SIDE_BROKER_PROPERTIES, ApacheKafka, KafkaHarnessError, ensure_kafka_jars
from tests.broker_process import BrokerProcess

pytest_plugins = ["pytester", "tests.disk_faults"]  # disk_fault: the storage fault-injection seam


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A running minikafka broker in a subprocess, data under tmp_path; stopped (SIGTERM) afterwards."""
    process = BrokerProcess(tmp_path / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[object]:
    """Build brokers with custom overrides: `broker_factory({"auto.create.topics.enable": "false"})`."""
    started: list[BrokerProcess] = []

    def make(overrides: dict[str, str] | None = None, name: str = "data") -> BrokerProcess:
        process = BrokerProcess(tmp_path / name, overrides)
        process.start()
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()


# Apache Kafka side by side: `target_bootstrap` runs a test once against Apache Kafka and once against minikafka
# (the `broker` fixture), so every scenario is proven against the real thing first.
TARGETS = ["apache", "minikafka"]


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafka]:
    """One Apache Kafka node for the whole session; skipped (visibly) when Java/Maven or the jars are missing."""
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    kafka = ApacheKafka(tmp_path_factory.mktemp("apache-kafka"), lib_dir=lib_dir,
                        properties=SIDE_BY_SIDE_BROKER_PROPERTIES)
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def target_bootstrap(target: str, request: pytest.FixtureRequest) -> str:
    """Bootstrap servers of the broker under test: Apache Kafka (session) or minikafka (`broker` fixture)."""
    fixture = "apache_kafka" if target == "apache" else "broker"
    bootstrap: str = request.getfixturevalue(fixture).bootstrap
    return bootstrap

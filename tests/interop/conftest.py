"""Fixtures for interop tests: Apache Kafka 4.x from its official jars, and a target switch.

`target_bootstrap` runs a test once against Apache Kafka and once against minikafka (the suite-wide `broker`
fixture from tests/conftest.py), so every scenario is proven against the real thing first.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.apache_kafka import ApacheKafka, KafkaHarnessError, ensure_kafka_jars
from tests.interop.java_client import ClientUnavailableError
from tests.interop.java_client import ensure_built as ensure_java_client
from tests.interop.kafkajs_client import ensure_installed as ensure_kafkajs_client

TARGETS = ["apache", "minikafka"]


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafka]:
    """One Apache Kafka node for the whole session; skipped (visibly) when Java/Maven or the jars are missing."""
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    kafka = ApacheKafka(tmp_path_factory.mktemp("apache-kafka"), lib_dir=lib_dir)
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


@pytest.fixture(scope="session")
def java_client() -> None:
    try:
        ensure_java_client()
    except ClientUnavailableError as exc:
        pytest.skip(f"Java interop client unavailable: {exc}")


@pytest.fixture(scope="session")
def kafkajs_client() -> None:
    try:
        ensure_kafkajs_client()
    except ClientUnavailableError as exc:
        pytest.skip(f"kafkajs interop client unavailable: {exc}")

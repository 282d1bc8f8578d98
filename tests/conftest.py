"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os

# Loop-owned state touched from a thread fails loudly in every test, in-process and in broker subprocesses (which
# inherit the environment): broker/loop_owner.py. Set before any broker module is imported.
os.environ.setdefault("MINIKAFKA_CHECK_LOOP_THREAD", "1")

import subprocess
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.testing import MiniKafka
from tests.apache_kafka import SIDE_BY_SIDE_BROKER_PROPERTIES, ApacheKafka, KafkaHarnessError, ensure_kafka_jars
from tests.broker_process import BrokerProcess
from tests.jvm_process import JvmProcess

pytest_plugins = ["pytester", "tests.disk_faults"]  # disk_fault: the storage fault-injection seam

TESTS = Path(__file__).resolve().parent
#: folders whose tests all start a broker process, a JVM, Spark or a container
PROCESS_FOLDERS = {"integration", "interop", "pipeline", "docker", "testing"}
#: fixtures that start one
PROCESS_FIXTURES = {"broker", "broker_factory", "apache_kafka", "target", "target_bootstrap"}


def _starts_processes(module: types.ModuleType) -> bool:
    """A test module that imports `subprocess`, a broker-process or Apache Kafka harness, MiniKafka or PySpark
    (what a test needs in order to start a process is in its module's names)."""
    for value in vars(module).values():
        if value is subprocess or (isinstance(value, types.ModuleType) and value.__name__.startswith("pyspark")):
            return True
        if isinstance(value, type) and issubclass(value, (BrokerProcess, ApacheKafka, MiniKafka, JvmProcess)):
            return True
    return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks `process` the tests that start a broker process, a JVM or Spark (`make check` leaves them out): by
    folder, by fixture, or by what their module imports. Deterministic: the same tests every run."""
    verdicts: dict[Path, bool] = {}
    for item in items:
        path = Path(str(item.path))
        if path not in verdicts:
            folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else ""
            module = getattr(item, "module", None)
            verdicts[path] = folder in PROCESS_FOLDERS or (module is not None and _starts_processes(module))
        if verdicts[path] or PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.process)


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

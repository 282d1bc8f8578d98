"""Fixtures for interop tests: the Java, kafkajs and franz-go client programs, Apache Kafka's jars for its CLI
tools, and one warm JVM per test module running kafka-configs (`kafka_configs_tool`).

Apache Kafka itself (`apache_kafka`) and the `target`/`target_bootstrap` switch live in tests/conftest.py, shared
with the Spark tests under tests/pipeline/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.franzgo_client import ensure_built as ensure_franzgo_client
from tests.interop.java_client import ClientUnavailableError
from tests.interop.java_client import ensure_built as ensure_java_client
from tests.interop.kafkajs_client import ensure_installed as ensure_kafkajs_client
from tests.interop.tool_batch import CONFIG_COMMAND, ToolBatch
from tests.kafka_jars import KafkaHarnessError, ensure_kafka_jars


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


@pytest.fixture(scope="session")
def franzgo_client() -> None:
    try:
        ensure_franzgo_client()
    except ClientUnavailableError as exc:
        pytest.skip(f"franz-go interop client unavailable: {exc}")


@pytest.fixture(scope="session")
def kafka_lib_dir() -> Path:
    """The lib dir of Apache Kafka's official jars (kafka-acls, kafka-configs, ... run from it)."""
    try:
        return ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka tools unavailable: {exc}")


@pytest.fixture(scope="module")
def kafka_configs_tool(kafka_lib_dir: Path, java_client: None) -> Iterator[ToolBatch]:
    """Apache Kafka's `kafka-configs` (ConfigCommand) in one JVM for a whole test module: each `run` is one
    kafka-configs invocation, without a JVM start of its own."""
    with ToolBatch(kafka_lib_dir, CONFIG_COMMAND) as tool:
        yield tool

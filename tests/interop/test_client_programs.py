"""Java (kafka-clients), kafkajs and franz-go round trips against Apache Kafka and minikafka, compared field by
field."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.interop.franzgo_client import run_franzgo_client
from tests.interop.java_client import run_java_client
from tests.interop.kafkajs_client import run_kafkajs_client

pytestmark = pytest.mark.interop

COUNT = 600
PARTITIONS = 3


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _assert_round_trip(summary: dict[str, Any]) -> None:
    assert summary["produced"] == COUNT
    assert summary["consumed"] == COUNT, summary
    assert summary["digest"] == summary["produced_digest"], "keys, values or headers changed on the way"
    assert summary["out_of_order"] == 0
    partitions = summary["produced_partitions"]
    assert sorted(partitions) == [str(p) for p in range(PARTITIONS)]
    for partition, stats in partitions.items():
        assert stats["first_offset"] == 0
        assert stats["last_offset"] == stats["count"] - 1, f"offsets not contiguous on partition {partition}"
        assert summary["last_offset"][partition] == stats["last_offset"]


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key not in ("topic", "client")}


# The expected summary is computed against Apache Kafka once per client and cached here, so the minikafka run
# is compared with what the very same program observed on the real broker.
_APACHE_SUMMARIES: dict[str, dict[str, Any]] = {}


def _reference(client: str, apache_bootstrap: str) -> dict[str, Any]:
    if client not in _APACHE_SUMMARIES:
        run = {"java": run_java_client, "kafkajs": run_kafkajs_client, "franzgo": run_franzgo_client}[client]
        _APACHE_SUMMARIES[client] = run(apache_bootstrap, _topic(f"ref-{client}"), COUNT, partitions=PARTITIONS)
        _assert_round_trip(_APACHE_SUMMARIES[client])
    return _APACHE_SUMMARIES[client]


@pytest.mark.usefixtures("java_client")
def test_java_client_round_trip(target: str, target_bootstrap: str, apache_kafka: Any) -> None:
    summary = run_java_client(target_bootstrap, _topic("java"), COUNT, partitions=PARTITIONS)
    _assert_round_trip(summary)
    assert _comparable(summary) == _comparable(_reference("java", apache_kafka.bootstrap))


@pytest.mark.usefixtures("kafkajs_client")
def test_kafkajs_round_trip(target: str, target_bootstrap: str, apache_kafka: Any) -> None:
    summary = run_kafkajs_client(target_bootstrap, _topic("kafkajs"), COUNT, partitions=PARTITIONS)
    _assert_round_trip(summary)
    assert _comparable(summary) == _comparable(_reference("kafkajs", apache_kafka.bootstrap))


@pytest.mark.usefixtures("franzgo_client")
def test_franzgo_round_trip(target: str, target_bootstrap: str, apache_kafka: Any) -> None:
    summary = run_franzgo_client(target_bootstrap, _topic("franzgo"), COUNT, partitions=PARTITIONS)
    _assert_round_trip(summary)
    assert _comparable(summary) == _comparable(_reference("franzgo", apache_kafka.bootstrap))


@pytest.mark.usefixtures("java_client", "kafkajs_client")
def test_java_and_kafkajs_observe_the_same_records(target_bootstrap: str) -> None:
    """Both clients use Kafka's murmur2 partitioner, so the same records land on the same offsets."""
    java = run_java_client(target_bootstrap, _topic("java-x"), COUNT, partitions=PARTITIONS)
    kafkajs = run_kafkajs_client(target_bootstrap, _topic("kafkajs-x"), COUNT, partitions=PARTITIONS)
    assert _comparable(java) == _comparable(kafkajs)


@pytest.mark.usefixtures("java_client", "franzgo_client")
def test_java_and_franzgo_observe_the_same_records(target_bootstrap: str) -> None:
    """franz-go's default partitioner hashes keys with Kafka's murmur2 too: the same records, the same offsets."""
    java = run_java_client(target_bootstrap, _topic("java-g"), COUNT, partitions=PARTITIONS)
    franzgo = run_franzgo_client(target_bootstrap, _topic("franzgo-x"), COUNT, partitions=PARTITIONS)
    assert _comparable(java) == _comparable(franzgo)


@pytest.mark.usefixtures("java_client", "franzgo_client")
def test_franzgo_group_reads_what_java_wrote(target_bootstrap: str) -> None:
    """The Java producer writes (idempotent, lz4); franz-go reads through a consumer group."""
    topic = _topic("cross-go")
    written = run_java_client(target_bootstrap, topic, COUNT, mode="produce", partitions=PARTITIONS)
    read = run_franzgo_client(target_bootstrap, topic, COUNT, mode="consume", group=f"g-{topic}")
    assert read["consumed"] == COUNT
    assert read["digest"] == written["produced_digest"]
    assert read["last_offset"] == {p: s["last_offset"] for p, s in written["produced_partitions"].items()}


@pytest.mark.usefixtures("java_client", "kafkajs_client")
def test_java_group_reads_what_kafkajs_wrote(target_bootstrap: str) -> None:
    """kafkajs writes (idempotent, gzip); the Java consumer reads through a consumer group.

    Not the other way round: kafkajs cannot decode the lz4 batches the Java producer writes.
    """
    topic = _topic("cross")
    written = run_kafkajs_client(target_bootstrap, topic, COUNT, mode="produce", partitions=PARTITIONS)
    read = run_java_client(target_bootstrap, topic, COUNT, mode="consume", group=f"g-{topic}")
    assert read["consumed"] == COUNT
    assert read["digest"] == written["produced_digest"]
    assert read["last_offset"] == {p: s["last_offset"] for p, s in written["produced_partitions"].items()}

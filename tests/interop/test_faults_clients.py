"""Wire-level faults (broker/faults) met by clients other than librdkafka: the Java client (kafka-clients,
tests/interop/java), its idempotent acks=all producer across pushed NOT_LEADER_OR_FOLLOWER errors and Produce
requests appended but never answered, and its commitSync across an OffsetCommit whose connection dropped after the
commit was applied; and kafkajs (Node.js), its idempotent producer across the same Produce faults."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minikafka.testing import MiniKafka
from tests.interop.java_client import run_java_client
from tests.interop.kafkajs_client import run_kafkajs_client

pytestmark = pytest.mark.timeout(300)
COUNT = 600
PARTITIONS = 3


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 1}) as broker:
        yield broker


@pytest.mark.usefixtures("java_client")
def test_the_java_idempotent_producer_delivers_exactly_once_in_order_across_produce_faults(kafka: MiniKafka) -> None:
    kafka.faults.push_request_errors("Produce", *["NOT_LEADER_OR_FOLLOWER"] * 4, client_id="producer-")
    kafka.faults.disconnect_on("Produce", count=2, client_id="producer-")
    summary = run_java_client(kafka.bootstrap_servers, f"faults-java-{uuid.uuid4().hex[:8]}", COUNT,
                              partitions=PARTITIONS, producer_config={"linger.ms": "5", "batch.size": "2048"})
    state = kafka.faults.describe()
    assert state["push_request_errors"] == [] and state["disconnect_on"] == [], "every fault met a Produce"
    assert_exactly_once_in_order(summary)


def assert_exactly_once_in_order(summary: dict[str, Any], count: int = COUNT) -> None:
    """A client program's summary (tests/interop/java_client.py): every one of `count` records read back once,
    unchanged, in order, at offsets 0..n-1 of its partition."""
    assert summary["produced"] == summary["consumed"] == count
    assert summary["digest"] == summary["produced_digest"]
    assert summary["out_of_order"] == 0
    for partition, stats in summary["produced_partitions"].items():
        assert (stats["first_offset"], stats["last_offset"]) == (0, stats["count"] - 1), partition


@pytest.mark.usefixtures("java_client")
def test_the_java_consumer_commit_sync_survives_the_commit_gap(kafka: MiniKafka) -> None:
    topic = f"faults-java-commit-{uuid.uuid4().hex[:8]}"
    run_java_client(kafka.bootstrap_servers, topic, COUNT, mode="produce", partitions=PARTITIONS)
    kafka.faults.disconnect_on("OffsetCommit")
    summary = run_java_client(kafka.bootstrap_servers, topic, COUNT, mode="consume-commit", group=f"g-{topic}",
                              partitions=PARTITIONS)
    assert kafka.faults.describe()["disconnect_on"] == [], "the commit met the fault"
    assert summary["consumed"] == COUNT
    assert summary["committed_read_back"] == summary["committed"]
    assert sum(summary["committed"].values()) == COUNT


@pytest.mark.usefixtures("kafkajs_client")
def test_the_kafkajs_idempotent_producer_delivers_exactly_once_in_order_across_produce_faults(kafka: MiniKafka) -> None:
    kafka.faults.push_request_errors("Produce", "NOT_LEADER_OR_FOLLOWER", "NONE", "NOT_LEADER_OR_FOLLOWER")
    kafka.faults.disconnect_on("Produce")
    summary = run_kafkajs_client(kafka.bootstrap_servers, f"faults-kafkajs-{uuid.uuid4().hex[:8]}", COUNT,
                                 partitions=PARTITIONS)
    state = kafka.faults.describe()
    assert state["push_request_errors"] == [] and state["disconnect_on"] == [], "every fault met a Produce"
    assert_exactly_once_in_order(summary)

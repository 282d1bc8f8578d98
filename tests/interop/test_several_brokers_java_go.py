"""Three brokers in one process met by the Java client (kafka-clients, tests/interop/java) and the Go client
(franz-go, tests/interop/franzgo): each one's idempotent acks=all producer and a consumer group run while leaders
move (`elect_leader`) and brokers stop and start under them, every 250 ms from the first record for as long as the
client runs. Every record must be read back once, unchanged, in order, at offsets 0..n-1 of its partition. The Go
client paces its produce (2,000 records a second): unpaced, it writes the 3,000 records in a fifth of a second,
before the first fault.

kafkajs is not among them: it does not reconnect after a broker closes its connection (kafkajs issues 979 and 1711,
open), so a stopped broker ends its run on any Kafka cluster; it meets the single-broker faults in
test_faults_clients.py."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka
from tests.interop.franzgo_client import run_franzgo_client
from tests.interop.java_client import run_java_client
from tests.interop.test_faults_clients import assert_exactly_once_in_order

pytestmark = pytest.mark.timeout(300)
COUNT = 3000
#: the Java client writes 3,000 records in well under a second once it runs: more, so the faults overlap it
JAVA_COUNT = 40_000
PARTITIONS = 3
FAULT_INTERVAL_S = 0.25


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"group.initial.rebalance.delay.ms": 0}, brokers=3) as broker:
        yield broker


def fault_cycle(kafka: MiniKafka, topic: str) -> list[Callable[[], Any]]:
    """Leader moves and a stop/start of each broker in turn; every broker is running again after each pair."""
    faults = kafka.faults
    return [lambda: faults.elect_leader(topic, 0, 2), lambda: faults.stop_broker(1), lambda: faults.start_broker(1),
            lambda: faults.elect_leader(topic, 1, 3), lambda: faults.stop_broker(3), lambda: faults.start_broker(3),
            lambda: faults.elect_leader(topic, 2, 1), lambda: faults.stop_broker(2), lambda: faults.start_broker(2),
            lambda: faults.elect_leader(topic, 0, 3)]


def run_under_faults(kafka: MiniKafka, topic: str, client: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """Run `client` in a thread while the fault cycle repeats; returns its summary and how many faults were set."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["summary"] = client()
        except BaseException as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="client-under-faults")
    worker.start()
    cycle, applied = fault_cycle(kafka, topic), 0
    try:
        # from the first record on: a client's set-up (kafkajs' admin creating the topic) does not retry a drop
        watermarks = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "watermarks"})
        while worker.is_alive() and watermarks.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1] == 0:
            worker.join(0.02)
        watermarks.close()
        while worker.is_alive():
            cycle[applied % len(cycle)]()
            applied += 1
            worker.join(FAULT_INTERVAL_S)
    finally:
        for broker_id in (1, 2, 3):
            if broker_id in kafka.faults.describe()["stopped_brokers"]:
                kafka.faults.start_broker(broker_id)
        worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["summary"], applied


def new_topic(kafka: MiniKafka, client: str) -> str:
    topic = f"moves-{client}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(10)
    return topic


@pytest.mark.usefixtures("java_client")
def test_the_java_client_keeps_exactly_once_in_order_while_leaders_move_and_brokers_stop(kafka: MiniKafka) -> None:
    topic = new_topic(kafka, "java")
    summary, applied = run_under_faults(kafka, topic, lambda: run_java_client(
        kafka.bootstrap_servers, topic, JAVA_COUNT, partitions=PARTITIONS, group=f"g-{topic}", timeout_ms=90_000,
        producer_config={"linger.ms": "5", "batch.size": "2048"}))
    assert applied >= 4, f"the faults overlapped the client's run: {applied} applied"
    assert_exactly_once_in_order(summary, JAVA_COUNT)


@pytest.mark.usefixtures("franzgo_client")
def test_the_franzgo_client_keeps_exactly_once_in_order_while_leaders_move_and_brokers_stop(kafka: MiniKafka) -> None:
    topic = new_topic(kafka, "franzgo")
    summary, applied = run_under_faults(kafka, topic, lambda: run_franzgo_client(
        kafka.bootstrap_servers, topic, COUNT, partitions=PARTITIONS, group=f"g-{topic}", timeout_ms=90_000,
        producer_config={"linger.ms": "5", "batch.size": "2048"}, records_per_second=2000))
    assert applied >= 4, "the faults overlapped the client's run"
    assert_exactly_once_in_order(summary, COUNT)

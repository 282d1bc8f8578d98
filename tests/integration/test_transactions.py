"""Transactions with real clients: confluent-kafka and kafka-python transactional producers, read_committed
and read_uncommitted consumers, send_offsets_to_transaction, zombie fencing, the coordinator's timeout, and
a broker restart in the middle of a transaction."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic

OVERRIDES = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
}
TOPIC = "payments"

BrokerFactory = Callable[..., BrokerProcess]


def transactional_producer(bootstrap: str, transactional_id: str, **extra: Any) -> Any:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, **extra})
    producer.init_transactions(30)
    return producer


def produce_in_transaction(producer: Any, values: list[bytes], commit: bool, topic: str = TOPIC) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0  # abort_transaction would purge unsent records; these must reach the log
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def consume(bootstrap: str, isolation_level: str, expected_count: int, topic: str = TOPIC,
            timeout_s: float = 20.0) -> list[bytes]:
    """Partition 0 from offset 0 until `expected_count` records arrived (or the timeout)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation_level}",
                         "isolation.level": isolation_level, "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(values) < expected_count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
    finally:
        consumer.close()
    return values


def stable_end(bootstrap: str, topic: str = TOPIC) -> tuple[int, int]:
    """(last stable offset, high watermark) of partition 0: ListOffsets latest as read_committed and as
    read_uncommitted consumers see it."""
    from confluent_kafka import Consumer, TopicPartition

    ends = []
    for isolation_level in ("read_committed", "read_uncommitted"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                             "isolation.level": isolation_level})
        try:
            ends.append(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1])
        finally:
            consumer.close()
    return ends[0], ends[1]


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def committed_offset(bootstrap: str, group: str, topic: str) -> int:
    """The group's committed offset of partition 0 as OffsetFetch without require_stable answers it."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_uncommitted"})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    process = broker_factory(OVERRIDES)
    create_topic(process.bootstrap, TOPIC, 1)
    return process


def test_commit_and_abort_read_committed_sees_only_committed(broker: BrokerProcess) -> None:
    producer = transactional_producer(broker.bootstrap, "payments-writer")
    produce_in_transaction(producer, [b"c1", b"c2", b"c3"], commit=True)
    produce_in_transaction(producer, [b"a1", b"a2"], commit=False)
    produce_in_transaction(producer, [b"c4", b"c5"], commit=True)

    assert consume(broker.bootstrap, "read_committed", 5) == [b"c1", b"c2", b"c3", b"c4", b"c5"]
    assert consume(broker.bootstrap, "read_uncommitted", 7) == [b"c1", b"c2", b"c3", b"a1", b"a2", b"c4", b"c5"]
    assert stable_end(broker.bootstrap) == (10, 10)  # 7 records + 3 markers; nothing open


def test_open_transaction_holds_the_last_stable_offset(broker: BrokerProcess) -> None:
    producer = transactional_producer(broker.bootstrap, "holder")
    produce_in_transaction(producer, [b"before"], commit=True)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"open", partition=0)
    assert producer.flush(30) == 0
    assert stable_end(broker.bootstrap) == (2, 3)
    assert consume(broker.bootstrap, "read_committed", 2, timeout_s=3) == [b"before"]
    producer.commit_transaction(30)
    assert stable_end(broker.bootstrap) == (4, 4)
    assert consume(broker.bootstrap, "read_committed", 2) == [b"before", b"open"]


def test_send_offsets_to_transaction_commits_the_group_offset_with_the_transaction(
    broker_factory: BrokerFactory,
) -> None:
    from confluent_kafka import Consumer, Producer

    broker = broker_factory(OVERRIDES)
    create_topic(broker.bootstrap, "in", 1)
    create_topic(broker.bootstrap, "out", 1)
    source = Producer({"bootstrap.servers": broker.bootstrap})
    for index in range(10):
        source.produce("in", value=f"in-{index}".encode(), partition=0)
    assert source.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "etl", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe(["in"])
    read: list[Any] = []
    deadline = time.monotonic() + 30
    while len(read) < 4 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            read.append(message)
    assert len(read) == 4
    producer = transactional_producer(broker.bootstrap, "etl-tx")
    producer.begin_transaction()
    for message in read:
        producer.produce("out", value=message.value().upper(), partition=0)
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 30)
    assert producer.flush(30) == 0
    assert committed_offset(broker.bootstrap, "etl", "in") < 0  # pending until the transaction commits
    producer.commit_transaction(30)
    assert committed_offset(broker.bootstrap, "etl", "in") == 4
    consumer.close()

    # The aborted next round leaves the committed offset where it was.
    producer.begin_transaction()
    producer.produce("out", value=b"never", partition=0)
    from confluent_kafka import TopicPartition

    producer.send_offsets_to_transaction([TopicPartition("in", 0, 9)], _group_metadata(broker.bootstrap, "etl"), 30)
    assert producer.flush(30) == 0
    producer.abort_transaction(30)
    assert committed_offset(broker.bootstrap, "etl", "in") == 4

    # Reloading __consumer_offsets replays the transactional commits with their markers.
    broker.restart()
    assert committed_offset(broker.bootstrap, "etl", "in") == 4
    assert consume(broker.bootstrap, "read_committed", 4, topic="out") == [b"IN-0", b"IN-1", b"IN-2", b"IN-3"]


def _group_metadata(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()


def test_second_producer_with_the_same_id_fences_the_first(broker: BrokerProcess) -> None:
    from confluent_kafka import KafkaException

    zombie = transactional_producer(broker.bootstrap, "single-writer")
    zombie.begin_transaction()
    zombie.produce(TOPIC, value=b"zombie", partition=0)
    assert zombie.flush(30) == 0

    successor = transactional_producer(broker.bootstrap, "single-writer")  # aborts the zombie's transaction
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    assert raised.value.args[0].fatal()
    produce_in_transaction(successor, [b"successor"], commit=True)
    assert consume(broker.bootstrap, "read_committed", 1) == [b"successor"]
    assert consume(broker.bootstrap, "read_uncommitted", 2) == [b"zombie", b"successor"]


def test_coordinator_aborts_a_transaction_past_its_timeout(broker_factory: BrokerFactory) -> None:
    from confluent_kafka import KafkaException

    broker = broker_factory({**OVERRIDES, "transaction.abort.timed.out.transaction.cleanup.interval.ms": "300"})
    create_topic(broker.bootstrap, TOPIC, 1)
    producer = transactional_producer(broker.bootstrap, "slow", **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"too-late", partition=0)
    assert producer.flush(30) == 0
    assert stable_end(broker.bootstrap) == (0, 1)
    wait_until(lambda: stable_end(broker.bootstrap) == (2, 2), 15, "the timed-out transaction's ABORT marker")
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    assert consume(broker.bootstrap, "read_committed", 1, timeout_s=2) == []


def test_broker_restart_mid_transaction_then_the_next_producer_aborts_it(broker: BrokerProcess) -> None:
    producer = transactional_producer(broker.bootstrap, "restarted")
    produce_in_transaction(producer, [b"kept"], commit=True)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"in-flight", partition=0)
    assert producer.flush(30) == 0
    broker.restart()
    assert stable_end(broker.bootstrap) == (2, 3)  # still open after the reload

    successor = transactional_producer(broker.bootstrap, "restarted")
    assert stable_end(broker.bootstrap) == (4, 4)  # the reloaded Ongoing transaction was aborted
    produce_in_transaction(successor, [b"after"], commit=True)
    assert consume(broker.bootstrap, "read_committed", 2) == [b"kept", b"after"]


def test_kafka_python_transactional_producer(broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-tx")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(TOPIC, value=b"kp-committed", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, value=b"kp-aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, value=b"kp-second", partition=0)
        producer.commit_transaction()
    finally:
        producer.close()
    assert consume(broker.bootstrap, "read_committed", 2) == [b"kp-committed", b"kp-second"]
    assert consume(broker.bootstrap, "read_uncommitted", 3) == [b"kp-committed", b"kp-aborted", b"kp-second"]

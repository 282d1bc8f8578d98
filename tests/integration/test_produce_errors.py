"""Produce-path errors as real clients see them: INVALID_RECORD for a keyless record on a compacted topic (nothing
appended, the producer and its connection keep working), unknown topic with auto-create off, MESSAGE_TOO_LARGE,
and acks=0 produce."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import kafka.errors
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import consume_confluent, create_topic

pytestmark = pytest.mark.timeout(120)


class Deliveries:
    """Delivery reports of one confluent-kafka producer, in order (callbacks run inside poll/flush)."""

    def __init__(self) -> None:
        self.reports: list[tuple[Any, int, int]] = []

    def __call__(self, err: Any, msg: Any) -> None:
        self.reports.append((err, msg.partition(), msg.offset()))


def _latest_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "latest", "enable.auto.commit": False})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1])
    finally:
        consumer.close()


def _produce_one(producer: Producer, topic: str, key: bytes | None, value: bytes) -> tuple[Any, int, int]:
    deliveries = Deliveries()
    producer.produce(topic, key=key, value=value, on_delivery=deliveries)
    assert producer.flush(30) == 0
    assert len(deliveries.reports) == 1
    return deliveries.reports[0]


def _wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
def test_keyless_record_into_compacted_topic_is_invalid_record_and_producer_stays_usable(
    broker: BrokerProcess, idempotent: bool
) -> None:
    topic = "compacted"
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": idempotent, **({} if idempotent else {"retries": 0})})
    err, _, offset = _produce_one(producer, topic, b"k0", b"first")
    assert err is None and offset == 0
    log_size = len(broker.read_log())

    err, _, _ = _produce_one(producer, topic, None, b"no key")
    assert err is not None and err.code() == KafkaError.INVALID_RECORD, f"got {err}"
    assert _latest_offset(broker.bootstrap, topic) == 1, "the rejected batch was appended"

    err, _, offset = _produce_one(producer, topic, b"k1", b"second")
    assert err is None and offset == 1, f"keyed record after the rejection: {err} at {offset}"
    assert "closing connection" not in broker.read_log()[log_size:], "the broker closed the producer's connection"

    records = consume_confluent(broker.bootstrap, topic, {0: 2})
    assert [(r.key, r.value) for r in records] == [(b"k0", b"first"), (b"k1", b"second")]


def test_kafka_python_gets_invalid_record_error_for_keyless_record_on_compacted_topic(
    broker: BrokerProcess,
) -> None:
    topic = "compacted-kp"
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    # Not idempotent: kafka-python's idempotent producer treats INVALID_RECORD as fatal and aborts every later
    # batch client-side (its transaction manager goes to FATAL_ERROR), so "stays usable" is only testable so.
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False, retries=0)
    try:
        with pytest.raises(kafka.errors.InvalidRecordError):
            producer.send(topic, value=b"no key").get(timeout=30)
        assert _latest_offset(broker.bootstrap, topic) == 0, "the rejected batch was appended"
        metadata = producer.send(topic, key=b"k", value=b"keyed").get(timeout=30)
        assert metadata.offset == 0
    finally:
        producer.close(timeout=10)
    assert _latest_offset(broker.bootstrap, topic) == 1


def test_unknown_topic_with_auto_create_off_is_not_created_and_produce_fails(broker_factory: Any) -> None:
    broker: BrokerProcess = broker_factory({"auto.create.topics.enable": "false"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(topic="missing", timeout=10)
    assert metadata.topics["missing"].error is not None
    assert metadata.topics["missing"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    producer = Producer({"bootstrap.servers": broker.bootstrap, "topic.metadata.propagation.max.ms": 1000,
                         "message.timeout.ms": 5000})
    err, _, _ = _produce_one(producer, "missing", b"k", b"v")
    assert err is not None and err.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC), err
    assert "missing" not in admin.list_topics(timeout=10).topics, "the topic was auto-created anyway"


def test_metadata_auto_creates_topic_when_enabled(broker: BrokerProcess) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    err, partition, offset = _produce_one(producer, "auto-created", b"k", b"v")
    assert err is None and (partition, offset) == (0, 0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert "auto-created" in admin.list_topics(timeout=10).topics


def test_batch_above_max_message_bytes_is_message_too_large_and_not_appended(broker: BrokerProcess) -> None:
    topic = "small-messages"
    create_topic(broker.bootstrap, topic, 1, {"max.message.bytes": "10000"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "compression.type": "none",
                         "retries": 0})
    err, _, _ = _produce_one(producer, topic, b"big", bytes(range(256)) * 200)  # 51,200 bytes
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, f"got {err}"
    assert _latest_offset(broker.bootstrap, topic) == 0

    err, _, offset = _produce_one(producer, topic, b"small", b"fits")
    assert err is None and offset == 0


def test_acks_0_produce_is_appended(broker: BrokerProcess) -> None:
    topic = "fire-and-forget"
    create_topic(broker.bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "0", "linger.ms": 5})
    deliveries = Deliveries()
    for i in range(1000):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=deliveries)
    assert producer.flush(30) == 0
    assert all(err is None for err, _, _ in deliveries.reports)
    assert _wait_until(lambda: _latest_offset(broker.bootstrap, topic) == 1000, 15)
    records = consume_confluent(broker.bootstrap, topic, {0: 1000})
    assert [r.value for r in records] == [b"v%d" % i for i in range(1000)]

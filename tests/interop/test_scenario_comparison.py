"""One confluent-kafka scenario run against Apache Kafka and minikafka; what the client observes must match."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RECORDS_PER_CODEC = 60
PARTITIONS = 3
TIMEOUT_S = 30.0


def _create(admin: AdminClient, topic: NewTopic) -> int:
    """CreateTopics and return the error code the client observed (0 = created)."""
    try:
        admin.create_topics([topic], operation_timeout=10)[topic.topic].result(timeout=TIMEOUT_S)
    except Exception as exc:  # confluent-kafka raises KafkaException wrapping a KafkaError
        error = exc.args[0]
        return int(error.code()) if isinstance(error, KafkaError) else -1
    return 0


def _produce(
    bootstrap: str, topic: str, records: Sequence[tuple[bytes | None, bytes]], **config: Any
) -> list[Message]:
    """Produce and return the delivery reports in send order; errors are kept, not raised."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    reports: list[Message] = []
    for index, (key, value) in enumerate(records):
        headers: list[tuple[str, str | bytes | None]] = [
            ("idx", str(index).encode()), ("empty", b""), ("codec", str(config.get("compression.type")))
        ]
        producer.produce(topic, key=key, value=value, headers=headers, on_delivery=lambda _e, m: reports.append(m))
    assert producer.flush(TIMEOUT_S) == 0, "records still in flight"
    return reports


def _consume_all(bootstrap: str, topic: str, expected: int) -> list[Message]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"unused-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(PARTITIONS)])
    messages: list[Message] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                assert message.error() is None, message.error()
                messages.append(message)
    finally:
        consumer.close()
    return messages


def _error_code(message: Message) -> int:
    error = message.error()
    return 0 if error is None else int(error.code())


def _position(message: Message) -> tuple[int, int]:
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    return partition, offset


def observe(bootstrap: str) -> dict[str, Any]:
    """Run the scenario and return everything the client saw that must not depend on the broker."""
    suffix = uuid.uuid4().hex[:8]
    topic, compacted = f"scenario-{suffix}", f"compacted-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    observed: dict[str, Any] = {
        "create": _create(admin, NewTopic(topic, PARTITIONS, 1)),
        "create_compacted": _create(admin, NewTopic(compacted, 1, 1, config={"cleanup.policy": "compact"})),
        "create_existing": _create(admin, NewTopic(topic, PARTITIONS, 1)),
        "create_invalid_config": _create(admin, NewTopic(f"bad-{suffix}", 1, 1, config={"cleanup.policy": "x"})),
    }
    try:
        admin.describe_topics(TopicCollection([f"missing-{suffix}"]))[f"missing-{suffix}"].result(timeout=10)
        observed["describe_unknown_topic"] = 0
    except Exception as exc:
        observed["describe_unknown_topic"] = int(exc.args[0].code())

    sent = 0
    delivery: dict[str, list[tuple[int, int, int]]] = {}
    for codec in CODECS:
        records = [(f"{codec}-key-{i}".encode(), f"{codec}-value-{i}".encode() * (i % 5 + 1))
                   for i in range(RECORDS_PER_CODEC)]
        reports = _produce(bootstrap, topic, records, **{"compression.type": codec})
        sent += len(records)
        delivery[codec] = [(_error_code(m), *_position(m)) for m in reports]
    observed["delivery_errors"] = sorted({e for reports in delivery.values() for e, _, _ in reports})

    messages = _consume_all(bootstrap, topic, sent)
    observed["consumed"] = len(messages)
    by_partition: dict[int, list[int]] = {}
    for message in messages:
        partition, offset = _position(message)
        by_partition.setdefault(partition, []).append(offset)
    observed["offsets"] = {p: (len(o), o == list(range(len(o)))) for p, o in sorted(by_partition.items())}
    delivered_at = {(p, o) for reports in delivery.values() for _, p, o in reports}
    observed["consumed_at_delivered_offsets"] = {(m.partition(), m.offset()) for m in messages} == delivered_at
    observed["records"] = sorted(
        (m.partition(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[0]) for m in messages
    )
    now_ms = time.time() * 1000
    observed["timestamps_recent"] = all(now_ms - 120_000 < m.timestamp()[1] <= now_ms + 1000 for m in messages)

    keyless = _produce(bootstrap, compacted, [(None, b"no key")])
    observed["keyless_to_compacted"] = _error_code(keyless[0])
    after = _produce(bootstrap, compacted, [(b"k", b"keyed")])
    observed["keyed_after_rejection"] = (after[0].error() is None, after[0].offset())
    return observed


_APACHE: dict[str, dict[str, Any]] = {}


def test_confluent_kafka_observes_the_same(target: str, target_bootstrap: str, apache_kafka: Any) -> None:
    if "apache" not in _APACHE:
        _APACHE["apache"] = observe(apache_kafka.bootstrap)
    expected = _APACHE["apache"]
    # Pin Apache Kafka's answers, so the comparison cannot pass by both brokers being wrong the same way.
    assert expected["create"] == expected["create_compacted"] == 0
    assert expected["create_existing"] == KafkaError.TOPIC_ALREADY_EXISTS
    assert expected["create_invalid_config"] == KafkaError.INVALID_CONFIG
    assert expected["describe_unknown_topic"] == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert expected["keyless_to_compacted"] == KafkaError.INVALID_RECORD
    assert expected["keyed_after_rejection"] == (True, 0), "the rejected keyless record must not be appended"
    assert expected["consumed"] == len(CODECS) * RECORDS_PER_CODEC
    assert expected["consumed_at_delivered_offsets"] and expected["timestamps_recent"]
    assert all(contiguous for _, contiguous in expected["offsets"].values())

    observed = expected if target == "apache" else observe(target_bootstrap)
    for field in expected:
        assert observed[field] == expected[field], f"{field} differs from Apache Kafka"

"""Produce/consume drivers for the three Python clients, all reporting in `ExpectedRecords`/`ConsumedRecord` terms.

Consumers use manual assignment from the beginning and never commit (no consumer-group APIs needed).
Every loop has a deadline so a broken broker fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from tests.integration.expected_records import ConsumedRecord, ExpectedRecords, Headers

CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _index_of(key: bytes) -> int:
    return int(key[1:])  # keys are b"k<index>"


def _headers(raw: Any) -> Headers:
    return tuple((str(name), bytes(value)) for name, value in (raw or ()))


def create_topic(bootstrap: str, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})], operation_timeout=10)
    futures[topic].result(timeout=30)


def read_committed_values(bootstrap: str, topic: str, partition: int, timeout_s: float = 30.0) -> list[bytes]:
    """Every value of one partition from offset 0 to its end as a read_committed confluent-kafka consumer sees it."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    try:
        while True:
            message = consumer.poll(timeout_s)
            assert message is not None, "the read did not reach the end of the partition"
            if message.error() is not None:
                return values
            value = message.value()
            assert value is not None
            values.append(value)
    finally:
        consumer.close()

# ------------------------------------------------------------------------------------------ confluent-kafka


def produce_confluent(bootstrap: str, topic: str, expected: ExpectedRecords, codec: str,
                      extra: dict[str, Any] | None = None, timeout_s: float = 180.0) -> None:
    from confluent_kafka import Producer

    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec, "linger.ms": 10,
        "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576, "message.timeout.ms": int(timeout_s * 1000), **(extra or {}),
    })
    errors: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            expected.ack(_index_of(msg.key()), msg.partition(), msg.offset())

    for record in expected.records:
        while True:
            try:
                producer.produce(topic, key=record.key, value=record.value, headers=list(record.headers),
                                 timestamp=record.timestamp_ms, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(timeout_s)
    assert remaining == 0, f"{remaining} records still undelivered after {timeout_s}s"
    assert not errors, f"delivery errors: {errors[:5]}"


def consume_confluent(bootstrap: str, topic: str, counts: dict[int, int],
                      timeout_s: float = 180.0) -> list[ConsumedRecord]:
    from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "integration", "enable.auto.commit": False,
        "enable.auto.offset.store": False, "fetch.max.bytes": 52_428_800,
        "max.partition.fetch.bytes": 4_194_304, "fetch.wait.max.ms": 100,
    })
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in counts])
    got: list[ConsumedRecord] = []
    seen = dict.fromkeys(counts, 0)
    deadline = time.monotonic() + timeout_s
    try:
        while any(seen[p] < n for p, n in counts.items()) and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error() is not None:
                    raise AssertionError(f"consumer error: {msg.error()}")
                ts_type, ts = msg.timestamp()
                partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                got.append(ConsumedRecord(partition, offset, msg.key(), msg.value(), _headers(msg.headers()),
                                          ts, 1 if ts_type == TIMESTAMP_LOG_APPEND_TIME else 0))
                seen[partition] += 1
    finally:
        consumer.close()
    assert seen == counts, f"consumed {seen}, wanted {counts} within {timeout_s}s"
    return got


# ------------------------------------------------------------------------------------------ kafka-python


def produce_kafka_python(bootstrap: str, topic: str, expected: ExpectedRecords, codec: str,
                         timeout_s: float = 180.0) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", compression_type=None if codec == "none" else codec,
        linger_ms=10, batch_size=512 * 1024, max_request_size=4 * 1024 * 1024, max_block_ms=120_000,
        request_timeout_ms=60_000,
    )
    try:
        futures = [
            producer.send(topic, key=r.key, value=r.value, headers=list(r.headers), timestamp_ms=r.timestamp_ms)
            for r in expected.records
        ]
        producer.flush(timeout=timeout_s)
        for record, future in zip(expected.records, futures):
            metadata = future.get(timeout=timeout_s)
            expected.ack(record.index, metadata.partition, metadata.offset)
    finally:
        producer.close(timeout=10)


def consume_kafka_python(bootstrap: str, topic: str, counts: dict[int, int],
                         timeout_s: float = 180.0) -> list[ConsumedRecord]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, max_poll_records=20_000,
        fetch_max_bytes=52_428_800, max_partition_fetch_bytes=4_194_304, fetch_max_wait_ms=100,
    )
    partitions = [TopicPartition(topic, p) for p in counts]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    got: list[ConsumedRecord] = []
    seen = dict.fromkeys(counts, 0)
    deadline = time.monotonic() + timeout_s
    try:
        while any(seen[p] < n for p, n in counts.items()) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    got.append(ConsumedRecord(tp.partition, r.offset, r.key, r.value, _headers(r.headers),
                                              r.timestamp, r.timestamp_type))
                seen[tp.partition] += len(records)
    finally:
        consumer.close()
    assert seen == counts, f"consumed {seen}, wanted {counts} within {timeout_s}s"
    return got


# ------------------------------------------------------------------------------------------ aiokafka


async def _produce_aiokafka(bootstrap: str, topic: str, expected: ExpectedRecords, codec: str,
                            timeout_s: float) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", compression_type=None if codec == "none" else codec,
        linger_ms=10, max_batch_size=512 * 1024, max_request_size=4 * 1024 * 1024, request_timeout_ms=60_000,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                timestamp_ms=r.timestamp_ms)
            for r in expected.records
        ]
        results = await asyncio.wait_for(asyncio.gather(*futures), timeout_s)
        for record, metadata in zip(expected.records, results):
            expected.ack(record.index, metadata.partition, metadata.offset)
    finally:
        await producer.stop()


async def _consume_aiokafka(bootstrap: str, topic: str, counts: dict[int, int],
                            timeout_s: float) -> list[ConsumedRecord]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
        fetch_max_bytes=52_428_800, max_partition_fetch_bytes=4_194_304, fetch_max_wait_ms=100,
    )
    await consumer.start()
    got: list[ConsumedRecord] = []
    seen = dict.fromkeys(counts, 0)
    deadline = time.monotonic() + timeout_s
    try:
        partitions = [TopicPartition(topic, p) for p in counts]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        while any(seen[p] < n for p, n in counts.items()) and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500, max_records=20_000)
            for tp, records in batches.items():
                for r in records:
                    got.append(ConsumedRecord(tp.partition, r.offset, r.key, r.value, _headers(r.headers),
                                              r.timestamp, r.timestamp_type))
                seen[tp.partition] += len(records)
    finally:
        await consumer.stop()
    assert seen == counts, f"consumed {seen}, wanted {counts} within {timeout_s}s"
    return got


def produce_aiokafka(bootstrap: str, topic: str, expected: ExpectedRecords, codec: str,
                     timeout_s: float = 180.0) -> None:
    asyncio.run(_produce_aiokafka(bootstrap, topic, expected, codec, timeout_s))


def consume_aiokafka(bootstrap: str, topic: str, counts: dict[int, int],
                     timeout_s: float = 180.0) -> list[ConsumedRecord]:
    return asyncio.run(_consume_aiokafka(bootstrap, topic, counts, timeout_s))


PRODUCERS: dict[str, Callable[[str, str, ExpectedRecords, str], None]] = {
    "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
}
CONSUMERS: dict[str, Callable[[str, str, dict[int, int]], list[ConsumedRecord]]] = {
    "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python,
    "aiokafka": consume_aiokafka,
}


def partition_counts(expected: ExpectedRecords, partitions: int) -> dict[int, int]:
    """Records per partition according to the delivery reports."""
    counts = dict.fromkeys(range(partitions), 0)
    for partition, _offset in expected.acked:
        counts[partition] += 1
    return counts

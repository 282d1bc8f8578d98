"""Test data for the Spark connector tests: topics made and deleted with confluent_kafka.admin, records produced
(plain and transactional) and read back with confluent-kafka, and Spark's Kafka rows turned into the same `Record`
values, so that what a test produced and what Spark read compare as plain Python values.

Works against any Kafka (Apache Kafka or minikafka); every wait has a deadline so a broken broker fails a test
instead of hanging it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Headers = tuple[tuple[str, bytes | None], ...]
DEADLINE_S = 30
# For tests that run many small Spark reads: with the consumer's default fetch.max.wait.ms (500 ms) each Spark task
# spends ~0.5 s waiting at the end of its offset range, on Apache Kafka and minikafka alike (measured: a 100-record
# single-partition read takes 0.6 s, 0.1-0.25 s with 50 ms). Tests without it keep the defaults.
FAST_FETCH = {"kafka.fetch.max.wait.ms": "50"}


@dataclass(frozen=True, order=True)
class Record:
    """One record as the broker stored it; also what a Spark Kafka row is turned into (`spark_records`)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int = 0
    headers: Headers = ()


@dataclass(frozen=True)
class Message:
    """A record to produce; `partition` -1 leaves the choice to the producer, `timestamp_ms` 0 to the client."""

    key: bytes | None
    value: bytes | None
    partition: int = -1
    timestamp_ms: int = 0
    headers: Headers = ()


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, topic: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    """Create `topic` and wait until Metadata shows every partition with a leader."""
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})], operation_timeout=10)
    futures[topic].result(timeout=DEADLINE_S)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        described = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (described is not None and described.error is None and len(described.partitions) == partitions
                and all(p.leader >= 0 for p in described.partitions.values())):
            return
        assert time.monotonic() < deadline, f"topic {topic} has no leaders after {DEADLINE_S}s"
        time.sleep(0.05)


def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete `topic` and wait until Metadata no longer lists it."""
    admin = _admin(bootstrap)
    admin.delete_topics([topic], operation_timeout=10)[topic].result(timeout=DEADLINE_S)
    deadline = time.monotonic() + DEADLINE_S
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"topic {topic} still listed {DEADLINE_S}s after its deletion"
        time.sleep(0.05)


def _record(msg: Any) -> Record:
    headers = tuple((name, None if value is None else bytes(value)) for name, value in (msg.headers() or ()))
    return Record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1], headers)


def _send(producer: Any, topic: str, messages: Iterable[Message], acked: list[Record], errors: list[str]) -> None:
    def on_delivery(sent: Message) -> Any:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:  # librdkafka's delivery report carries no headers: take them from what was sent
                acked.append(Record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                                    msg.timestamp()[1], sent.headers))

        return report

    for message in messages:
        extra: dict[str, Any] = {}
        if message.partition >= 0:
            extra["partition"] = message.partition
        if message.timestamp_ms:
            extra["timestamp"] = message.timestamp_ms
        if message.headers:
            extra["headers"] = list(message.headers)
        producer.produce(topic, key=message.key, value=message.value, on_delivery=on_delivery(message), **extra)
        producer.poll(0)


def produce(bootstrap: str, topic: str, messages: Iterable[Message]) -> list[Record]:
    """Produce `messages` with an idempotent producer (acks=all) and return what was acknowledged, sorted."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    acked: list[Record] = []
    errors: list[str] = []
    _send(producer, topic, messages, acked, errors)
    assert producer.flush(DEADLINE_S) == 0, "records still undelivered"
    assert not errors, f"delivery errors: {errors[:5]}"
    return sorted(acked)


def produce_transactions(bootstrap: str, topic: str, transactions: Sequence[tuple[Sequence[Message], bool]]
                         ) -> list[list[Record]]:
    """Produce each (messages, commit) as one transaction, committed or aborted; the records of each, in order."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_topic("txn"), "linger.ms": 5})
    producer.init_transactions(DEADLINE_S)
    results: list[list[Record]] = []
    for messages, commit in transactions:
        acked: list[Record] = []
        errors: list[str] = []
        producer.begin_transaction()
        _send(producer, topic, messages, acked, errors)
        assert producer.flush(DEADLINE_S) == 0, "records still undelivered"
        assert not errors, f"delivery errors: {errors[:5]}"
        if commit:
            producer.commit_transaction(DEADLINE_S)
        else:
            producer.abort_transaction(DEADLINE_S)
        results.append(sorted(acked))
    return results


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """(log start offset, high watermark) of every partition."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("watermarks")})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(partitions)}
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[Record]:
    """Every record of `topic` (read_committed), read by confluent-kafka up to each partition's end, sorted."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("read-back"),
                         "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: list[Record] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + DEADLINE_S
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"read {len(got)} records of {topic}; no end after {DEADLINE_S}s"
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                error = msg.error()
                partition = int(msg.partition() or 0)
                if error is None:
                    got.append(_record(msg))
                    at_end.discard(partition)
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(partition)
                else:
                    raise AssertionError(f"consumer error: {error}")
        return sorted(got)
    finally:
        consumer.close()


def idempotent_sequences(bootstrap: str, topic: str, partitions: int) -> dict[int, list[int]]:
    """Per partition, the number of records each active idempotent producer has written (last sequence + 1), as
    DescribeProducers reports it; a producer that is not idempotent has no producer id and is not listed."""
    from kafka.protocol.admin.transactions import DescribeProducersRequest

    from tests.wire_client import WireClient

    topic_request = DescribeProducersRequest.TopicRequest
    with WireClient(bootstrap) as client:
        response = client.request(DescribeProducersRequest[0](
            topics=[topic_request(name=topic, partition_indexes=list(range(partitions)))]))
    sequences: dict[int, list[int]] = {}
    for partition in response.topics[0].partitions:
        assert partition.error_code == 0, partition
        sequences[partition.partition_index] = sorted(
            state.last_sequence + 1 for state in partition.active_producers if state.producer_id >= 0)
    return sequences


def spark_records(df: DataFrame) -> list[Record]:
    """The rows of a Kafka source DataFrame (the connector's schema, headers if present) as sorted `Record`s."""
    from pyspark.sql import functions as F

    columns = [F.col("topic"), F.col("partition"), F.col("offset"), F.col("key"), F.col("value"),
               F.unix_millis("timestamp").alias("timestamp_ms")]
    with_headers = "headers" in df.columns
    if with_headers:
        columns.append(F.col("headers"))
    records = []
    for row in df.select(*columns).collect():
        headers: Headers = ()
        if with_headers and row["headers"] is not None:
            headers = tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in row["headers"])
        records.append(Record(row["topic"], row["partition"], row["offset"],
                              None if row["key"] is None else bytes(row["key"]),
                              None if row["value"] is None else bytes(row["value"]),
                              row["timestamp_ms"], headers))
    return sorted(records)


def without_headers(records: Iterable[Record]) -> list[Record]:
    """Records compared on everything but their headers (a source read without `includeHeaders`)."""
    return sorted(Record(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp_ms) for r in records)

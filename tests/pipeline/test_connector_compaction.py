"""Spark's Kafka connector over a compacted topic whose cleaner has removed records, side by side on Apache Kafka and
minikafka (issue 9).

With `failOnDataLoss=true`, a batch read, a read starting at an offset the cleaner removed, and an availableNow
stream whose micro-batch boundaries fall into the gaps all return exactly the latest record of every key
(tombstones included), with their original offsets: the offsets have gaps and the log start offset stays 0, and
the connector reports no data loss.

minikafka is compacted on demand (`POST /admin/compact?wait=true`). Apache Kafka's LogCleaner runs by itself: its
idle back-off (`log.cleaner.backoff.ms`, 15 s by default) is lowered to 200 ms on the session's node for this
module through a dynamic broker config (which restarts the cleaner threads) and restored afterwards.
The executors' consumers use a 50 ms fetch.max.wait.ms here (`FAST_FETCH`).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.pipeline.kafka_data import (
    FAST_FETCH,
    Message,
    Record,
    consume_all,
    create_topic,
    end_offsets,
    produce,
    spark_records,
    unique_topic,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tests.apache_kafka import ApacheKafka
    from tests.broker_process import BrokerProcess

PARTITIONS = 2
KEYS = 20
CLEANER_DEADLINE_S = 60.0
CLEANER_BACKOFF = "log.cleaner.backoff.ms"


@pytest.fixture(scope="module")
def fast_apache_cleaner(apache_kafka: ApacheKafka) -> Iterator[None]:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": apache_kafka.bootstrap})
    broker_ids = list(admin.list_topics(timeout=10).brokers)
    assert len(broker_ids) == 1

    def alter(operation: AlterConfigOpType, value: str | None) -> None:
        entry = ConfigEntry(CLEANER_BACKOFF, value, incremental_operation=operation)
        resource = ConfigResource(ResourceType.BROKER, str(broker_ids[0]), incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)

    alter(AlterConfigOpType.SET, "200")
    try:
        yield
    finally:
        alter(AlterConfigOpType.DELETE, None)


def latest_per_key(records: list[Record]) -> list[Record]:
    latest: dict[tuple[int, bytes | None], Record] = {}
    for record in sorted(records):
        latest[(record.partition, record.key)] = record
    return sorted(latest.values())


def compact_minikafka(broker: BrokerProcess, topic: str) -> None:
    request = urllib.request.Request(f"{broker.admin_url}/admin/compact?topic={topic}&wait=true", data=b"",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=CLEANER_DEADLINE_S) as response:
        result = json.loads(response.read())
    assert result["done"] and {r["status"] for r in result["results"]} == {"cleaned"}, result


def wait_for_apache_cleaner(bootstrap: str, topic: str, expected: list[Record]) -> None:
    deadline = time.monotonic() + CLEANER_DEADLINE_S
    while (left := len(consume_all(bootstrap, topic, PARTITIONS))) != len(expected):
        assert time.monotonic() < deadline, f"{left} records left, not {len(expected)}, {CLEANER_DEADLINE_S}s on"
        time.sleep(0.3)


def kafka_read(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in {**FAST_FETCH, **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def kafka_read_stream(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("failOnDataLoss", "true")
            .option("maxOffsetsPerTrigger", "60").options(**FAST_FETCH).load())


def test_compacted_topic_with_offset_gaps(spark: SparkSession, target: str, target_bootstrap: str,
                                         request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if target == "apache":
        request.getfixturevalue("fast_apache_cleaner")
    topic = unique_topic("compacted")
    create_topic(target_bootstrap, topic, PARTITIONS, {
        "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "1000"})
    base_ms = int(time.time() * 1000) - 60_000
    # Key k lives in partition k % 2 and gets 3..15 versions, so the latest versions are spread over the log; every
    # 4th key's last version is a tombstone. The records' timestamps lie within 1 s, so they share one segment...
    versions = {k: 3 + (k * 7) % 13 for k in range(KEYS)}
    produced = produce(target_bootstrap, topic, [
        Message(b"key-%02d" % k, None if v == versions[k] - 1 and k % 4 == 0 else b"v%02d-%02d" % (v, k),
                partition=k % PARTITIONS, timestamp_ms=base_ms + v * KEYS + k)
        for v in range(max(versions.values())) for k in range(KEYS) if v < versions[k]])
    # ...and one record per partition a minute later rolls it: everything before it becomes cleanable.
    produced += produce(target_bootstrap, topic, [
        Message(b"roll", b"roll", partition=p, timestamp_ms=base_ms + 60_000) for p in range(PARTITIONS)])
    expected = latest_per_key(produced)
    assert len(expected) == KEYS + PARTITIONS

    if target == "apache":
        wait_for_apache_cleaner(target_bootstrap, topic, expected)
    else:
        compact_minikafka(request.getfixturevalue("broker"), topic)

    assert end_offsets(target_bootstrap, topic, PARTITIONS) == {
        p: (0, max(r.offset for r in produced if r.partition == p) + 1) for p in range(PARTITIONS)}
    assert spark_records(kafka_read(spark, target_bootstrap, topic, failOnDataLoss="true")) == expected
    for partition in range(PARTITIONS):
        offsets = [r.offset for r in expected if r.partition == partition]
        assert offsets[0] > 0 and offsets != list(range(offsets[0], offsets[-1] + 1))

    # Starting at offsets the cleaner removed: the read begins at the next record that is left.
    removed = {p: min(r.offset for r in expected if r.partition == p) - 1 for p in range(PARTITIONS)}
    from_gap = kafka_read(spark, target_bootstrap, topic, failOnDataLoss="true",
                          startingOffsets=json.dumps({topic: {str(p): o for p, o in removed.items()}}))
    assert spark_records(from_gap) == expected

    # A stream in micro-batches of 30 offsets per partition: they start and end inside gaps.
    query = (kafka_read_stream(spark, target_bootstrap, topic)
             .writeStream.format("parquet").option("path", str(tmp_path / "data"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    batches = [progress.numInputRows for progress in query.recentProgress]
    assert sum(batches) == len(expected) and len(batches) > 1
    assert spark_records(spark.read.parquet(str(tmp_path / "data"))) == expected


"""Spark's Kafka connector, batch reads, side by side on Apache Kafka and minikafka (issue 9).

One topic per test with known partitions and CreateTime timestamps; every read is compared, record for record
(topic, partition, offset, key, value, timestamp), with what was produced, filtered the way the options say:
`subscribe`, `subscribePattern`, `assign`, `startingOffsets`/`endingOffsets` as earliest/latest and as JSON
(with -2/-1), `startingOffsetsByTimestamp`/`endingOffsetsByTimestamp`, `startingTimestamp`, and `minPartitions`.
The executors' consumers use a 50 ms fetch.max.wait.ms here (`FAST_FETCH`: a dozen reads, otherwise 0.5 s per task);
test_connector_streaming.py and test_connector_topic_recreate.py keep the consumer defaults.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from tests.pipeline.kafka_data import FAST_FETCH, Message, Record, create_topic, produce, spark_records, unique_topic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PARTITIONS = 3
PER_PARTITION = 100
STEP_MS = 10


def kafka_read(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in {**FAST_FETCH, **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_subscribe_assign_and_offsets(spark: SparkSession, target_bootstrap: str) -> None:
    prefix = unique_topic("batch")
    topic, other = f"{prefix}-main", f"{prefix}-other"
    create_topic(target_bootstrap, topic, PARTITIONS)
    create_topic(target_bootstrap, other, 1)
    base_ms = int(time.time() * 1000) - 600_000
    # Record n goes to partition n % 3 with timestamp base + n * 10 ms: timestamps rise within every partition.
    produced = produce(target_bootstrap, topic, [
        Message(b"key-%04d" % n, b"value-%04d" % n, partition=n % PARTITIONS, timestamp_ms=base_ms + n * STEP_MS)
        for n in range(PARTITIONS * PER_PARTITION)])
    produced_other = produce(target_bootstrap, other, [Message(b"o-%d" % n, b"other-%d" % n) for n in range(20)])
    assert len(produced) == PARTITIONS * PER_PARTITION
    assert {r.offset for r in produced} == set(range(PER_PARTITION))

    def read(**options: str) -> list[Record]:
        return spark_records(kafka_read(spark, target_bootstrap, **options))

    everything = kafka_read(spark, target_bootstrap, subscribe=topic)
    assert everything.count() == len(produced)
    assert {row[0] for row in everything.select("timestampType").distinct().collect()} == {0}  # CreateTime
    assert spark_records(everything) == produced
    assert read(subscribe=topic, startingOffsets="earliest", endingOffsets="latest") == produced

    assert read(subscribePattern=f"{prefix}-.*") == sorted(produced + produced_other)
    assert read(assign=json.dumps({topic: [0, 2]})) == [r for r in produced if r.partition in (0, 2)]

    starting = {topic: {"0": 5, "1": -2, "2": 40}}  # -2: earliest
    ending = {topic: {"0": 20, "1": -1, "2": 41}}  # -1: latest
    ranges = {0: (5, 20), 1: (0, PER_PARTITION), 2: (40, 41)}
    assert read(subscribe=topic, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending)) == [
        r for r in produced if ranges[r.partition][0] <= r.offset < ranges[r.partition][1]]

    # By timestamp: the first offset whose timestamp is >= the given one, per partition (ending is exclusive).
    start_ts = {0: base_ms + 30 * STEP_MS, 1: base_ms + 151 * STEP_MS + 5, 2: base_ms}
    end_ts = {0: base_ms + 120 * STEP_MS, 1: base_ms + 280 * STEP_MS, 2: base_ms + 3 * STEP_MS}
    by_timestamp = read(subscribe=topic,
                        startingOffsetsByTimestamp=json.dumps({topic: {str(p): ts for p, ts in start_ts.items()}}),
                        endingOffsetsByTimestamp=json.dumps({topic: {str(p): ts for p, ts in end_ts.items()}}))
    expected = [r for r in produced if start_ts[r.partition] <= r.timestamp_ms < end_ts[r.partition]]
    assert by_timestamp == expected
    assert {r.partition for r in expected} == set(range(PARTITIONS)) and len(expected) < len(produced) // 2
    middle_ms = base_ms + 150 * STEP_MS
    assert read(subscribe=topic, startingTimestamp=str(middle_ms)) == [
        r for r in produced if r.timestamp_ms >= middle_ms]

    # minPartitions splits the offset ranges into at least that many Spark partitions; the rows stay the same.
    split = kafka_read(spark, target_bootstrap, assign=json.dumps({topic: [1]}), minPartitions="4")
    assert split.rdd.getNumPartitions() == 4
    assert spark_records(split) == [r for r in produced if r.partition == 1]

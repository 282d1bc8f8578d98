"""Spark's Kafka connector on record contents, side by side on Apache Kafka and minikafka (issue 9).

- `includeHeaders=true`: the `headers` column is array<struct<key:string,value:binary>> and holds, per record, the
  headers that were produced (order, repeated names, null values and no headers at all included).
- `kafka.isolation.level`: over committed and aborted transactions (and plain records), read_committed returns
  exactly the plain and committed records and read_uncommitted the aborted ones too; transaction markers leave
  offset gaps that the connector skips without reporting data loss.
The executors' consumers use a 50 ms fetch.max.wait.ms here (`FAST_FETCH`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.pipeline.kafka_data import (
    FAST_FETCH,
    Headers,
    Message,
    create_topic,
    produce,
    produce_transactions,
    spark_records,
    unique_topic,
    without_headers,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def kafka_read(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in {**FAST_FETCH, **options}.items():
        reader = reader.option(key, value)
    return reader.load()


HEADER_SETS: list[Headers] = [
    (),
    (("trace-id", b"abc-123"),),
    (("a", b"1"), ("b", b"\x00\xff binary"), ("a", b"2")),  # a repeated name keeps both, in order
    (("empty", b""), ("null", None)),
    (("schl\u00fcssel", "wert \u2713".encode()),),
]


def test_include_headers(spark: SparkSession, target_bootstrap: str) -> None:
    from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

    topic = unique_topic("headers")
    create_topic(target_bootstrap, topic, 2)
    produced = produce(target_bootstrap, topic, [
        Message(b"k%d" % n, b"v%d" % n, partition=n % 2, headers=HEADER_SETS[n % len(HEADER_SETS)])
        for n in range(60)])
    assert {r.headers for r in produced} == set(HEADER_SETS)

    with_headers = kafka_read(spark, target_bootstrap, topic, includeHeaders="true")
    header_type = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
    assert with_headers.schema["headers"].dataType == header_type
    assert spark_records(with_headers) == produced

    plain = kafka_read(spark, target_bootstrap, topic)
    assert "headers" not in plain.columns
    assert spark_records(plain) == without_headers(produced)


def test_isolation_level_over_transactions(spark: SparkSession, target_bootstrap: str) -> None:
    topic = unique_topic("txn")
    create_topic(target_bootstrap, topic, 2)

    def batch(name: str, count: int) -> list[Message]:
        return [Message(b"%s-%d" % (name.encode(), n), b"%s value %d" % (name.encode(), n), partition=n % 2)
                for n in range(count)]

    plain = produce(target_bootstrap, topic, batch("plain", 10))
    committed_1, aborted_1, committed_2, aborted_2 = produce_transactions(target_bootstrap, topic, [
        (batch("committed-1", 30), True), (batch("aborted-1", 20), False),
        (batch("committed-2", 30), True), (batch("aborted-2", 6), False)])
    after = produce(target_bootstrap, topic, batch("after", 4))  # readable past the last abort marker

    committed = sorted(plain + committed_1 + committed_2 + after)
    everything = sorted(committed + aborted_1 + aborted_2)
    read_committed = spark_records(kafka_read(spark, target_bootstrap, topic, failOnDataLoss="true",
                                              **{"kafka.isolation.level": "read_committed"}))
    assert read_committed == committed
    read_uncommitted = spark_records(kafka_read(spark, target_bootstrap, topic, failOnDataLoss="true",
                                                **{"kafka.isolation.level": "read_uncommitted"}))
    assert read_uncommitted == everything
    assert spark_records(kafka_read(spark, target_bootstrap, topic)) == everything  # read_uncommitted by default

    for partition in (0, 1):
        offsets = [r.offset for r in everything if r.partition == partition]
        assert offsets != list(range(offsets[0], offsets[-1] + 1))  # the 4 markers take offsets too
        assert len(offsets) + 4 == offsets[-1] + 1

    # A range that ends right after the last abort marker: aborted records and the marker are all it has at its end.
    ends = {p: min(r.offset for r in after if r.partition == p) for p in (0, 1)}
    up_to_marker = spark_records(kafka_read(spark, target_bootstrap, topic, failOnDataLoss="true",
                                            endingOffsets=json.dumps({topic: {str(p): o for p, o in ends.items()}}),
                                            **{"kafka.isolation.level": "read_committed"}))
    assert up_to_marker == [r for r in committed if r.offset < ends[r.partition]]

    # An explicit range ending inside the aborted transaction's records: read_committed returns nothing from it.
    aborted_offsets = {p: [r.offset for r in aborted_1 if r.partition == p] for p in (0, 1)}
    ranges = {p: (min(aborted_offsets[p]) - 3, max(aborted_offsets[p])) for p in (0, 1)}
    inside = spark_records(kafka_read(
        spark, target_bootstrap, topic, **{"kafka.isolation.level": "read_committed"},
        startingOffsets=json.dumps({topic: {str(p): start for p, (start, _) in ranges.items()}}),
        endingOffsets=json.dumps({topic: {str(p): end for p, (_, end) in ranges.items()}})))
    assert inside == [r for r in committed if ranges[r.partition][0] <= r.offset < ranges[r.partition][1]]

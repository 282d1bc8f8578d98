"""Spark's Kafka connector as a writer, side by side on Apache Kafka and minikafka (issue 9).

The connector's producer is kafka-clients' default, idempotent one (InitProducerId, sequence numbers). What it
writes is read back with confluent-kafka and must be exactly what the DataFrame held: every row once (offsets
0..n-1 per partition, no duplicates), keys, values, headers and explicit partitions kept; DescribeProducers shows
that idempotent producers wrote them (their sequence numbers add up to each partition's record count).
- `df.write.format("kafka")`, batch, with `topic`/`partition`/`headers` columns.
- `writeStream.format("kafka")` from a Kafka source with a checkpoint (availableNow), run twice: the second run
  writes exactly the records produced to the source since the first (the source's consumers use `FAST_FETCH`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from tests.pipeline.kafka_data import (
    FAST_FETCH,
    Message,
    Record,
    consume_all,
    create_topic,
    idempotent_sequences,
    produce,
    unique_topic,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def assert_written_once(bootstrap: str, topic: str, records: list[Record], partitions: int) -> None:
    """Offsets 0..n-1 in every partition (no record written twice, no gap), all of them written by idempotent
    producers: their sequence numbers (DescribeProducers) add up to the partition's record count."""
    per_partition = Counter(r.partition for r in records)
    for partition, count in per_partition.items():
        assert [r.offset for r in records if r.partition == partition] == list(range(count))
    sequences = idempotent_sequences(bootstrap, topic, partitions)
    assert {p: sum(s) for p, s in sequences.items()} == {p: per_partition[p] for p in range(partitions)}
    assert all(sequences[p] for p in per_partition)


def test_batch_write(spark: SparkSession, target_bootstrap: str) -> None:
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

    topics = [unique_topic("write-a"), unique_topic("write-b")]
    for topic in topics:
        create_topic(target_bootstrap, topic, 3)
    rows = [(topics[n % 2], n % 3, b"key-%d" % n, b"value-%d" % n if n % 7 else None,
             [("n", b"%d" % n), ("parity", b"odd" if n % 2 else b"even")] if n % 5 else None)
            for n in range(500)]
    schema = StructType([
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("key", BinaryType()), StructField("value", BinaryType()),
        StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                     StructField("value", BinaryType())])))])
    spark.createDataFrame(rows, schema).repartition(4).write.format("kafka") \
        .option("kafka.bootstrap.servers", target_bootstrap).save()

    for topic in topics:
        written = consume_all(target_bootstrap, topic, 3)
        assert_written_once(target_bootstrap, topic, written, 3)
        # Spark's tasks write in no particular order across partitions of the DataFrame: compare as multisets.
        expected = Counter((p, k, v, tuple(h or ())) for t, p, k, v, h in rows if t == topic)
        assert Counter((r.partition, r.key, r.value, r.headers) for r in written) == expected


def test_streaming_write(spark: SparkSession, target_bootstrap: str, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    source, sink = unique_topic("source"), unique_topic("sink")
    create_topic(target_bootstrap, source, 2)
    create_topic(target_bootstrap, sink, 2)

    def run() -> None:
        stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", target_bootstrap)
                  .option("subscribe", source).option("startingOffsets", "earliest").options(**FAST_FETCH).load()
                  .select(F.col("key"), F.upper(F.col("value").cast("string")).alias("value"),
                          F.col("partition")))
        query = (stream.writeStream.format("kafka").option("kafka.bootstrap.servers", target_bootstrap)
                 .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None

    def expected(records: list[Record]) -> Counter[tuple[int, bytes | None, bytes | None]]:
        return Counter((r.partition, r.key, None if r.value is None else r.value.upper()) for r in records)

    first = produce(target_bootstrap, source, [Message(b"k%d" % n, b"first %d" % n, partition=n % 2)
                                               for n in range(300)])
    run()
    written = consume_all(target_bootstrap, sink, 2)
    assert_written_once(target_bootstrap, sink, written, 2)
    assert Counter((r.partition, r.key, r.value) for r in written) == expected(first)

    second = produce(target_bootstrap, source, [Message(b"k%d" % n, b"second %d" % n, partition=n % 2)
                                                for n in range(100)])
    run()
    written = consume_all(target_bootstrap, sink, 2)
    assert_written_once(target_bootstrap, sink, written, 2)
    assert Counter((r.partition, r.key, r.value) for r in written) == expected(first + second)
    # Within a partition the sink keeps the source's order.
    for partition in (0, 1):
        assert [r.key for r in written if r.partition == partition] == [
            r.key for r in first + second if r.partition == partition]

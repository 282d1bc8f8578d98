"""Spark's Kafka connector, Structured Streaming with a checkpoint, side by side on Apache Kafka and minikafka
(issue 9).

- `trigger(availableNow=True)` with `maxOffsetsPerTrigger`: the micro-batches have the sizes the rate limit gives
  for what was produced; a restart from the checkpoint reads exactly the records produced since (no duplicates,
  none missed), and a query started at `startingOffsets=latest` reads only what came after it started.
- A processing-time trigger with `minPartitions`: records produced while the query runs all arrive, once, and the
  first micro-batch is split into `minPartitions` Spark partitions.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.pipeline.kafka_data import DEADLINE_S, Message, Record, create_topic, produce, spark_records, unique_topic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery


def kafka_stream(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> DataFrame:
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def run_available_now(source: DataFrame, sink: Path) -> list[int]:
    """Run the query until it has read everything available, into Parquet under `sink` with its checkpoint;
    return the number of input rows of each micro-batch."""
    query = (source.writeStream.format("parquet").option("path", str(sink / "data"))
             .option("checkpointLocation", str(sink / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return [progress.numInputRows for progress in query.recentProgress]


def sink_records(spark: SparkSession, sink: Path) -> list[Record]:
    return spark_records(spark.read.parquet(str(sink / "data")))


def rate_limited(per_partition: list[int], limit: int) -> list[int]:
    """Micro-batch sizes under `maxOffsetsPerTrigger=limit` for equally full partitions (the limit is shared out
    in proportion to what each partition has left)."""
    assert len(set(per_partition)) == 1 and limit % len(per_partition) == 0
    return [min(limit, sum(per_partition) - done) for done in range(0, sum(per_partition), limit)]


def test_stream_available_now_restart_rate_limit_and_latest(
        spark: SparkSession, target_bootstrap: str, tmp_path: Path) -> None:
    topic = unique_topic("stream")
    create_topic(target_bootstrap, topic, 2)
    first = produce(target_bootstrap, topic, [Message(b"k%d" % n, b"first-%d" % n, partition=n % 2)
                                              for n in range(200)])
    limit = 60

    batches = run_available_now(
        kafka_stream(spark, target_bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger=str(limit)),
        tmp_path / "all")
    assert batches == rate_limited([100, 100], limit)
    assert sink_records(spark, tmp_path / "all") == first
    # A query that starts at `latest` sees none of what is already there.
    assert sum(run_available_now(kafka_stream(spark, target_bootstrap, topic, startingOffsets="latest"),
                                 tmp_path / "latest")) == 0

    second = produce(target_bootstrap, topic, [Message(b"k%d" % n, b"second-%d" % n, partition=n % 2)
                                               for n in range(50)])
    # Restarted from its checkpoint, each query reads exactly the new records, in as few batches as the limit allows.
    assert run_available_now(
        kafka_stream(spark, target_bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger=str(limit)),
        tmp_path / "all") == [len(second)]
    assert sink_records(spark, tmp_path / "all") == sorted(first + second)
    assert run_available_now(kafka_stream(spark, target_bootstrap, topic, startingOffsets="latest"),
                             tmp_path / "latest") == [len(second)]
    assert sink_records(spark, tmp_path / "latest") == second


def wait_for_rows(query: StreamingQuery, rows: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while (read := sum(progress.numInputRows for progress in query.recentProgress)) < rows:
        assert query.exception() is None, query.exception()
        assert time.monotonic() < deadline, f"the query read {read} rows, not {rows}, in {DEADLINE_S}s"
        time.sleep(0.1)


def test_stream_processing_time_min_partitions(spark: SparkSession, target_bootstrap: str, tmp_path: Path) -> None:
    topic = unique_topic("trigger")
    create_topic(target_bootstrap, topic, 1)
    before = produce(target_bootstrap, topic, [Message(b"k%d" % n, b"before-%d" % n) for n in range(120)])
    spark_partitions: list[int] = []
    collected: list[Record] = []

    def on_batch(batch: DataFrame, _batch_id: int) -> None:
        spark_partitions.append(batch.rdd.getNumPartitions())
        collected.extend(spark_records(batch))

    min_partitions = 3
    query = (kafka_stream(spark, target_bootstrap, topic, startingOffsets="earliest",
                          minPartitions=str(min_partitions))
             .writeStream.foreachBatch(on_batch).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        wait_for_rows(query, len(before))
        during = produce(target_bootstrap, topic, [Message(b"k%d" % n, b"during-%d" % n) for n in range(80)])
        wait_for_rows(query, len(before) + len(during))
    finally:
        query.stop()
    assert sorted(collected) == sorted(before + during)
    assert len(collected) == len(set(collected))
    assert spark_partitions[0] == min_partitions  # one Kafka partition split three ways

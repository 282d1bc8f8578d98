"""Spark's Kafka connector when a topic is deleted and recreated under a running streaming query, side by side on
Apache Kafka and minikafka (issue 9).

A processing-time query has read the topic (50 records per partition) into a checkpointed Parquet sink; the topic
is deleted with the AdminClient, recreated with the same partitions and given fewer records (5 per partition).
What Apache Kafka makes Spark do, minikafka must too:
- the running query fails with the connector's data-loss error, "Partition <topic>-<p> offset was changed from 50
  to <n>" (n is 0 to 5: the query may look before the new records arrive);
- run again from the checkpoint, it fails the same way, now deterministically from 50 to 5;
- nothing of the recreated topic reaches the sink.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.pipeline.kafka_data import (
    DEADLINE_S,
    Message,
    Record,
    create_topic,
    delete_topic,
    produce,
    spark_records,
    unique_topic,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import DataStreamWriter

PARTITIONS = 2
BEFORE = 50
AFTER = 5
DATA_LOSS = "Some data may have been lost because they are not available in Kafka any more"


def kafka_stream(spark: SparkSession, bootstrap: str, topic: str, attempts: int) -> DataFrame:
    """`attempts`: how often the driver lists offsets before it gives up, 300 ms apart (fetchOffset.numRetries), both
    while the topic is missing and when the offsets it finds went backwards (it waits for them to recover)."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("failOnDataLoss", "true")
            .option("fetchOffset.numRetries", str(attempts)).option("fetchOffset.retryIntervalMs", "300").load())


def to_sink(stream: DataFrame, sink: Path) -> DataStreamWriter:
    return (stream.writeStream.format("parquet").option("path", str(sink / "data"))
            .option("checkpointLocation", str(sink / "checkpoint")))


def offset_change(error: BaseException, topic: str) -> tuple[str, int, int]:
    """(exception class, from offset, to offset) of the connector's "offset was changed" data-loss failure."""
    message = str(error)
    assert DATA_LOSS in message, message
    found = re.search(rf"Partition {re.escape(topic)}-\d+ offset was changed from (\d+) to (\d+)", message)
    assert found is not None, message
    return type(error).__name__, int(found[1]), int(found[2])


def messages(name: bytes, count: int) -> list[Message]:
    return [Message(b"%s-%d" % (name, n), b"%s value %d" % (name, n), partition=n % PARTITIONS) for n in range(count)]


def test_topic_deleted_and_recreated_under_a_running_query(
        spark: SparkSession, target_bootstrap: str, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    topic = unique_topic("recreated")
    sink = tmp_path / "sink"
    create_topic(target_bootstrap, topic, PARTITIONS)
    before = produce(target_bootstrap, topic, messages(b"before", BEFORE * PARTITIONS))

    def sink_records() -> list[Record]:
        return spark_records(spark.read.parquet(str(sink / "data")))

    # 3 s of attempts bridge the time the topic is gone, even on a busy machine.
    stream = to_sink(kafka_stream(spark, target_bootstrap, topic, attempts=10), sink)
    query = stream.trigger(processingTime="200 milliseconds").start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while sum(progress.numInputRows for progress in query.recentProgress) < len(before):
            assert query.exception() is None and time.monotonic() < deadline, query.exception()
            time.sleep(0.1)
        delete_topic(target_bootstrap, topic)
        create_topic(target_bootstrap, topic, PARTITIONS)
        produce(target_bootstrap, topic, messages(b"recreated", AFTER * PARTITIONS))
        with pytest.raises(StreamingQueryException) as running_failure:
            query.awaitTermination(DEADLINE_S)
            raise AssertionError(f"the query kept running {DEADLINE_S}s after the topic was recreated")
    finally:
        query.stop()
    kind, from_offset, to_offset = offset_change(running_failure.value, topic)
    assert (kind, from_offset) == ("StreamingQueryException", BEFORE) and 0 <= to_offset <= AFTER
    assert sink_records() == before

    # Run again from the checkpoint, one attempt: the offsets went backwards, there is nothing to wait for.
    again = to_sink(kafka_stream(spark, target_bootstrap, topic, attempts=1), sink)
    restarted = again.trigger(availableNow=True).start()
    with pytest.raises(StreamingQueryException) as restart_failure:
        restarted.awaitTermination()
    assert offset_change(restart_failure.value, topic) == ("StreamingQueryException", BEFORE, AFTER)
    assert sink_records() == before

"""`minikafka snapshot`: keep a Delta Lake table equal to a topic's current state (one row per live key).

The job is a Structured Streaming query over the topic (Spark's Kafka source, `trigger(availableNow=True)`, or a
processing-time trigger with `continuous`) whose checkpoint records the offsets already applied. Each micro-batch
keeps the latest record per key and MERGEs it into the table: a newer offset of the same partition replaces the
row, a tombstone deletes it, and a key with no row gets one unless its latest record is a tombstone. So the first
run reads the whole topic and every later run reads only what is new. Replaying a micro-batch after a crash (Spark
does, from its checkpoint) is harmless: the MERGE only lets a higher offset win.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.pipeline.kafka_source import RECORD_COLUMNS, kafka_source_options
from minikafka.pipeline.session import build_spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("minikafka.pipeline.snapshot")

TABLE_SCHEMA_DDL = (
    "key BINARY, value BINARY, partition INT, offset BIGINT, timestamp TIMESTAMP, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
CHECKPOINT_DIR_NAME = "_minikafka_checkpoint"  # Delta ignores `_`-prefixed folders, VACUUM included


@dataclass
class BatchProgress:
    """What one micro-batch read and did to the table."""

    batch_id: int
    rows_read: int
    rows_inserted: int
    rows_updated: int
    rows_deleted: int
    #: per partition, the next offset after the last record this batch read
    offsets_reached: dict[int, int]

    def line(self) -> str:
        return json.dumps({"event": "batch", **self.__dict__})


@dataclass
class SnapshotResult:
    """Totals of one `run_snapshot` call (all its micro-batches)."""

    table_path: str
    checkpoint_path: str
    batches: list[BatchProgress] = field(default_factory=list)

    @property
    def rows_read(self) -> int:
        return sum(b.rows_read for b in self.batches)

    @property
    def offsets_reached(self) -> dict[int, int]:
        reached: dict[int, int] = {}
        for batch in self.batches:
            for partition, offset in batch.offsets_reached.items():
                reached[partition] = max(offset, reached.get(partition, 0))
        return reached


def _quoted_path(path: str) -> str:
    return "`" + path.replace("`", "``") + "`"


def ensure_table(spark: SparkSession, table_path: str) -> None:
    """Create the (empty) Delta table if it does not exist, so the first MERGE and readers find the schema."""
    spark.sql(f"CREATE TABLE IF NOT EXISTS delta.{_quoted_path(table_path)} ({TABLE_SCHEMA_DDL}) USING DELTA")


def latest_per_key(batch: DataFrame) -> DataFrame:
    """One row per key: its highest offset; a key found in several partitions (a custom partitioner) keeps the
    record with the newest timestamp. Records without a key cannot be keyed rows and are dropped."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keyed = batch.where(F.col("key").isNotNull())
    by_partition = Window.partitionBy("key", "partition").orderBy(F.col("offset").desc())
    by_key = Window.partitionBy("key").orderBy(F.col("timestamp").desc(), F.col("partition").desc())
    latest_in_partition = keyed.withColumn("_rank", F.row_number().over(by_partition)).where("_rank = 1")
    return latest_in_partition.withColumn("_rank", F.row_number().over(by_key)).where("_rank = 1").drop("_rank")


def merge_batch(table_path: str, batch: DataFrame, batch_id: int) -> BatchProgress:
    """Apply one micro-batch to the table (see the module docstring for the rule) and say what it did."""
    from pyspark.sql import functions as F

    # foreachBatch hands over a DataFrame of a cloned session: its temp views live there, not in the caller's.
    spark = batch.sparkSession
    batch = batch.select(*RECORD_COLUMNS).persist()
    try:
        per_partition = batch.groupBy("partition").agg(F.count("*").alias("rows"), F.max("offset").alias("last"))
        partitions = per_partition.collect()
        reached = {int(r["partition"]): int(r["last"]) + 1 for r in partitions}
        rows_read = sum(int(r["rows"]) for r in partitions)
        view = f"minikafka_snapshot_batch_{batch_id}"
        latest = latest_per_key(batch)
        latest.createOrReplaceTempView(view)
        try:
            stats = spark.sql(f"""
                MERGE INTO delta.{_quoted_path(table_path)} AS t
                USING {view} AS s
                ON t.key = s.key
                WHEN MATCHED AND s.value IS NULL AND (s.partition <> t.partition OR s.offset > t.offset) THEN DELETE
                WHEN MATCHED AND (s.partition <> t.partition OR s.offset > t.offset) THEN UPDATE SET *
                WHEN NOT MATCHED AND s.value IS NOT NULL THEN INSERT *
            """).collect()[0].asDict()
        finally:
            spark.catalog.dropTempView(view)
    finally:
        batch.unpersist()
    return BatchProgress(
        batch_id=batch_id, rows_read=rows_read,
        rows_inserted=int(stats.get("num_inserted_rows", 0)), rows_updated=int(stats.get("num_updated_rows", 0)),
        rows_deleted=int(stats.get("num_deleted_rows", 0)), offsets_reached=reached,
    )


def run_snapshot(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    table_path: str | Path,
    *,
    checkpoint_path: str | Path | None = None,
    continuous: bool = False,
    trigger_interval: str = "10 seconds",
    kafka_options: Mapping[str, str] | None = None,
    on_batch: Callable[[BatchProgress], None] | None = None,
) -> SnapshotResult:
    """Bring the Delta table at `table_path` up to date with `topic` and return what was read.

    Without `continuous` this processes everything available now and returns; with it, it runs until the query is
    stopped (Ctrl-C / SIGTERM) with a `trigger_interval` processing-time trigger. The checkpoint defaults to
    `<table_path>/_minikafka_checkpoint`. `on_batch` sees every micro-batch's progress as it commits.
    """
    table = str(Path(table_path).absolute()) if "://" not in str(table_path) else str(table_path)
    checkpoint = str(checkpoint_path) if checkpoint_path is not None else f"{table.rstrip('/')}/{CHECKPOINT_DIR_NAME}"
    result = SnapshotResult(table, checkpoint)
    ensure_table(spark, table)

    def apply(batch: DataFrame, batch_id: int) -> None:
        progress = merge_batch(table, batch, batch_id)
        result.batches.append(progress)
        if on_batch is not None:
            on_batch(progress)

    source = spark.readStream.format("kafka").options(**kafka_source_options(
        bootstrap_servers, topic, kafka_options=kafka_options)).load()
    writer = source.writeStream.foreachBatch(apply).option("checkpointLocation", checkpoint)
    writer = writer.trigger(processingTime=trigger_interval) if continuous else writer.trigger(availableNow=True)
    query = writer.queryName(f"minikafka-snapshot-{topic}").start()
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        log.info("stopping the snapshot query of %s", topic)
    finally:
        query.stop()
    return result


def snapshot(
    bootstrap_servers: str,
    topic: str,
    table_path: str | Path,
    *,
    checkpoint_path: str | Path | None = None,
    master: str | None = None,
    continuous: bool = False,
    trigger_interval: str = "10 seconds",
    kafka_options: Mapping[str, str] | None = None,
    spark: SparkSession | None = None,
    spark_conf: Mapping[str, str] | None = None,
    on_batch: Callable[[BatchProgress], None] | None = None,
) -> SnapshotResult:
    """`run_snapshot` with a session of its own (`build_spark_session(master, conf=spark_conf)`) unless one is given."""
    session = spark if spark is not None else build_spark_session(
        master, app_name=f"minikafka-snapshot-{topic}", conf=spark_conf)
    return run_snapshot(
        session, bootstrap_servers, topic, table_path, checkpoint_path=checkpoint_path, continuous=continuous,
        trigger_interval=trigger_interval, kafka_options=kafka_options, on_batch=on_batch,
    )


def print_progress(progress: BatchProgress, stream: Any = None) -> None:
    """The CLI's progress output: one JSON line per micro-batch."""
    print(progress.line(), file=stream or sys.stdout, flush=True)

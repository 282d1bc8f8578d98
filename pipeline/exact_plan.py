"""Exact compaction's plan, computed on Spark: `minikafka compact TOPIC --exact`.

For each partition the job reads the records in [start, end) — from the log start offset to the end the broker can
clean (its `GET /admin/cleaner-state`) — groups them by key and keeps the highest offset of each key: the
*retained-offset plan*. Spark's shuffle spills to disk, so any key count works, and no two keys are ever confused
(the broker's offset map compares key hashes). The plan is written in the broker's format
(minikafka.cleaner.retained_offset_plan) to a temporary file, streamed to `POST /admin/compact?exact=true`, and
applied by one cleaner round.

Records are read committed: an aborted record must never count as the latest of its key (the cleaner drops it
anyway). Records without a key and control batches are not in the plan; the cleaner applies its usual rules to them.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.broker.admin_client import AdminCredentials, with_credentials
from minikafka.cleaner.retained_offset_plan import RetainedOffsetPlanWriter
from minikafka.pipeline.audit import fetch_cleaner_state
from minikafka.pipeline.kafka_source import kafka_source_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The plan reaches the driver as sorted chunks of at most this many offsets (one offset range each): the driver
# holds a chunk at a time, never the whole plan, and no Python code runs on the executors.
CHUNK_OFFSETS = 65_536


@dataclass(frozen=True)
class PartitionRange:
    partition: int
    start_offset: int
    end_offset: int


@dataclass
class PartitionPlan:
    """One partition's plan, written to `path`."""

    partition: int
    start_offset: int
    end_offset: int
    retained: int
    path: Path


def cleanable_ranges(state: Mapping[str, Any], partitions: list[int] | None) -> list[PartitionRange]:
    """[log start, end) per partition, where end is the largest end the broker accepts for a plan submitted now
    (`exact_end_offset_limit`: the broker rolls the active segment first; `min.compaction.lag.ms` and open
    transactions hold it back). It only grows, so it is still acceptable when the plan arrives."""
    ranges = []
    for entry in state["partitions"]:
        if partitions is not None and entry["partition"] not in partitions:
            continue
        start = int(entry["log_start_offset"])
        end = entry["exact_end_offset_limit"]
        ranges.append(PartitionRange(int(entry["partition"]), start, start if end is None else max(start, int(end))))
    return ranges


def retained_offsets(
    spark: SparkSession, bootstrap_servers: str, topic: str, ranges: list[PartitionRange],
    kafka_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Rows (partition, chunk, offsets): the offsets of the latest record of every key in each range, sorted, in
    chunks of the offset space of CHUNK_OFFSETS each; the rows themselves sorted by (partition, chunk)."""
    from pyspark.sql import functions as F

    options = kafka_source_options(bootstrap_servers, topic, kafka_options=kafka_options)
    for key in ("subscribe", "includeHeaders"):
        options.pop(key)
    options["assign"] = json.dumps({topic: [r.partition for r in ranges]})
    options["startingOffsets"] = json.dumps({topic: {str(r.partition): r.start_offset for r in ranges}})
    options["endingOffsets"] = json.dumps({topic: {str(r.partition): r.end_offset for r in ranges}})
    latest = (spark.read.format("kafka").options(**options).load()
              .where(F.col("key").isNotNull())
              .groupBy("partition", "key").agg(F.max("offset").alias("offset")))
    return (latest.groupBy("partition", F.floor(F.col("offset") / CHUNK_OFFSETS).alias("chunk"))
            .agg(F.sort_array(F.collect_list("offset")).alias("offsets"))
            .orderBy("partition", "chunk"))


def write_plans(
    spark: SparkSession, bootstrap_servers: str, topic: str, topic_id: uuid.UUID, ranges: list[PartitionRange],
    directory: Path, kafka_options: Mapping[str, str] | None = None,
) -> list[PartitionPlan]:
    """Compute the plans of `ranges` on Spark and write one plan file per partition under `directory`."""
    plans: dict[int, PartitionPlan] = {}
    writers: dict[int, tuple[RetainedOffsetPlanWriter, Any]] = {}
    by_partition = {r.partition: r for r in ranges}

    def writer_for(partition: int) -> RetainedOffsetPlanWriter:
        if partition not in writers:
            r = by_partition[partition]
            path = directory / f"{topic}-{partition}.plan"
            file = open(path, "wb")  # noqa: SIM115 - closed below, after the last run of the partition
            writers[partition] = (RetainedOffsetPlanWriter(file, topic_id.bytes, partition, r.start_offset,
                                                           r.end_offset), file)
            plans[partition] = PartitionPlan(partition, r.start_offset, r.end_offset, 0, path)
        return writers[partition][0]

    try:
        if any(r.end_offset > r.start_offset for r in ranges):
            plan = retained_offsets(spark, bootstrap_servers, topic,
                                    [r for r in ranges if r.end_offset > r.start_offset], kafka_options)
            for row in plan.toLocalIterator(prefetchPartitions=True):
                partition, offsets = int(row["partition"]), row["offsets"]
                writer_for(partition).add_many(offsets)
                plans[partition].retained += len(offsets)
        for r in ranges:
            writer_for(r.partition)  # an empty range (or no keyed record) is still a plan: it drops nothing
        for writer, _file in writers.values():
            writer.finish()
    finally:
        for _writer, file in writers.values():
            file.close()
    return [plans[r.partition] for r in ranges]


def submit_plan(admin_url: str, topic: str, plan: PartitionPlan, *, wait: bool, timeout_s: float,
                credentials: AdminCredentials | None = None) -> dict[str, Any]:
    """Stream one plan file to the broker; its JSON reply (ValueError with the broker's message when refused)."""
    query = {"topic": topic, "partition": str(plan.partition), "exact": "true"}
    if wait:
        query.update(wait="true", timeout_ms=str(int(timeout_s * 1000)))
    url = f"{admin_url.rstrip('/')}/admin/compact?{urllib.parse.urlencode(query)}"
    with open(plan.path, "rb") as body:
        request = urllib.request.Request(url, data=body, method="POST", headers=with_credentials({
            "Content-Type": "application/octet-stream", "Content-Length": str(plan.path.stat().st_size)}, credentials))
        try:
            with urllib.request.urlopen(request, timeout=timeout_s + 60) as response:
                reply: dict[str, Any] = json.loads(response.read())
                return reply
        except urllib.error.HTTPError as error:
            message = error.read().decode(errors="replace")
            try:
                message = json.loads(message).get("error", message)
            except ValueError:
                pass
            raise ValueError(f"the broker refused the plan of {topic}-{plan.partition}: {message}") from error


def compact_exact(
    spark: SparkSession, bootstrap_servers: str, topic: str, admin_url: str, *,
    partitions: list[int] | None = None, wait: bool = True, timeout_s: float = 3600.0,
    kafka_options: Mapping[str, str] | None = None, credentials: AdminCredentials | None = None,
) -> list[dict[str, Any]]:
    """Plan on Spark and apply on the broker, partition by partition; the broker's replies. `credentials` for a
    broker with security configured (its `/admin/*` wants HTTP Basic)."""
    state = fetch_cleaner_state(admin_url, topic, credentials=credentials)
    if state is None:
        raise ValueError(f"no minikafka admin endpoint at {admin_url} (exact compaction needs a minikafka broker)")
    if "compact" not in str(state["config"]["cleanup.policy"]).split(","):
        raise ValueError(f"topic {topic} does not have cleanup.policy compact")
    ranges = cleanable_ranges(state, partitions)
    if partitions is not None and {r.partition for r in ranges} != set(partitions):
        raise ValueError(f"topic {topic} has no partition {sorted(set(partitions) - {r.partition for r in ranges})}")
    with tempfile.TemporaryDirectory(prefix="minikafka-plan-") as directory:
        plans = write_plans(spark, bootstrap_servers, topic, uuid.UUID(state["topic_id_uuid"]), ranges, Path(directory),
                            kafka_options)
        return [submit_plan(admin_url, topic, plan, wait=wait, timeout_s=timeout_s, credentials=credentials)
                for plan in plans]

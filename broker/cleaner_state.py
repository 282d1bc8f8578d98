"""`GET /admin/cleaner-state?topic=T`: what the LogCleaner has done to a topic, for `minikafka audit`.

Per partition: the cleaner checkpoint (below it every key has at most one record), log start/end offsets and the
cleaning totals; per topic: the compaction configs and the cleaner's backoff, so an auditor can compute deadlines
(a superseded value is gone within `max.compaction.lag.ms` plus one backoff, DESIGN.md "Beyond Kafka").

For exact compaction (issue 10) also the topic id a plan must carry (`topic_id` as Kafka prints it, `topic_id_hex`
= the 16 raw bytes in hex, `topic_id_uuid` the dashed form) and per partition where a plan's range may end:
`first_uncleanable_offset` as the cleaner computes it now (rounded down to a segment base, `LogToClean`) and
`exact_end_offset_limit`, the largest end an exact round accepts if the plan is submitted now (the broker rolls
the active segment first; not rounded to a segment base).
Reads only: every call takes fresh snapshots; safe from any thread.
"""

from __future__ import annotations

from typing import Any

from minikafka.cleaner.cleaner_manager import UncleanablePartition
from minikafka.cleaner.exact_round import exact_end_limit
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.cleaner.log_to_clean import LogToClean, cleanable_offsets
from minikafka.protocol.errors import UnknownTopicOrPartitionError
from minikafka.storage.log_manager import LogManager, uuid_to_base64
from minikafka.storage.unified_log import UnifiedLog


def _first_uncleanable_offsets(log: UnifiedLog, checkpoint_offset: int | None, now_ms: int
                               ) -> tuple[int | None, int | None]:
    """(first uncleanable offset as the cleaner rounds it, the exact round's end limit); Nones if a segment went
    away under us (the next call is consistent again)."""
    try:
        segments = log.segments()
        offsets = cleanable_offsets(
            segments, log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
            checkpoint_offset=checkpoint_offset, last_stable_offset=log.last_stable_offset,
            min_compaction_lag_ms=log.config.min_compaction_lag_ms, now_ms=now_ms)
        first_uncleanable = LogToClean.of(
            segments, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset).first_uncleanable_offset
        return first_uncleanable, exact_end_limit(log, checkpoint_offset, now_ms, roll_active=True)
    except Exception:
        return None, None


def cleaner_state(
    log_manager: LogManager, log_cleaner: LogCleaner, topic: str, now_ms: int, *, roll_check_interval_ms: int
) -> dict[str, Any]:
    """The JSON body of the endpoint; raises UnknownTopicOrPartitionError for a topic this broker does not have."""
    meta = log_manager.topic(topic)
    if meta is None:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist")
    config = log_manager.log_config(topic)
    checkpoints = log_cleaner.cleaner_checkpoints()
    marks = log_cleaner.manager.uncleanable_partitions()
    partitions = []
    for partition in range(meta.num_partitions):
        log = log_manager.get_log(topic, partition)
        if log is None:
            continue
        record = log_cleaner.cleaning_record(log)
        first_uncleanable, exact_end = _first_uncleanable_offsets(log, checkpoints.get((topic, partition)), now_ms)
        partitions.append({
            "partition": partition,
            "log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset,
            "last_stable_offset": log.last_stable_offset,
            "cleaner_checkpoint_offset": checkpoints.get((topic, partition)),
            "first_uncleanable_offset": first_uncleanable,
            "exact_end_offset_limit": exact_end,
            "last_clean_time_ms": record.last_clean_ms,
            "records_removed": record.records_removed,
            "tombstones_pending": record.tombstones_pending,
            "tombstone_horizon_ms": record.tombstone_horizon_ms,
            "cleaning_failure": _cleaning_failure(marks.get((topic, partition)), log),
        })
    return {
        "topic": topic,
        "topic_id": uuid_to_base64(meta.topic_id),
        "topic_id_hex": meta.topic_id.hex,
        "topic_id_uuid": str(meta.topic_id),
        "now_ms": now_ms,
        "cleaner_enabled": log_cleaner.config.enable,
        "cleaner_backoff_ms": log_cleaner.config.backoff_ms,
        # segments roll for max.compaction.lag.ms on this period, so it adds to the deadline
        "roll_check_interval_ms": roll_check_interval_ms,
        "config": {
            "cleanup.policy": ",".join(config.cleanup_policy),
            "delete.retention.ms": config.delete_retention_ms,
            "min.compaction.lag.ms": config.min_compaction_lag_ms,
            "max.compaction.lag.ms": config.max_compaction_lag_ms,
            "segment.ms": config.segment_ms,
        },
        "partitions": partitions,
    }


def _cleaning_failure(mark: UncleanablePartition | None, log: UnifiedLog) -> dict[str, object] | None:
    """The partition's last failed rounds: None when its last round succeeded; `uncleanable` once retries are
    exhausted (cleaning waits for a manual compaction, a recreation or a restart)."""
    if mark is None or mark.log_identity != id(log):
        return None
    return {"reason": mark.reason, "failed_rounds": mark.failures, "retry_at_ms": mark.retry_at_ms,
            "uncleanable": mark.permanent}

"""`GET /admin/cleaner-state?topic=T`: what the LogCleaner has done to a topic, for `minikafka audit`.

Per partition: the cleaner checkpoint (below it every key has at most one record), log start/end offsets and the
cleaning totals; per topic: the compaction configs and the cleaner's backoff, so an auditor can compute deadlines
(a superseded value is gone within `max.compaction.lag.ms` plus one backoff, DESIGN.md "Beyond Kafka").
Reads only: every call takes fresh snapshots; safe from any thread.
"""

from __future__ import annotations

from typing import Any

from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import UnknownTopicOrPartitionError
from minikafka.storage.log_manager import LogManager


def cleaner_state(
    log_manager: LogManager, log_cleaner: LogCleaner, topic: str, now_ms: int, *, roll_check_interval_ms: int
) -> dict[str, Any]:
    """The JSON body of the endpoint; raises UnknownTopicOrPartitionError for a topic this broker does not have."""
    meta = log_manager.topic(topic)
    if meta is None:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist")
    config = log_manager.log_config(topic)
    checkpoints = log_cleaner.cleaner_checkpoints()
    partitions = []
    for partition in range(meta.num_partitions):
        log = log_manager.get_log(topic, partition)
        if log is None:
            continue
        record = log_cleaner.cleaning_record(log)
        partitions.append({
            "partition": partition,
            "log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset,
            "last_stable_offset": log.last_stable_offset,
            "cleaner_checkpoint_offset": checkpoints.get((topic, partition)),
            "last_clean_time_ms": record.last_clean_ms,
            "records_removed": record.records_removed,
            "tombstones_pending": record.tombstones_pending,
            "tombstone_horizon_ms": record.tombstone_horizon_ms,
        })
    return {
        "topic": topic,
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

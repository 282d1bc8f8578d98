"""What the cleaner reports: Kafka's LogCleaner / LogCleanerManager gauges (spec §3.1), the per-partition status
the metrics and the console show, and the running totals each partition's rounds add to.

Thread-safety: the dataclasses are plain values (a `PartitionCleaningRecord` is changed only under the
`LogCleaner`'s lock, and handed out as a copy); the functions read the cleaner's state as the scrape or console
request runs, from any thread, without a lock of their own (single attribute reads, as Kafka's gauges).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from minikafka.cleaner.log_to_clean import LogToClean, cleanable_offsets, max_compaction_delay_ms

if TYPE_CHECKING:
    from minikafka.cleaner.log_cleaner import LogCleaner


@dataclass(slots=True)
class PartitionCleaningRecord:
    """Running totals of one partition's cleaning (the per-partition metrics)."""

    last_clean_ms: int | None = None
    records_removed: int = 0
    bytes_removed: int = 0
    #: tombstones kept by the last round because their delete horizon had not passed
    tombstones_pending: int = 0
    #: earliest delete horizon among those tombstones (None if none): a horizon round is due from then
    tombstone_horizon_ms: int | None = None
    log_identity: int = 0


@dataclass(frozen=True, slots=True)
class PartitionCleaningStatus:
    """One compacted partition as the per-partition gauges show it (computed on demand)."""

    topic: str
    partition: int
    dirty_ratio: float
    dirty_bytes: int
    compaction_delay_ms: int
    max_compaction_lag_ms: int
    record: PartitionCleaningRecord


@dataclass(frozen=True, slots=True)
class CleanerMetrics:
    """Kafka's LogCleaner / LogCleanerManager gauges with the formulas of spec §3.1 (truncated ints)."""

    max_buffer_utilization_percent: int
    cleaner_recopy_percent: int
    max_clean_time_secs: int
    max_compaction_delay_secs: int
    dead_thread_count: int
    max_dirty_percent: int
    time_since_last_run_ms: int
    uncleanable_partitions_count: int
    uncleanable_bytes: int
    cleaner_io_bytes: int


def cleaner_metrics(cleaner: LogCleaner, statuses: list[PartitionCleaningStatus] | None = None) -> CleanerMetrics:
    """Broker-wide gauges; `statuses` (from `partition_statuses`) supplies uncleanable bytes."""
    stats = [w.last_stats for w in cleaner.workers]
    read = sum(s.bytes_read for s in stats)
    written = sum(s.bytes_written for s in stats)
    marks = {tp for tp, m in cleaner.manager.uncleanable_partitions().items() if m.permanent}
    if statuses is None:
        statuses = partition_statuses(cleaner)
    return CleanerMetrics(
        max_buffer_utilization_percent=int(100 * max((s.buffer_utilization for s in stats), default=0.0)),
        cleaner_recopy_percent=int(100 * written / max(read, 1)),
        max_clean_time_secs=int(max((max(s.elapsed_secs, 0.0) for s in stats), default=0.0)),
        max_compaction_delay_secs=int(
            max((w.last_pre_clean_stats.max_compaction_delay_ms for w in cleaner.workers), default=0) / 1000),
        dead_thread_count=cleaner.dead_thread_count,
        max_dirty_percent=int(100 * cleaner.manager.max_dirty_ratio),
        time_since_last_run_ms=cleaner.clock.time_ms() - cleaner.manager.time_of_last_run_ms,
        uncleanable_partitions_count=len(marks),
        uncleanable_bytes=sum(s.dirty_bytes for s in statuses if (s.topic, s.partition) in marks),
        cleaner_io_bytes=cleaner.throttler.total_bytes,
    )


def partition_statuses(cleaner: LogCleaner) -> list[PartitionCleaningStatus]:
    """Dirty ratio, dirty bytes and KIP-354 delay of every compacted partition, computed now."""
    now_ms = cleaner.clock.time_ms()
    checkpoints = cleaner.manager.read_checkpoints()
    statuses = []
    for log in cleaner.log_manager.all_logs():
        config = log.config
        if not config.compact:
            continue
        segments = log.segments()
        if not segments:
            continue
        tp = (log.topic, log.partition)
        try:
            offsets = cleanable_offsets(
                segments, log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
                checkpoint_offset=checkpoints.get(tp), last_stable_offset=log.last_stable_offset,
                min_compaction_lag_ms=config.min_compaction_lag_ms, now_ms=now_ms)
            to_clean = LogToClean.of(segments, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)
            delay_ms = max_compaction_delay_ms(
                segments, [s.rolling_based_timestamp for s in segments],
                first_dirty_offset=offsets.first_dirty_offset,
                max_compaction_lag_ms=config.max_compaction_lag_ms, now_ms=now_ms)
        except Exception:  # a segment deleted under us; the next scrape is consistent again
            continue
        statuses.append(PartitionCleaningStatus(
            log.topic, log.partition, to_clean.cleanable_ratio, to_clean.cleanable_bytes, delay_ms,
            config.max_compaction_lag_ms, cleaner.cleaning_record(log)))
    return statuses

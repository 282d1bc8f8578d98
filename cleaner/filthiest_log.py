"""Choosing the partition to clean next (Kafka's LogCleanerManager.grabFilthiestCompactedLog, spec §2.2).

A pure function over partition descriptors: the cleaner thread builds one `PartitionView` per hosted
partition (under the log's lock), calls `grab_filthiest_compacted_log`, persists the checkpoint corrections it
returns, marks the chosen partition in progress, and publishes `max_dirty_ratio` / `PreCleanStats` as metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from minikafka.cleaner.log_to_clean import LogToClean, SegmentInfo, cleanable_offsets, max_compaction_delay_ms


class CompactionSegment(SegmentInfo, Protocol):
    """A segment as the filthiest-log choice sees it; storage.log_segment.LogSegment satisfies this."""

    @property
    def rolling_based_timestamp(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A snapshot of one partition's cleaning-relevant state (taken under its log lock)."""

    topic_partition: tuple[str, int]
    segments: Sequence[CompactionSegment]  # oldest first, active segment last
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    checkpoint_offset: int | None  # the cleaner-offset-checkpoint entry, None if absent
    compact: bool  # "compact" in cleanup.policy
    min_cleanable_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    #: in progress, aborted or paused (any cleaning state) -- skipped
    cleaning_in_progress: bool = False
    uncleanable: bool = False


@dataclass(frozen=True, slots=True)
class CleanCandidate:
    view: PartitionView
    log_to_clean: LogToClean
    compaction_delay_ms: int

    @property
    def need_compaction_now(self) -> bool:
        return self.compaction_delay_ms > 0


@dataclass(frozen=True, slots=True)
class PreCleanStats:
    """Kafka's PreCleanStats: kept by the thread only when a partition was chosen."""

    max_compaction_delay_ms: int = 0
    delayed_partitions: int = 0
    cleanable_partitions: int = 0


@dataclass(frozen=True, slots=True)
class GrabResult:
    chosen: CleanCandidate | None
    #: max cleanable ratio over candidates with bytes, before the threshold (max-dirty-percent); 0 if none
    max_dirty_ratio: float
    pre_clean_stats: PreCleanStats
    #: checkpoints found out of range, to persist now even if the partition is not chosen (§2.2 step 4)
    checkpoint_updates: Mapping[tuple[str, int], int] = field(default_factory=dict)
    #: partitions whose range could not be computed; the caller marks them uncleanable
    failures: Mapping[tuple[str, int], Exception] = field(default_factory=dict)

    @property
    def max_dirty_percent(self) -> int:
        return int(100 * self.max_dirty_ratio)


def grab_filthiest_compacted_log(partitions: Iterable[PartitionView], now_ms: int) -> GrabResult:
    """The eligible partition with the highest dirty ratio (first one wins a tie), or None."""
    checkpoint_updates: dict[tuple[str, int], int] = {}
    failures: dict[tuple[str, int], Exception] = {}
    candidates: list[CleanCandidate] = []
    max_delay_ms = 0
    delayed = 0
    for view in partitions:
        if not view.compact or view.cleaning_in_progress or view.uncleanable or not view.segments:
            continue
        try:
            offsets = cleanable_offsets(
                view.segments, log_start_offset=view.log_start_offset, log_end_offset=view.log_end_offset,
                checkpoint_offset=view.checkpoint_offset, last_stable_offset=view.last_stable_offset,
                min_compaction_lag_ms=view.min_compaction_lag_ms, now_ms=now_ms)
            if offsets.force_update_checkpoint:
                checkpoint_updates[view.topic_partition] = offsets.first_dirty_offset
            delay_ms = max_compaction_delay_ms(
                view.segments, [s.rolling_based_timestamp for s in view.segments],
                first_dirty_offset=offsets.first_dirty_offset, max_compaction_lag_ms=view.max_compaction_lag_ms,
                now_ms=now_ms)
            log_to_clean = LogToClean.of(
                view.segments, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)
        except Exception as exc:  # a broken partition must not stop the others from being cleaned
            failures[view.topic_partition] = exc
            continue
        max_delay_ms = max(max_delay_ms, delay_ms)
        if delay_ms > 0:
            delayed += 1
        if log_to_clean.total_bytes > 0:
            candidates.append(CleanCandidate(view, log_to_clean, delay_ms))

    max_dirty_ratio = max((c.log_to_clean.cleanable_ratio for c in candidates), default=0.0)
    eligible = [
        c for c in candidates
        if (c.need_compaction_now and c.log_to_clean.cleanable_bytes > 0)
        or c.log_to_clean.cleanable_ratio > c.view.min_cleanable_ratio
    ]
    chosen = None
    for candidate in eligible:
        if chosen is None or candidate.log_to_clean.cleanable_ratio > chosen.log_to_clean.cleanable_ratio:
            chosen = candidate
    stats = PreCleanStats(max_delay_ms, delayed, len(eligible)) if chosen is not None else PreCleanStats()
    return GrabResult(chosen, max_dirty_ratio, stats, checkpoint_updates, failures)

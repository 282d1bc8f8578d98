"""The cleanable range of one partition and its byte accounting (spec §2.2, §2.3).

Pure functions of a partition's segment list (oldest first, the active segment last) and offsets. Kafka
splits this between `LogCleanerManager.cleanableOffsets`, `maxCompactionDelay` and `LogToClean`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar


class SegmentInfo(Protocol):
    """What range and ratio computations need from a segment (storage.log_segment.LogSegment has it)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...

    @property
    def largest_timestamp(self) -> int: ...


_Segment = TypeVar("_Segment", bound=SegmentInfo)


@dataclass(frozen=True, slots=True)
class CleanableOffsets:
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    #: the stored checkpoint was out of range: the caller must persist `first_dirty_offset` now (§2.2 step 4)
    force_update_checkpoint: bool


def segments_overlapping(segments: Sequence[_Segment], from_offset: int, to_offset: int) -> list[_Segment]:
    """Kafka's `logSegments(from, to)`: the segment containing `from_offset` and those after it below `to`."""
    result: list[_Segment] = []
    for i, segment in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if segment.base_offset >= to_offset:
            break
        if next_base is not None and next_base <= from_offset:
            continue
        result.append(segment)
    return result


def cleanable_offsets(
    segments: Sequence[SegmentInfo],
    *,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint_offset: int | None,
    last_stable_offset: int,
    min_compaction_lag_ms: int,
    now_ms: int,
) -> CleanableOffsets:
    """First dirty offset and first uncleanable dirty offset (not yet rounded to a segment base)."""
    force_update = False
    if checkpoint_offset is None:
        first_dirty = log_start_offset
    elif checkpoint_offset < log_start_offset or checkpoint_offset > log_end_offset:
        first_dirty, force_update = log_start_offset, True
    else:
        first_dirty = checkpoint_offset
    active = segments[-1]
    bound = min(last_stable_offset, active.base_offset)
    if min_compaction_lag_ms > 0:
        for segment in segments_overlapping(segments[:-1], first_dirty, active.base_offset):
            if segment.largest_timestamp > now_ms - min_compaction_lag_ms:
                bound = min(bound, segment.base_offset)
                break
    return CleanableOffsets(first_dirty, max(first_dirty, bound), force_update)


@dataclass(frozen=True, slots=True)
class _RolledActiveSegment:
    """The empty active segment a roll would start at the log end offset (SegmentInfo)."""

    base_offset: int
    size_bytes: int = 0
    largest_timestamp: int = -1


def exact_round_end_limit(
    segments: Sequence[SegmentInfo],
    *,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint_offset: int | None,
    last_stable_offset: int,
    min_compaction_lag_ms: int,
    now_ms: int,
    roll_active: bool,
) -> int:
    """The largest end offset an exact round's plan may have (issue 10): the first uncleanable offset of
    `cleanable_offsets` (the LSO, the active segment, `min.compaction.lag.ms`), NOT rounded down to a segment base
    (an exact round keeps the records of that segment from the plan's end on as they are). With `roll_active` the
    non-empty active segment counts as rolled, as the exact round rolls it before checking again."""
    if roll_active and segments and segments[-1].base_offset < log_end_offset:
        segments = [*segments, _RolledActiveSegment(log_end_offset)]
    return cleanable_offsets(
        segments, log_start_offset=log_start_offset, log_end_offset=log_end_offset, checkpoint_offset=checkpoint_offset,
        last_stable_offset=last_stable_offset, min_compaction_lag_ms=min_compaction_lag_ms,
        now_ms=now_ms).first_uncleanable_dirty_offset


@dataclass(frozen=True, slots=True)
class LogToClean:
    """One candidate partition's cleanable range, rounded to segment bases, and its dirty ratio (§2.2)."""

    first_dirty_offset: int
    #: base offset of the segment containing the uncleanable offset (or of the active segment)
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @classmethod
    def of(cls, segments: Sequence[SegmentInfo], first_dirty_offset: int, uncleanable_offset: int) -> LogToClean:
        first_uncleanable = segments[-1].base_offset
        for i in range(len(segments) - 1):  # the non-active segment containing the offset, if any
            if segments[i].base_offset <= uncleanable_offset < segments[i + 1].base_offset:
                first_uncleanable = segments[i].base_offset
                break
        clean_bytes = sum(s.size_bytes for s in segments if s.base_offset < first_dirty_offset)
        cleanable = segments_overlapping(
            segments, min(first_dirty_offset, first_uncleanable), first_uncleanable)
        return cls(first_dirty_offset, first_uncleanable, clean_bytes, sum(s.size_bytes for s in cleanable))


def max_compaction_delay_ms(
    segments: Sequence[SegmentInfo],
    first_batch_timestamps: Sequence[int | None],
    *,
    first_dirty_offset: int,
    max_compaction_lag_ms: int,
    now_ms: int,
) -> int:
    """KIP-354 delay: how far past `max.compaction.lag.ms` the oldest dirty closed segment is (0 if not due).

    `first_batch_timestamps[i]` is segment i's first-batch max timestamp (LogSegment.rolling_based_timestamp).
    """
    clean_until_ms = now_ms - max(max_compaction_lag_ms, 0)
    earliest = None
    for i in range(len(segments) - 1):
        next_base = segments[i + 1].base_offset
        timestamp = first_batch_timestamps[i]
        if next_base <= first_dirty_offset or timestamp is None or timestamp <= 0:
            continue
        earliest = timestamp if earliest is None else min(earliest, timestamp)
    if earliest is not None and earliest < clean_until_ms:
        return clean_until_ms - earliest
    return 0

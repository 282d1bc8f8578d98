"""Segment-level pieces of a partition's log, shared by `UnifiedLog` and the cleaner (Kafka's LocalLog).

What lives here works on a list of segments and a directory, not on a log's offsets or producer state: turning a
disk error into KAFKA_STORAGE_ERROR (`storage_errors`, Kafka's LocalLog.maybeHandleIOException), reading whole
batches across segments (`read_segments`), collecting aborted transactions, the crash-safe swap of cleaned
segments (`replace_segments`), unlinking deleted segment files, and the rules for when the active segment rolls
(`roll_reason`) and how many old segments retention lets go (`deletable_segment_count`).

Thread-safety: these are functions without state of their own. The caller (`UnifiedLog`) holds its lock around
everything that reads or changes its segment list; `delete_segment_files` runs without it.
"""

from __future__ import annotations

import bisect
import errno
import logging
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn

from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.checkpoint import fsync_dir
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    MAX_RELATIVE_OFFSET,
    SWAP_SUFFIX,
    LogSegment,
    SegmentInconsistentError,
)
from minikafka.storage.transaction_index import AbortedTransaction

if TYPE_CHECKING:
    from minikafka.storage.unified_log import UnifiedLog

logger = logging.getLogger(__name__)

#: The disk itself failed (a bad block, a read-only remount): the log dir goes offline, as Kafka's does. Other
#: OSErrors (a full disk, whose write was undone; a file closed by a concurrent topic deletion) fail only the
#: request, so the partition keeps serving reads and takes writes again once space is back.
DISK_FAILURE_ERRNOS = frozenset({errno.EIO, errno.EROFS, errno.ENXIO, errno.ENODEV})


class storage_errors:  # lower case: used as `with storage_errors(...)`, as the function it replaced
    """Turn a disk OSError into KAFKA_STORAGE_ERROR at the storage boundary (DESIGN decision 8); a failed disk
    (DISK_FAILURE_ERRNOS) or a write that could not be undone (SegmentInconsistentError) also takes the log dir
    offline. A class rather than a generator-based context manager: every append and read enters one, and the
    generator's set-up cost a microsecond each time. Holds only its arguments; one per `with`."""

    __slots__ = ("_log", "_topic_partition")

    def __init__(self, topic_partition: str, log: UnifiedLog | None = None) -> None:
        self._topic_partition = topic_partition
        self._log = log

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not isinstance(exc, OSError):
            return
        topic_partition, log = self._topic_partition, self._log
        if log is not None and (isinstance(exc, SegmentInconsistentError) or exc.errno in DISK_FAILURE_ERRNOS):
            log.log_dir_failed(f"I/O error on {topic_partition}: {exc}")
        else:
            logger.error("I/O error on %s: %s", topic_partition, exc)
        raise KafkaStorageError(f"Error while accessing the log of {topic_partition}: {exc}") from exc


def collect_aborted_transactions(
    segments: Sequence[LogSegment], start_offset: int, upper_bound_offset: int
) -> list[AbortedTransaction]:
    """Aborted transactions overlapping `[start_offset, upper_bound_offset)` in these segments (oldest first),
    from the one holding `start_offset` on until a segment's index says no later one can hold more."""
    index = max(0, bisect.bisect_right([s.base_offset for s in segments], start_offset) - 1)
    found: list[AbortedTransaction] = []
    for segment in segments[index:]:
        aborted, complete = segment.collect_aborted_transactions(start_offset, upper_bound_offset)
        found.extend(aborted)
        if complete:
            break
    return found


def parse_topic_partition(dir: Path) -> tuple[str, int]:
    """(topic, partition) from a `<topic>-<partition>` directory name (Kafka's LocalLog.parseTopicPartitionName)."""
    topic, _, partition = Path(dir).name.rpartition("-")
    return topic, int(partition)



def read_segments(segments: Sequence[LogSegment], start_offset: int, limit_offset: int, max_bytes: int,
                  min_one_message: bool) -> tuple[bytes | memoryview, int]:
    """Whole batches from `start_offset` below `limit_offset`, across segments (Kafka's LocalLog.read), and the
    last offset of the last of them (-1 when none); the caller has checked that `start_offset` is in range."""
    chunks: list[bytes | memoryview] = []
    last_offset = -1
    remaining = max_bytes
    index = max(0, bisect.bisect_right([s.base_offset for s in segments], start_offset) - 1)
    offset = start_offset
    for segment in segments[index:]:
        if offset >= limit_offset or (chunks and remaining <= 0):
            break
        max_position = None
        if limit_offset < segment.next_offset:
            found = segment.translate_offset(limit_offset)
            max_position = found[0] if found is not None else None
        data, data_last_offset = segment.read_with_last_offset(offset, remaining, max_position,
                                                               min_one_message and not chunks)
        read_to_offset = offset
        if data:
            chunks.append(data)
            remaining -= len(data)
            last_offset = data_last_offset
            read_to_offset = data_last_offset + 1
        # A segment not read to its end ends the response, also when not even its next batch fitted
        # (data empty): appending a later segment's batches would leave a hole of offsets that clients
        # skip, as their position moves past every batch they receive. (A non-empty segment's next
        # offset is its last batch's last offset + 1; one emptied by cleaning has nothing to read.)
        if not segment.is_empty and read_to_offset < min(segment.next_offset, limit_offset):
            break
        offset = max(offset, segment.next_offset)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), last_offset  # one segment's read: no copy


def replace_segments(segments: list[LogSegment], dir: Path, topic_partition: str, new_segments: list[LogSegment],
                     old_segments: list[LogSegment]) -> list[LogSegment]:
    """Crash-safe swap of cleaned segments into `segments` (spec §2.8; Kafka's LocalLog.replaceSegments):
    `.cleaned` -> `.swap`, old -> `.deleted`, `.swap` -> live. Old segments already gone are skipped; returns the
    old segments taken out of `segments` (renamed to `.deleted`, still open), none when all were gone already
    (the cleaned output is then deleted). The caller holds the log's lock."""
    present = [s for s in sorted(old_segments, key=lambda s: s.base_offset) if any(s is live for live in segments)]
    if not present:
        for segment in new_segments:
            segment.close()
            segment.delete()
        return []
    ordered = sorted(new_segments, key=lambda s: s.base_offset)
    try:
        for segment in reversed(ordered):
            if segment.suffix == CLEANED_SUFFIX:
                segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        fsync_dir(dir)
    except OSError:  # nothing live was touched: drop the cleaned output
        for segment in ordered:
            segment.close()
            segment.delete()
        raise
    # From here a crash is completed by the loader (the .swap files are whole); a failure is undone.
    renamed: list[tuple[LogSegment, str]] = []
    try:
        for segment in present:
            renamed.append((segment, segment.suffix))
            segment.change_file_suffixes(segment.suffix, DELETED_SUFFIX)
        for segment in ordered:
            if segment.suffix == SWAP_SUFFIX:
                renamed.append((segment, SWAP_SUFFIX))
                segment.change_file_suffixes(SWAP_SUFFIX, "")
        fsync_dir(dir)
    except OSError as exc:
        _undo_swap(dir, topic_partition, renamed, ordered, exc)
    for segment in present:
        segments.remove(segment)
    for segment in ordered:
        bases = [s.base_offset for s in segments]
        segments.insert(bisect.bisect_left(bases, segment.base_offset), segment)
    return present


def _undo_swap(dir: Path, topic_partition: str, renamed: list[tuple[LogSegment, str]],
               new_segments: list[LogSegment], error: OSError) -> NoReturn:
    """Put back a swap that failed half-way (newest renames first: a cleaned segment takes the name its first
    source had), delete the cleaned segments and re-raise; if the undo fails too, the files no longer match
    memory (SegmentInconsistentError: the log dir goes offline and the loader completes the swap)."""
    try:
        for segment, suffix in reversed(renamed):
            segment.rename_files_to(suffix)
        for segment in new_segments:
            segment.close()
            segment.delete()
        fsync_dir(dir)
    except OSError as undo_error:
        raise SegmentInconsistentError(f"swap of cleaned segments into {topic_partition} failed ({error}) "
                                       f"and could not be undone: {undo_error}") from undo_error
    raise error


def delete_segment_files(segments: Sequence[LogSegment]) -> None:
    """Unlink the files of segments already out of the log (Kafka's LocalLog.deleteSegmentFiles); a failure is
    logged, and the next startup removes leftover `.deleted` files."""
    for segment in segments:
        try:
            segment.delete()
        except OSError as exc:
            logger.warning("Could not delete %s: %s", segment.log.path, exc)


def roll_reason(segment: LogSegment, config: LogConfig, size_bytes: int, max_timestamp: int, last_offset: int,
                now_ms: int) -> str | None:
    """Why the active `segment` must roll before an append of `size_bytes` ending at `last_offset` (Kafka's
    LogSegment.shouldRoll), or None when it need not."""
    segment_size_bytes = segment.size_bytes  # asked once: this runs before every append
    if segment_size_bytes > config.segment_bytes - size_bytes:
        return "segment.bytes"
    if segment_size_bytes and _time_waited_ms(segment, max_timestamp, now_ms) > \
            config.max_segment_ms - segment.rolling_jitter_ms:
        return "segment.ms"
    if segment.index_full():
        return "index full"
    if not 0 <= last_offset - segment.base_offset <= MAX_RELATIVE_OFFSET:  # can_convert_to_relative_offset
        return "relative offset overflow"
    return None


def _time_waited_ms(segment: LogSegment, max_timestamp: int, now_ms: int) -> int:
    """Kafka's timeWaitedForRoll: record timestamps from the first batch's; without one (-1) the wall
    clock since the segment was created (spec §2.11, S39)."""
    first = segment.rolling_based_timestamp
    if first is not None and first >= 0:
        return max_timestamp - first
    return now_ms - segment.created_ms


def deletable_segment_count(segments: Sequence[LogSegment], log_start_offset: int, config: LogConfig,
                            now_ms: int) -> int:
    """How many of the oldest segments may go (never the active one): those wholly below the log start offset
    always, and for `delete` topics those past retention.ms or beyond retention.bytes (Kafka's
    deleteLogStartOffsetBreachedSegments, deleteRetentionMsBreachedSegments, deleteRetentionSizeBreachedSegments)."""
    candidates = segments[:-1]
    deletable = 0
    for i in range(len(candidates)):
        if segments[i + 1].base_offset <= log_start_offset:
            deletable = i + 1
    if config.delete:
        if config.retention_ms >= 0:
            for i, segment in enumerate(candidates):
                if now_ms - segment.largest_timestamp <= config.retention_ms:
                    break
                deletable = max(deletable, i + 1)
        if config.retention_bytes >= 0:
            excess = sum(s.size_bytes for s in segments) - config.retention_bytes
            for i, segment in enumerate(candidates):
                if excess - segment.size_bytes < 0:
                    break
                excess -= segment.size_bytes
                deletable = max(deletable, i + 1)
    return deletable

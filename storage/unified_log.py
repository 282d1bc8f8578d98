"""One partition's log: ordered segments, offsets, producer state, rolling, retention and the cleaner swap.

The segment-level work (reads across segments, the crash-safe swap, unlinking files, disk-error handling) is in
`local_log`, as Kafka splits UnifiedLog from LocalLog; this module owns the offsets and the locking around it.

Single node: the high watermark is the log end offset, advanced on every append. The last stable offset is the
first offset of the oldest open transaction, else the high watermark; COMMIT/ABORT markers are written by
`append_transaction_marker` (the transaction coordinator's WriteTxnMarkers path) and aborts are indexed in the
active segment's `.txnindex` for read_committed fetches (Kafka's UnifiedLog.append / collectAbortedTransactions).
"""

from __future__ import annotations

import logging
import shutil
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from minikafka.protocol.errors import KafkaStorageError, OffsetOutOfRangeError
from minikafka.protocol.records import (
    RecordBatch,
    TimestampType,
    build_control_batch,
    set_base_offset,
    set_max_timestamp_and_type,
    set_partition_leader_epoch,
)
from minikafka.protocol.records.batch_header import MAGIC_OFFSET
from minikafka.storage import local_log
from minikafka.storage.checkpoint import fsync_dir
from minikafka.storage.clock import Clock, SystemClock
from minikafka.storage.file_records import fill_ahead_bytes_for
from minikafka.storage.free_space import FreeSpaceGuard
from minikafka.storage.local_log import (
    collect_aborted_transactions,
    deletable_segment_count,
    delete_segment_files,
    parse_topic_partition,
    read_segments,
    roll_reason,
    storage_errors,
)
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_loader import LogLoader
from minikafka.storage.log_segment import DELETED_SUFFIX, LogSegment, SegmentInconsistentError
from minikafka.storage.log_validator import LogValidator
from minikafka.storage.producer_state import ProducerStateEntry, ProducerStateManager
from minikafka.storage.transaction_index import AbortedTransaction

logger = logging.getLogger(__name__)
#: a batch header's base offset, batch length and partition leader epoch: the bytes before the magic, not CRC-covered
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


@dataclass
class LogAppendInfo:
    """Result of an append: the assigned offsets, or the original ones for a duplicate batch."""

    first_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_count: int
    duplicate: bool = False


@dataclass
class FetchDataInfo:
    #: whole batches; a memoryview when the read ended inside a batch (the bytes read once from the file)
    records: bytes | memoryview
    high_watermark: int
    log_start_offset: int
    #: aborted transactions overlapping the returned records (read_committed reads only)
    aborted_transactions: list[AbortedTransaction] | None = None


class UnifiedLog:
    """Owns one `<topic>-<partition>` directory: its segments, offsets, producer state and recovery point.

    Thread-safe: an internal RLock guards appends, reads, rolls, segment-list changes and offsets, so the event
    loop (appends, reads, offsets), the housekeeping threads of `asyncio.to_thread` (flush, retention, rolls) and
    the cleaner threads may call in concurrently. The lock is held for memory work and page-cache writes only:
    fsyncs (`flush`, `flush_rolled_segments`), the validation of appended batches (decompression, recompression),
    unlinks of deleted segments and the cleaner's reads run without it.
    """

    def __init__(
        self,
        dir: Path,
        config: LogConfig,
        *,
        clock: Clock | None = None,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        clean_shutdown: bool = False,
        topic: str | None = None,
        partition: int | None = None,
        on_log_dir_failure: Callable[[str], None] | None = None,
        space_guard: FreeSpaceGuard | None = None,
    ) -> None:
        self.dir = Path(dir)
        #: called with the reason when the disk failed (LogManager.mark_log_dir_offline)
        self.on_log_dir_failure = on_log_dir_failure
        #: the log dir's free-space floor for client appends (None: no floor)
        self.space_guard = space_guard
        if topic is None or partition is None:
            topic, partition = parse_topic_partition(self.dir)
        self.topic, self.partition = topic, partition
        self._topic_partition = f"{topic}-{partition}"
        self.config = config
        #: the LogValidator of `config`: rebuilt by the first append after `config` is replaced (update_config)
        self._validator = LogValidator(self._topic_partition, config)
        self.clock: Clock = clock or SystemClock()
        self._lock = threading.RLock()
        self.dir.mkdir(parents=True, exist_ok=True)
        loaded = LogLoader(self.dir, config, recovery_point=recovery_point, log_start_offset=log_start_offset,
                           clean_shutdown=clean_shutdown, now_ms=self.clock.time_ms()).load()
        self._segments: list[LogSegment] = loaded.segments
        self._log_end_offset = loaded.log_end_offset
        #: the lowest log end offset of a lagging in-sync follower (broker.follower_states), None when every
        #: in-sync replica has the whole log: the high watermark stays at or below it
        self.high_watermark_cap: int | None = None
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        self.unflushed_messages = 0
        self.last_flush_ms = self.clock.time_ms()
        #: set when the log dir went offline: every read and append then fails with KAFKA_STORAGE_ERROR
        self.offline_reason: str | None = None
        #: (unlink deadline, segment) of segments renamed to `.deleted`, kept for `file.delete.delay.ms`
        self._pending_deletions: list[tuple[int, LogSegment]] = []
        self.producer_state = ProducerStateManager(self.dir, self.topic_partition)
        self._rebuild_producer_state()

    @property
    def topic_partition(self) -> str:
        return self._topic_partition

    # ------------------------------------------------------------------ offsets
    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        cap = self.high_watermark_cap
        return self._log_end_offset if cap is None else min(cap, self._log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        """First offset of the oldest open transaction (not below the log start), else the high watermark."""
        with self._lock:
            first_unstable = self.producer_state.first_unstable_offset()
            if first_unstable is None:
                return self.high_watermark
            return min(max(first_unstable, self.log_start_offset), self.high_watermark)

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return sum(s.size_bytes for s in self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def segments(self) -> list[LogSegment]:
        with self._lock:
            return list(self._segments)

    def active_producers(self) -> list[ProducerStateEntry]:
        """Copies of this partition's producer entries by producer id (DescribeProducers); raises
        KAFKA_STORAGE_ERROR when the log is offline."""
        with self._lock:
            self._check_online()
            return [entry.copy() for _pid, entry in sorted(self.producer_state.producers.items())]

    def log_dir_failed(self, reason: str) -> None:
        """The disk failed: the whole log dir goes offline (this log at least, without a LogManager)."""
        if self.on_log_dir_failure is not None:
            self.on_log_dir_failure(reason)
        else:
            logger.error("Taking the log of %s offline: %s", self.topic_partition, reason)
            self.mark_offline(reason)

    def mark_offline(self, reason: str) -> None:
        with self._lock:
            self.offline_reason = reason

    def _check_online(self) -> None:
        if self.offline_reason is not None:
            raise KafkaStorageError(f"Log of {self.topic_partition} is in an offline log directory: "
                                    f"{self.offline_reason}")

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self.config = config

    # ----------------------------------------------------------- producer state
    def _rebuild_producer_state(self) -> None:
        """Load the newest snapshot and replay producer batches after it (or the whole log without one)."""
        state = self.producer_state
        start = state.load_latest_snapshot(self._log_end_offset)
        if start is None:
            start = self.log_start_offset
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            _, position = segment.offset_index.lookup(start)
            for _, batch in segment.log.batches(position, allow_torn_tail=True):
                if batch.last_offset >= start and batch.producer_id >= 0:
                    completed = state.update(batch)
                    if completed is not None:  # already in the segment's .txnindex
                        state.complete_txn(completed)

    # ------------------------------------------------------------------- append
    def append_as_leader(self, records: bytes | bytearray | memoryview, *, leader_epoch: int = 0) -> LogAppendInfo:
        """Validate one client batch, assign offsets, roll if needed and append (see module docs)."""
        self._check_online()
        now_ms = self.clock.time_ms()
        config = self.config
        # Validation (decompressing, checking keys, recompressing into the topic's codec) needs only the batch and
        # the config: it runs before the lock, which the cleaner's swap and the flusher also take.
        validator = self._validator
        if validator.config is not config:  # the config was replaced since the last append
            validator = self._validator = LogValidator(self._topic_partition, config)
        batch = validator.validate(records, now_ms)
        with self._lock, storage_errors(self._topic_partition, self):
            self._check_online()
            if batch.producer_id >= 0:
                duplicate = self.producer_state.check_append(batch, self._log_end_offset)
                if duplicate is not None:
                    return LogAppendInfo(duplicate.first_offset, duplicate.last_offset, -1, self.log_start_offset,
                                         batch.records_count, duplicate=True)
            first_offset = self._log_end_offset
            last_offset = first_offset + batch.last_offset_delta
            log_append_time = config.log_append_time
            max_timestamp = now_ms if log_append_time else batch.max_timestamp
            size_bytes = batch.size_bytes
            if self.space_guard is not None:
                self.space_guard.admit(size_bytes)
            self._maybe_roll(size_bytes, max_timestamp, last_offset, now_ms)
            data: bytes | bytearray
            if log_append_time:  # the max timestamp is CRC-covered: patch a copy and compute the CRC again
                data = bytearray(batch.raw())
                set_base_offset(data, 0, first_offset)
                set_partition_leader_epoch(data, 0, leader_epoch)
                set_max_timestamp_and_type(data, 0, now_ms, TimestampType.LOG_APPEND_TIME)
            else:
                # Base offset, length and leader epoch (the first 16 bytes) are outside the CRC: the stored batch is
                # the new prefix and the client's bytes after it. The segment's indexes and the producer state take
                # the offsets and the max timestamp from here and the rest from the client's batch view, so no view
                # of the stored copy is made.
                data = b"".join((_OFFSET_LENGTH_EPOCH.pack(first_offset, batch.batch_length, leader_epoch),
                                 batch.raw()[MAGIC_OFFSET:]))
            self.active_segment.append_batch(data, last_offset, max_timestamp, now_ms)
            if batch.producer_id >= 0:
                self.producer_state.update_appended(batch, first_offset, last_offset, max_timestamp)
            self._log_end_offset = last_offset + 1
            self.unflushed_messages += batch.records_count
            return LogAppendInfo(first_offset, last_offset, now_ms if log_append_time else -1,
                                 self.log_start_offset, batch.records_count)

    def append_transaction_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                                  *, leader_epoch: int = 0) -> LogAppendInfo:
        """Write one COMMIT/ABORT control batch for `producer_id` and complete its open transaction here.

        Raises InvalidProducerEpochError (stale producer epoch) or TransactionCoordinatorFencedError (stale
        coordinator epoch). A marker for a producer without an open transaction is still written (Kafka does)
        but changes no index. An abort gets a `.txnindex` entry in the active segment whose last stable offset
        is the LSO once this transaction is complete."""
        with self._lock, storage_errors(self.topic_partition, self):
            self._check_online()
            now_ms = self.clock.time_ms()
            offset = self._log_end_offset
            self.producer_state.check_end_txn_marker(producer_id, producer_epoch, coordinator_epoch, offset)
            data = bytearray(build_control_batch(
                base_offset=offset, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                coordinator_epoch=coordinator_epoch, timestamp_ms=now_ms, partition_leader_epoch=leader_epoch))
            if self.config.log_append_time:
                set_max_timestamp_and_type(data, 0, now_ms, TimestampType.LOG_APPEND_TIME)
            self._maybe_roll(len(data), now_ms, offset, now_ms)
            segment = self.active_segment
            segment.append(data, offset, now_ms, offset, now_ms=now_ms)
            completed = self.producer_state.update(RecordBatch(data, 0))
            if completed is not None:
                try:
                    segment.update_txn_index(completed, self.producer_state.last_stable_offset(completed))
                except OSError as error:  # the marker is in the log already: memory and disk now disagree
                    raise SegmentInconsistentError(f"aborted-transaction index of {self.topic_partition}: "
                                                   f"{error}") from error
                self.producer_state.complete_txn(completed)
            self._log_end_offset = offset + 1
            self.unflushed_messages += 1
            return LogAppendInfo(offset, offset, now_ms if self.config.log_append_time else -1,
                                 self.log_start_offset, 1)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTransaction]:
        """Aborted transactions overlapping `[start_offset, upper_bound_offset)`, from the segment holding
        `start_offset` on, until a segment's index says no later one can hold more (Kafka's
        LocalLog.collectAbortedTransactions). An entry lives in the segment of its ABORT marker, which may be
        well after the transaction's first offset, hence the walk forward."""
        with self._lock:
            return collect_aborted_transactions(self._segments, start_offset, upper_bound_offset)

    def _maybe_roll(self, size_bytes: int, max_timestamp: int, last_offset: int, now_ms: int) -> None:
        reason = roll_reason(self.active_segment, self.config, size_bytes, max_timestamp, last_offset, now_ms)
        if reason is not None:
            logger.debug("Rolling %s at offset %d (%s)", self.topic_partition, self._log_end_offset, reason)
            self.roll()

    def roll(self) -> None:
        """Close the active segment (if it has data) and start a new one at the log end offset."""
        with self._lock, storage_errors(self.topic_partition, self):
            active = self.active_segment
            if active.is_empty:
                return
            # No fsync here: roll runs on the append path (the event loop). `flush_rolled_segments`, called
            # from a background thread, makes the closed segment durable and advances the recovery point.
            active.on_becoming_inactive()
            config = self.config
            new = LogSegment(self.dir, self._log_end_offset, index_interval_bytes=config.index_interval_bytes,
                             max_index_size_bytes=config.segment_index_bytes,
                             rolling_jitter_ms=config.random_segment_jitter_ms(),
                             created_ms=self.clock.time_ms(), fill_ahead_bytes=fill_ahead_bytes_for(self.dir))
            self._segments.append(new)
            try:
                self.producer_state.take_snapshot(self._log_end_offset, durable=False)
            except OSError as error:  # only costs a longer replay at the next load; the roll itself is done
                logger.warning("Producer-state snapshot of %s at offset %d not written: %s",
                               self.topic_partition, self._log_end_offset, error)

    def roll_if_due(self, now_ms: int) -> bool:
        """Time-based roll of a non-empty active segment without an append (broker timer).

        Measured from the broker time of the segment's first append, so producer clock skew cannot delay it.
        """
        with self._lock:
            active = self.active_segment
            if active.is_empty:
                return False
            started_ms = active.first_append_time_ms if active.first_append_time_ms is not None \
                else active.created_ms
            if now_ms - started_ms >= self.config.max_segment_ms - active.rolling_jitter_ms:
                self.roll()
                return True
            return False

    # --------------------------------------------------------------------- read
    def read(self, start_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_message: bool = True, include_aborted_transactions: bool = False) -> FetchDataInfo:
        """Whole batches from `start_offset` below `max_offset` (the LSO for read_committed). With
        `include_aborted_transactions`, also the aborted transactions overlapping the returned batches (up to
        the offset after the last one; none for an empty read), as Kafka's FetchIsolation.TXN_COMMITTED."""
        with self._lock, storage_errors(self.topic_partition, self):
            self._check_online()
            end_offset = self._log_end_offset
            if start_offset < self.log_start_offset or start_offset > end_offset:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {start_offset} for partition {self.topic_partition}, but we "
                    f"only have log segments in the range {self.log_start_offset} to {end_offset}.")
            limit_offset = end_offset if max_offset is None else min(max_offset, end_offset)
            records, last_offset = read_segments(self._segments, start_offset, limit_offset, max_bytes,
                                                 min_one_message)
            aborted = None
            if include_aborted_transactions:
                aborted = collect_aborted_transactions(self._segments, start_offset, last_offset + 1) \
                    if records else []
            return FetchDataInfo(records, self.high_watermark, self.log_start_offset, aborted)

    def fetch_offset_by_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        with self._lock:
            self._check_online()
            if timestamp_ms == LATEST_TIMESTAMP:  # a consumer's latest: the high watermark, as Kafka answers it
                return self.high_watermark, -1
            if timestamp_ms in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return self.log_start_offset, -1
            if timestamp_ms == LATEST_TIERED_TIMESTAMP:
                return None
            if timestamp_ms == MAX_TIMESTAMP:
                best = max(self._segments, key=lambda s: s.max_timestamp_so_far)
                if best.max_timestamp_so_far < 0:
                    return None
                return best.find_offset_by_timestamp(best.max_timestamp_so_far, self.log_start_offset)
            for segment in self._segments:
                if segment.max_timestamp_so_far >= timestamp_ms and segment.next_offset > self.log_start_offset:
                    found = segment.find_offset_by_timestamp(timestamp_ms, self.log_start_offset)
                    if found is not None:
                        return found
            return None

    # ---------------------------------------------------------------- retention
    def delete_retention_segments(self, now_ms: int) -> int:
        """Delete old segments (log start breach always; retention.ms/bytes for `delete` topics)."""
        with self._lock:
            deletable = deletable_segment_count(self._segments, self.log_start_offset, self.config, now_ms)
            if deletable:
                self._delete_segments(self._segments[:deletable])
            return deletable

    def _delete_segments(self, segments: list[LogSegment]) -> None:
        for segment in segments:
            self._segments.remove(segment)
            logger.info("Deleting segment %s of %s", segment.base_offset, self.topic_partition)
            segment.change_file_suffixes(segment.suffix, DELETED_SUFFIX)
        self._schedule_deletion(segments)
        new_start = max(self.log_start_offset, self._segments[0].base_offset)
        self._advance_log_start_offset(new_start)

    def truncate_to(self, offset: int) -> int:
        """Kafka's UnifiedLog.truncateTo, as a follower truncates after an election: remove every record at or
        past `offset` (not below the log start) from the segments, indexes and producer state; returns how many
        offsets were removed (0 when the log ends at or before `offset`)."""
        with self._lock:
            self._check_online()
            offset = max(offset, self.log_start_offset)
            if offset >= self._log_end_offset:
                return 0
            removed = self._log_end_offset - offset
            doomed = [segment for segment in self._segments[1:] if segment.base_offset >= offset]
            for segment in doomed:
                self._segments.remove(segment)
                segment.change_file_suffixes(segment.suffix, DELETED_SUFFIX)
            self._segments[-1].truncate_to(offset)
            self._log_end_offset = offset
            self.recovery_point = min(self.recovery_point, offset)
            state = self.producer_state
            for snapshot in state.snapshot_offsets():
                if snapshot > offset:
                    (self.dir / f"{snapshot:020d}.snapshot").unlink(missing_ok=True)
            state.truncate_fully()
            self._rebuild_producer_state()
            if doomed:
                self._schedule_deletion(doomed)
            logger.warning("Truncated %s to offset %d (%d offsets removed)", self.topic_partition, offset, removed)
            return removed

    def _advance_log_start_offset(self, new_offset: int) -> None:
        if new_offset > self.log_start_offset:
            self.log_start_offset = new_offset
            self.producer_state.on_log_start_offset_incremented(new_offset)

    def maybe_increment_log_start_offset(self, new_offset: int) -> None:
        """DeleteRecords: move the log start; segments wholly below it go at the next retention pass."""
        with self._lock:
            if new_offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_offset} of partition "
                    f"{self.topic_partition} since it is larger than the high watermark {self.high_watermark}")
            self._advance_log_start_offset(new_offset)

    # --------------------------------------------------------------- cleaner swap
    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None:
        """Crash-safe swap of cleaned segments (spec §2.8): `.cleaned` -> `.swap`, old -> `.deleted`,
        `.swap` -> live; the `.deleted` files are unlinked after `file.delete.delay.ms`. Old segments already
        gone are skipped."""
        with self._lock:
            present = local_log.replace_segments(self._segments, self.dir, self.topic_partition, new_segments,
                                                 old_segments)
            if present:
                self._schedule_deletion(present)

    # -------------------------------------------------------- delayed deletion
    def _schedule_deletion(self, segments: list[LogSegment]) -> None:
        """Close `.deleted` segments and unlink them after `file.delete.delay.ms` (Kafka's asynchronous
        segment deletion, spec §2.8 step 4). They are already out of the segment list, so no read sees them;
        the files linger for tools and for anything that still holds them open. Caller holds the lock."""
        deadline_ms = self.clock.time_ms() + self.config.file_delete_delay_ms
        for segment in segments:
            segment.close()
            self._pending_deletions.append((deadline_ms, segment))
        if self.config.file_delete_delay_ms <= 0:
            self.delete_pending_segments(deadline_ms)

    def delete_pending_segments(self, now_ms: int | None = None) -> int:
        """Unlink the `.deleted` segments whose delay has passed (all of them when `now_ms` is None, as at
        shutdown); returns how many. Called by the broker's roll timer (`LogManager.roll_due_segments`)."""
        with self._lock:
            due = [s for deadline_ms, s in self._pending_deletions if now_ms is None or deadline_ms <= now_ms]
            if not due:
                return 0
            self._pending_deletions = [(d, s) for d, s in self._pending_deletions if not any(s is x for x in due)]
        delete_segment_files(due)
        return len(due)

    @property
    def pending_deletions(self) -> list[LogSegment]:
        """Segments renamed to `.deleted` whose files have not been unlinked yet."""
        with self._lock:
            return [s for _, s in self._pending_deletions]

    # ---------------------------------------------------------------- lifecycle
    def flush_rolled_segments(self) -> None:
        """fsync the segments rolled since the last flush and advance the recovery point to the active
        segment's base offset (Kafka's "flush-log" task after a roll). Called from a background thread."""
        with self._lock:
            pending = [s for s in self._segments[:-1] if s.next_offset > self.recovery_point]
            target = self.active_segment.base_offset
        if not pending:
            return
        self._fsync_outside_lock(pending)
        with self._lock:
            self.recovery_point = max(self.recovery_point, target)

    def flush(self) -> None:
        """Make everything appended so far durable and move the recovery point to it (Kafka's
        UnifiedLog.flush): the lock is held only to note the log end offset and write the indexes' pending
        entries to the page cache, and again to mark the flushed offset; the fsyncs run without it, so
        appends and reads on the event loop never wait for the disk."""
        with self._lock:
            target = self._log_end_offset
            flushed_messages = self.unflushed_messages
            active = self.active_segment
            pending = [s for s in self._segments if s.next_offset > self.recovery_point or s is active]
            with storage_errors(self.topic_partition, self):
                for segment in pending:
                    segment.write_pending_index_entries()
        self._fsync_outside_lock(pending, directory=False)
        with self._lock:
            self.recovery_point = max(self.recovery_point, target)
            self.unflushed_messages = max(0, self.unflushed_messages - flushed_messages)
            self.last_flush_ms = self.clock.time_ms()

    def _fsync_outside_lock(self, segments: list[LogSegment], *, directory: bool = True) -> None:
        """fsync `segments` and the directory without holding the lock; a segment deleted meanwhile (retention,
        a cleaner swap: its files closed) is skipped, any other failure is a storage error."""
        with storage_errors(self.topic_partition, self):
            for segment in segments:
                try:
                    segment.fsync()
                except (OSError, ValueError):
                    with self._lock:
                        if segment in self._segments:  # not deleted by retention or a swap meanwhile
                            raise
            if directory:
                fsync_dir(self.dir)

    def close(self) -> None:
        with self._lock:
            self.flush()
            try:
                self.producer_state.take_snapshot(self._log_end_offset)
            except OSError as exc:  # a full disk: the next load replays the log from the last snapshot instead
                logger.warning("Could not snapshot the producer state of %s at close: %s", self.topic_partition, exc)
            for segment in self._segments:
                segment.close()
            self.delete_pending_segments()

    def delete(self) -> None:
        with self._lock:
            for segment in self._segments:
                segment.close()
            self._segments = []
            self._pending_deletions = []
            shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"UnifiedLog({self.topic_partition}, start={self.log_start_offset}, "
                f"end={self._log_end_offset}, segments={len(self._segments)})")

"""One log segment: `<base>.log` plus its `.index`, `.timeindex` and `.txnindex`, in Kafka's format.

Index entries follow Kafka's LogSegment.append: one entry per appended batch once more than
`index.interval.bytes` were appended since the last entry, pointing at the batch's last offset and start
position; the time index gets (max timestamp so far, offset of that max) at the same moments and a final entry
when the segment stops being active or is closed. The `.txnindex` gets one entry per aborted transaction whose
ABORT marker lands in this segment (Kafka's LogSegment.updateTxnIndex); recovery rebuilds it from the batches
when given the producer state as of the segment's base offset.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, RecordBatch, TimestampType, iter_batches
from minikafka.protocol.records.batch_header import LENGTH_OFFSET
from minikafka.protocol.records.batch_header import last_offset as _last_offset
from minikafka.storage.file_records import FileRecords
from minikafka.storage.indexes import IndexCorruptError, OffsetIndex, TimeIndex
from minikafka.storage.producer_state import CompletedTxn, ProducerStateManager
from minikafka.storage.transaction_index import AbortedTransaction, TransactionIndex

_BATCH_LENGTH = struct.Struct(">i")  # a batch's length field, at LENGTH_OFFSET
#: where recent reads ended, kept per segment: one entry per consumer reading it in step is enough
READ_ENDS_KEPT = 8

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
MAX_RELATIVE_OFFSET = 0x7FFFFFFF


class SegmentInconsistentError(OSError):
    """A failed append could not be undone: the segment's files and memory disagree until recovery, so its log
    must go offline (a disk that cannot even shrink a file is broken, not full)."""


class _AppendState(NamedTuple):
    """What `LogSegment.append` changes, captured before it so that a failed append can be undone (a NamedTuple:
    one is made per append, and a frozen dataclass's field-by-field set-up cost a microsecond)."""

    log_size_bytes: int
    offset_index_entries: int
    time_index_entries: int
    bytes_since_last_index_entry: int
    max_timestamp_so_far: int
    offset_of_max_timestamp_so_far: int
    next_offset: int
    rolling_based_timestamp: int | None
    first_append_time_ms: int | None


_new_append_state = tuple.__new__
#: a batch's base offset and length where the file was only filled ahead with zeros
_NO_BATCH = bytes(LOG_OVERHEAD)


def segment_file_name(base_offset: int, extension: str, suffix: str = "") -> str:
    return f"{base_offset:020d}{extension}{suffix}"


class LogSegment:
    """Owns one segment's four files (the `.txnindex` only once it has an entry) and in-memory bookkeeping
    (next offset, max timestamp, roll times).

    Not thread-safe: every mutating call is made with the owning UnifiedLog's lock held.
    """

    def __init__(
        self,
        dir: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size_bytes: int = 10_485_760,
        suffix: str = "",
        rolling_jitter_ms: int = 0,
        created_ms: int = 0,
        fill_ahead_bytes: int = 0,
    ) -> None:
        """`fill_ahead_bytes`: for a segment the log may append to, how far its file is filled ahead (FileRecords)."""
        self.dir = Path(dir)
        self.base_offset = base_offset
        self.suffix = suffix
        self.index_interval_bytes = index_interval_bytes
        self.rolling_jitter_ms = rolling_jitter_ms
        self.log = FileRecords(self.dir / segment_file_name(base_offset, LOG_SUFFIX, suffix),
                               fill_ahead_bytes=fill_ahead_bytes)
        self.offset_index = OffsetIndex(
            self.dir / segment_file_name(base_offset, INDEX_SUFFIX, suffix), base_offset,
            max_index_size_bytes)
        self.time_index = TimeIndex(
            self.dir / segment_file_name(base_offset, TIME_INDEX_SUFFIX, suffix), base_offset,
            max_index_size_bytes)
        self.txn_index = TransactionIndex(
            self.dir / segment_file_name(base_offset, TXN_INDEX_SUFFIX, suffix), base_offset)
        self._bytes_since_last_index_entry = 0
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = base_offset
        self.next_offset = base_offset
        #: max timestamp of the first batch (Kafka's rollingBasedTimestamp); None while empty.
        self.rolling_based_timestamp: int | None = None
        #: broker time of the first append (idle-roll deadline); `created_ms` until something is appended.
        self.first_append_time_ms: int | None = None
        self.created_ms = created_ms
        #: next offset -> file position where a recent read's whole batches ended (a batch start, or the end of
        #: the file then): a consumer's next Fetch starts there, with no index lookup or header read. Positions
        #: stay true while the segment only grows; anything that cuts the file clears them.
        self._read_ends: dict[int, int] = {}
        if self.log.size_bytes:
            self._load_state()

    @classmethod
    def create(cls, dir: Path, base_offset: int, *, index_interval_bytes: int = 4096,
               max_index_size_bytes: int = 10_485_760, suffix: str = "", created_ms: int = 0) -> LogSegment:
        """A new, empty segment; stale files with the same names (e.g. an old `.cleaned`) are deleted first."""
        for extension in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (Path(dir) / segment_file_name(base_offset, extension, suffix)).unlink(missing_ok=True)
        return cls(dir, base_offset, index_interval_bytes=index_interval_bytes,
                   max_index_size_bytes=max_index_size_bytes, suffix=suffix, created_ms=created_ms)

    # ------------------------------------------------------------------ state
    def _load_state(self) -> None:
        """Derive next offset / max timestamp from the indexes' last entries plus the batches after them."""
        timestamp, offset = self.time_index.last_entry
        if timestamp >= 0:
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = timestamp, offset
        _, start_position = self.offset_index.last_entry  # the file's last entry: the index stays unread
        if start_position >= self.log.size_bytes:
            start_position = 0
        # a file that is only zeros filled ahead (a crash before its first append was written) has no first batch
        first = None if self.log.read(0, LOG_OVERHEAD) == _NO_BATCH else self.log.read_batch(0)
        if first is not None:
            self.rolling_based_timestamp = first.max_timestamp
        end_position = start_position
        for position, batch in self.log.batches(start_position, allow_torn_tail=True):
            self._track(batch.max_timestamp, batch.last_offset)
            self.next_offset = batch.next_offset
            end_position = position + batch.size_bytes
        if end_position < self.log.size_bytes and self.log.is_zeros_from(end_position):
            self.log.truncate_to(end_position)  # zeros filled ahead that a crash or a failed trim left behind
        mtime_ms = self.log.last_modified_ms()
        first_ts = self.rolling_based_timestamp
        has_first_ts = first_ts is not None and first_ts >= 0
        self.first_append_time_ms = min(mtime_ms, first_ts) if has_first_ts and first_ts else mtime_ms

    def _track(self, max_timestamp: int, last_offset: int) -> None:
        if max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_timestamp
            self.offset_of_max_timestamp_so_far = last_offset

    def sanity_check(self, *, check_indexes: bool = True) -> None:
        """Raise IndexCorruptError if an index is missing or inconsistent with the log (caller then recovers).
        Without `check_indexes` (a segment below the recovery point) the offset and time indexes are not read:
        Kafka's LogSegment.sanityCheck skips them too, and they stay unloaded until a lookup needs them."""
        if self.size_bytes and (self.offset_index.created_new or self.time_index.created_new):
            raise IndexCorruptError(f"missing index for segment {self.base_offset}")
        if check_indexes:
            self.offset_index.sanity_check(self.log.size_bytes)
            self.time_index.sanity_check(self.next_offset)
        self.txn_index.sanity_check()

    @property
    def size_bytes(self) -> int:
        return self.log.size_bytes

    @property
    def is_empty(self) -> bool:
        return self.log.size_bytes == 0

    @property
    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the file's mtime if no batch carries one (Kafka's rule)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.log.last_modified_ms()

    @property
    def last_modified_ms(self) -> int:
        return self.log.last_modified_ms()

    def index_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= MAX_RELATIVE_OFFSET

    # ----------------------------------------------------------------- append
    def append(
        self,
        records: bytes | bytearray | memoryview,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_ts: int,
        *,
        now_ms: int | None = None,
        batches: Sequence[RecordBatch] | None = None,
    ) -> None:
        """Append whole batches (already offset-assigned); index entries per batch as Kafka writes them.
        `batches`: the views of `records`' batches, when the caller has made them already.

        All or nothing: when a write fails (a full disk), the log, both indexes and the in-memory state are put
        back as they were before the call and the OSError propagates, so the next append can simply retry."""
        if not 0 <= largest_offset - self.base_offset <= MAX_RELATIVE_OFFSET:
            raise ValueError(f"offset {largest_offset} cannot be stored relative to {self.base_offset}")
        before = self._append_state()
        try:
            start_position = self.log.append(records)
            for batch in iter_batches(memoryview(records)) if batches is None else batches:
                if self.rolling_based_timestamp is None:
                    self.rolling_based_timestamp = batch.max_timestamp
                    if self.first_append_time_ms is None:
                        self.first_append_time_ms = now_ms if now_ms is not None else self.created_ms
                self._index_batch(start_position + batch.position, batch.max_timestamp, batch.last_offset,
                                  batch.size_bytes)
        except OSError as error:
            self._undo_append(before, error)
            raise
        self._track(largest_timestamp, shallow_offset_of_max_ts)
        self.next_offset = max(self.next_offset, largest_offset + 1)

    def append_batch(self, batch: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int,
                     now_ms: int) -> None:
        """`append` of one whole batch (offsets assigned) whose last offset and max timestamp the caller knows:
        the produce path's, which so makes no view of the stored batch. All or nothing, as `append`."""
        if not 0 <= last_offset - self.base_offset <= MAX_RELATIVE_OFFSET:
            raise ValueError(f"offset {last_offset} cannot be stored relative to {self.base_offset}")
        before = self._append_state()
        try:
            position = self.log.append(batch)
            if self.rolling_based_timestamp is None:
                self.rolling_based_timestamp = max_timestamp
                if self.first_append_time_ms is None:
                    self.first_append_time_ms = now_ms
            self._index_batch(position, max_timestamp, last_offset, len(batch))
        except OSError as error:
            self._undo_append(before, error)
            raise
        self.next_offset = max(self.next_offset, last_offset + 1)

    def _undo_append(self, before: _AppendState, error: OSError) -> None:
        """Put back the state before a failed append; SegmentInconsistentError when even that fails."""
        try:
            self._restore(before)
        except OSError as restore_error:
            raise SegmentInconsistentError(
                f"segment {self.base_offset} of {self.dir.name} could not undo a failed append ({error}): "
                f"{restore_error}") from restore_error

    def _append_state(self) -> _AppendState:
        # tuple.__new__ straight away: the NamedTuple's own __new__ is a Python function, one call more per append
        return _new_append_state(_AppendState, (
            self.log.size_bytes, self.offset_index.entries, self.time_index.entries,
            self._bytes_since_last_index_entry, self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far,
            self.next_offset, self.rolling_based_timestamp, self.first_append_time_ms))

    def _restore(self, state: _AppendState) -> None:
        """Undo a failed append. Shrinking files needs no free space, so this fails only on a broken disk."""
        self._read_ends.clear()
        self.log.truncate_to(state.log_size_bytes)
        self.offset_index.truncate_entries(state.offset_index_entries)
        self.time_index.truncate_entries(state.time_index_entries)
        self._bytes_since_last_index_entry = state.bytes_since_last_index_entry
        self.max_timestamp_so_far = state.max_timestamp_so_far
        self.offset_of_max_timestamp_so_far = state.offset_of_max_timestamp_so_far
        self.next_offset = state.next_offset
        self.rolling_based_timestamp = state.rolling_based_timestamp
        self.first_append_time_ms = state.first_append_time_ms

    def _index_batch(self, position: int, max_timestamp: int, last_offset: int, size_bytes: int) -> None:
        if max_timestamp > self.max_timestamp_so_far:  # `_track`, inline: once per appended batch
            self.max_timestamp_so_far = max_timestamp
            self.offset_of_max_timestamp_so_far = last_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size_bytes
        self.next_offset = last_offset + 1

    def update_txn_index(self, completed_txn: CompletedTxn, last_stable_offset: int) -> None:
        """Index an aborted transaction whose marker is in this segment (commits need no entry)."""
        if completed_txn.is_aborted:
            self.txn_index.append(AbortedTransaction(completed_txn.producer_id, completed_txn.first_offset,
                                                     completed_txn.last_offset, last_stable_offset))

    def collect_aborted_transactions(self, fetch_offset: int,
                                     upper_bound_offset: int) -> tuple[list[AbortedTransaction], bool]:
        return self.txn_index.collect_aborted_transactions(fetch_offset, upper_bound_offset)

    def on_becoming_inactive(self) -> None:
        """Final time-index entry for the max timestamp (Kafka's onBecomeInactiveSegment), both indexes' pending
        entries to their files, which a cleaner process reads, and the log file trimmed to its last batch. On an
        OSError both indexes stay as they were."""
        time_index_entries = self.time_index.entries
        try:
            if self.max_timestamp_so_far >= 0:
                self.time_index.maybe_append(
                    self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True)
            self.offset_index.write_pending()
            self.time_index.write_pending()
            self.log.trim()
        except OSError:
            self.time_index.truncate_entries(time_index_entries)
            raise

    # ------------------------------------------------------------------- read
    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, int] | None:
        """(position, base offset) of the first batch whose last offset >= offset, or None."""
        found = self._find_batch(offset, start_position)
        return None if found is None else (found[0], found[1])

    def _find_batch(self, offset: int, start_position: int = 0) -> tuple[int, int, int] | None:
        """(position, base offset, size in bytes) of the first batch whose last offset >= offset, or None."""
        _, position = self.offset_index.lookup(offset)
        position = max(position, start_position)
        while True:
            header = self.log.header_at(position)
            if header is None:
                return None
            base_offset, size, last_offset = header
            if last_offset >= offset:
                return position, base_offset, size
            position += size

    def read(
        self, start_offset: int, max_bytes: int, max_position: int | None = None, min_one_message: bool = True
    ) -> bytes | memoryview:
        """Whole batches from the one containing `start_offset`, up to `max_bytes` (at least one batch if
        `min_one_message`), never past `max_position` (a batch boundary). The bytes are read from the file once:
        when the read ends inside a batch, the result is a memoryview of its whole batches, not a copy."""
        return self.read_with_last_offset(start_offset, max_bytes, max_position, min_one_message)[0]

    def read_with_last_offset(
        self, start_offset: int, max_bytes: int, max_position: int | None = None, min_one_message: bool = True
    ) -> tuple[bytes | memoryview, int]:
        """`read()`'s batches and the last offset of the last of them (-1 when none): the scan that finds where
        the whole batches end also finds the last one's header, so a Fetch never walks the batches again. A read
        from where an earlier one ended (a consumer's next Fetch) starts at that position with one pread: the
        first batch's length comes from the bytes read, not from a header read of its own."""
        limit = self.log.size_bytes if max_position is None else min(max_position, self.log.size_bytes)
        start_position = self._read_ends.get(start_offset)
        data: bytes | None = None
        if start_position is not None and limit - start_position < BATCH_HEADER_SIZE:
            return b"", -1  # caught up: no batch ends below the limit (a long poll's re-reads)
        if start_position is not None and max_bytes >= LOG_OVERHEAD:
            data = self.log.read(start_position, min(max_bytes, limit - start_position))
            if len(data) < LOG_OVERHEAD:
                return b"", -1
            first_size = _BATCH_LENGTH.unpack_from(data, LENGTH_OFFSET)[0] + LOG_OVERHEAD
            if first_size < BATCH_HEADER_SIZE:  # as header_at: no readable batch here
                return b"", -1
        else:
            found = self._find_batch(start_offset)
            if found is None:
                return b"", -1
            start_position, _, first_size = found
        if start_position + first_size > limit:
            return b"", -1
        if first_size > max_bytes:  # the first batch alone is over the limit: all of it, or nothing
            if not min_one_message:
                return b"", -1
            batch = self.log.read(start_position, first_size)
            if len(batch) != first_size:
                return batch, -1
            last = _last_offset(batch, 0)
            self._remember_read_end(last + 1, start_position + first_size)
            return batch, last
        if data is None:
            data = self.log.read(start_position, min(max_bytes, limit - start_position))
        size = len(data)
        # Where the whole batches end: scan the batch lengths from the last indexed batch start in the read (one
        # every index.interval.bytes) rather than from its first batch, which for a 1 MiB read of 16 KB batches
        # is one step instead of sixty. A scan that finds no whole batch after its start does not know where the
        # batch before it began, so the next earlier start is tried, and the read's own start last.
        starts = self.offset_index.positions_below(start_position + size, start_position + 1)
        starts.append(start_position)
        unpack_length = _BATCH_LENGTH.unpack_from
        for scan_from in starts:
            end = scan_from - start_position
            last_start = -1
            while end + LOG_OVERHEAD <= size:
                next_end = end + unpack_length(data, end + LENGTH_OFFSET)[0] + LOG_OVERHEAD
                if next_end > size:
                    break
                last_start = end
                end = next_end
            if last_start >= 0:
                break
        last = -1 if last_start < 0 else _last_offset(data, last_start)
        if last >= 0:
            self._remember_read_end(last + 1, start_position + end)
        return (data if end == size else memoryview(data)[:end]), last

    def _remember_read_end(self, next_offset: int, position: int) -> None:
        read_ends = self._read_ends
        if next_offset not in read_ends and len(read_ends) >= READ_ENDS_KEPT:
            del read_ends[next(iter(read_ends))]  # the oldest
        read_ends[next_offset] = position

    def find_offset_by_timestamp(self, timestamp_ms: int, starting_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at/after `starting_offset` with timestamp >= target."""
        _, index_offset = self.time_index.lookup(timestamp_ms - 1)
        _, position = self.offset_index.lookup(max(index_offset, starting_offset))
        for _, batch in self.log.batches(position):
            if batch.max_timestamp < timestamp_ms or batch.last_offset < starting_offset:
                continue
            log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
            for record in batch.records():
                record_timestamp = batch.max_timestamp if log_append else record.timestamp
                if record_timestamp >= timestamp_ms and record.offset >= starting_offset:
                    return record.offset, record_timestamp
        return None

    # --------------------------------------------------------------- recovery
    def recover(self, producer_state: ProducerStateManager | None = None) -> int:
        """Validate every batch, truncate at the first invalid/torn one, rebuild the offset and time indexes.

        With `producer_state` (the state as of this segment's base offset) every producer batch is replayed
        into it and the transaction index is rebuilt from the markers (Kafka's LogSegment.recover); without,
        the transaction index only loses the entries past the valid end. Returns the bytes truncated.
        """
        self._read_ends.clear()
        self.offset_index.truncate_to(self.base_offset)
        self.time_index.truncate_to(self.base_offset)
        if producer_state is not None:
            self.txn_index.reset()
        self._bytes_since_last_index_entry = 0
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.next_offset = self.base_offset
        self.rolling_based_timestamp = None
        valid_bytes = 0
        try:
            for position, batch in self.log.batches(0, allow_torn_tail=True):
                if not batch.is_valid() or batch.base_offset < self.next_offset or \
                        not self.can_convert_to_relative_offset(batch.last_offset):
                    break
                if self.rolling_based_timestamp is None:
                    self.rolling_based_timestamp = batch.max_timestamp
                self._index_batch(position, batch.max_timestamp, batch.last_offset, batch.size_bytes)
                valid_bytes = position + batch.size_bytes
                if producer_state is not None and batch.producer_id >= 0:
                    completed = producer_state.update(batch)
                    if completed is not None:
                        self.update_txn_index(completed, producer_state.last_stable_offset(completed))
                        producer_state.complete_txn(completed)
        except CorruptMessageError:
            pass
        # zeros filled ahead of the appends are not lost data: cut off, but not counted as truncated
        truncated = 0 if self.log.is_zeros_from(valid_bytes) else self.log.size_bytes - valid_bytes
        self.log.truncate_to(valid_bytes)
        self.txn_index.truncate_to(self.next_offset)
        self.offset_index.write_pending()  # Kafka's trimToValidSize: the files hold the rebuilt indexes
        self.time_index.write_pending()
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove every batch with base offset >= `offset`; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, base_offset = found
        if base_offset < offset:
            header = self.log.header_at(position)
            position += header[1] if header else 0
        removed = self.log.size_bytes - position
        self._read_ends.clear()
        self.log.truncate_to(position)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.recover()
        return removed

    # ------------------------------------------------------------------ files
    def flush(self) -> None:
        self.write_pending_index_entries()
        self.fsync()

    def write_pending_index_entries(self) -> None:
        """The indexes' entries held in memory to their files (page cache only; caller holds the log lock)."""
        self.offset_index.write_pending()
        self.time_index.write_pending()

    def fsync(self) -> None:
        """fsync the four files as they are now. Needs no lock (Kafka's flush outside the log lock): appends and
        index writes may run meanwhile, and what they add is covered by a later flush. A file closed meanwhile
        (the segment deleted) raises OSError or ValueError; the caller checks whether the segment is still live."""
        self.log.flush()
        self.offset_index.fsync()
        self.time_index.fsync()
        self.txn_index.flush()

    def close(self) -> None:
        if not self.log.closed:
            try:
                self.on_becoming_inactive()
            except OSError as exc:  # as Kafka's swallow: the index files stay a valid prefix, the data is intact
                logger.warning("Could not write the last index entries of %s at close: %s", self.log.path, exc)
        for index in (self.offset_index, self.time_index):
            try:
                index.close()
            except OSError as exc:  # the same failure as above, met again while closing the file
                logger.warning("Could not write the last entries of %s at close: %s", index.path, exc)
        self.txn_index.close()
        self.log.close()

    def delete(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.log.delete()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename all files from `<name><old_suffix>` to `<name><new_suffix>` (the swap protocol, §2.8)."""
        if self.suffix != old_suffix:
            raise ValueError(f"segment {self.base_offset} has suffix {self.suffix!r}, not {old_suffix!r}")
        self.rename_files_to(new_suffix)

    def rename_files_to(self, suffix: str) -> None:
        """Give every file the name `<name><suffix>`; files already so named are left alone, so this also undoes
        a rename that failed part-way."""
        for component, extension in ((self.log, LOG_SUFFIX), (self.offset_index, INDEX_SUFFIX),
                                     (self.time_index, TIME_INDEX_SUFFIX), (self.txn_index, TXN_INDEX_SUFFIX)):
            target = self.dir / segment_file_name(self.base_offset, extension, suffix)
            if component.path == target:
                continue
            if component is self.txn_index or component.path.exists():
                component.rename_to(target)
            else:
                component.path = target
        self.suffix = suffix

    def set_last_modified_ms(self, mtime_ms: int) -> None:
        for path in (self.log.path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            if path.exists():
                os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size_bytes}, next={self.next_offset})"

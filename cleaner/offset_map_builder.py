"""The offset-map side of a cleaning round: the first pass that maps each key's latest offset (Kafka's
Cleaner.buildOffsetMap) and the keep-or-drop decision the recopy pass takes from that map.

`OffsetMapBuilder` reads the dirty range batch by batch and fills the `OffsetMap`; its fast path collects runs
of batches that surely fit into a key -> latest offset dict and hashes each distinct key once
(`OffsetMap.put_latest`). `OffsetMapRetention` is the `RetainDecision` of an ordinary round (an exact round uses
`plan_retention.PlanRetention` instead): it answers mapped offsets from the map's latest-offset bitmap without
hashing again and looks the others up per batch (`get_many`). See `cleaner.cleaner` for the round and the
measurements behind these paths.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import accumulate, compress, repeat
from operator import attrgetter, is_, is_not
from typing import Any

from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.log_to_clean import segments_overlapping
from minikafka.cleaner.offset_map import MAX_RELATIVE_OFFSET, OffsetMap
from minikafka.cleaner.one_record_runs import OneRecordRun, scan_segment
from minikafka.cleaner.record_codec import RecordLike, collect_latest_offsets
from minikafka.cleaner.transaction_metadata import CleanedTransactionMetadata
from minikafka.protocol.records import RecordBatch
from minikafka.storage.local_log import collect_aborted_transactions as collect_from_segments
from minikafka.storage.log_segment import LogSegment
from minikafka.storage.transaction_index import AbortedTransaction

#: byte b of the latest-offset bitmap as 8 bytes, one per offset (bit r & 7 of byte r >> 3 is offset r)
BIT_FLAGS = tuple(bytes((value >> bit) & 1 for bit in range(8)) for value in range(256))
_key_of = attrgetter("key")
#: the map pass's deduplication window: distinct keys (~130 bytes of Python objects each beyond the key's own
#: bytes, ~17 MB) and the keys' own bytes before the collected keys are put. The key bytes are summed only after
#: every _DEDUPE_KEY_BYTES / 2 log bytes read and the keys are put once they reach half the bound, so they pass
#: it by one batch at most (a run adds at most as many key bytes as log bytes); bounding log bytes made a log of large
#: values put (and hash) the same keys again every 128 MiB (1 KiB values: 282k hashes for 100k keys).
_DEDUPE_KEYS = 131_072
_DEDUPE_KEY_BYTES = 128 * 1024 * 1024


class OffsetMapBuilder:
    """The map pass of an ordinary round over one `OffsetMap`.

    Owns the pass's bookkeeping, which the recopy pass reads afterwards: the base offsets of data batches read but
    not mapped (aborted), of mapped batches that hold (or may hold) unkeyed records, and the deduplication window
    of keys not yet put. Not thread-safe: one per `Cleaner`, which is one per cleaner thread.
    """

    def __init__(self, offset_map: OffsetMap, *, check_done: Callable[[], None],
                 throttle: Callable[[int], None]) -> None:
        self.offset_map = offset_map
        self._check_done = check_done
        self._throttle = throttle
        #: base offsets of data batches the first pass read but did not map (aborted): the recopy pass must
        #: not trust the latest-offset bitmap for them
        self.unmapped_batches: set[int] = set()
        #: base offsets of mapped batches that hold (or may hold) unkeyed records: the recopy pass counts those
        #: record by record instead of selecting the batch's latest offsets at once
        self.unkeyed_batches: set[int] = set()
        #: the map pass's deduplicated run of keys not yet put: key -> latest offset, first and last offset
        self._pending: dict[Any, int] = {}
        self._pending_first = self._pending_last = -1
        self._pending_bytes = 0

    def build(
        self,
        segments: Sequence[LogSegment],
        start_offset: int,
        end_offset: int,
        stats: CleanerStats,
        collect_aborted_transactions: Callable[[int, int], Sequence[AbortedTransaction]] | None = None,
    ) -> None:
        """Map the latest offset of each key in [start_offset, end_offset), stopping when the map is full.

        Consecutive batches that surely fit (every record counted as a new key) are collected, across
        segments, into one key -> latest offset dict of at most _DEDUPE_KEYS keys and put with one hash per
        distinct key (the map ends up as if every record had been put in order); a batch that might not fit
        first flushes that dict, then goes record by record as Kafka does.
        """
        offset_map = self.offset_map
        offset_map.clear()
        self.unmapped_batches.clear()
        self.unkeyed_batches.clear()
        self._pending = {}
        self._pending_first = self._pending_last = -1
        self._pending_bytes = 0
        dirty = segments_overlapping(segments, start_offset, end_offset)
        transactions = CleanedTransactionMetadata()
        collect = collect_aborted_transactions or partial(collect_from_segments, segments)
        transactions.add_aborted_transactions(collect(start_offset, end_offset))
        for i, segment in enumerate(dirty):
            self._check_done()
            next_segment_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end_offset
            if self._build_offset_map_for_segment(segment, start_offset, stats, transactions):
                return
            # Offset gaps: everything below the next segment is covered by this round.
            self._advance_latest_offset(next_segment_start - 1)
        self._flush_pending()

    def _advance_latest_offset(self, offset: int) -> None:
        if self._pending:
            self._pending_last = offset
        else:
            self.offset_map.update_latest_offset(offset)

    def _flush_pending(self) -> None:
        if self._pending:
            self.offset_map.put_latest(self._pending, self._pending_first, self._pending_last)
            self._pending = {}
            self._pending_first = -1
        self._pending_bytes = 0

    def _build_offset_map_for_segment(
        self, segment: LogSegment, start_offset: int, stats: CleanerStats,
        transactions: CleanedTransactionMetadata,
    ) -> bool:
        """Returns True when the map filled up inside this segment (nothing is left pending then)."""
        _, position = segment.offset_index.lookup(start_offset)
        for item in scan_segment(segment.log, position):
            if type(item) is OneRecordRun:
                if self._map_run(item, start_offset, stats, transactions):
                    return True
            elif self._map_batch(item, start_offset, stats, transactions):  # type: ignore[arg-type]
                return True
        return False

    def _map_run(self, run: OneRecordRun, start_offset: int, stats: CleanerStats,
                 transactions: CleanedTransactionMetadata) -> bool:
        """`_map_batch` for each batch of a run of plain one-record batches, the dedupe path in bulk: the leading
        batches that surely take the dedupe path and reach no flush trigger before the last of them are decoded
        at once (`OneRecordRun.decode`); the others, and a run that does not decode, go batch by batch."""
        offset_map = self.offset_map
        bases = run.base_offsets
        index, count = 0, len(bases)
        records = run.decode() if _DEDUPE_KEYS and bases[0] >= start_offset and run.ascending() else None
        while index < count:
            pending = self._pending
            first = self._pending_first if self._pending_first >= 0 else bases[index]
            # each batch adds at most one key: no key-count flush and no capacity miss before the last one
            take = min(count - index, _DEDUPE_KEYS - len(pending), offset_map.capacity - offset_map.size - len(pending))
            if records is not None and take > 0:
                byte_room = _DEDUPE_KEY_BYTES // 2 - self._pending_bytes  # the byte check can fire at the last only
                take = min(take, bisect_left(list(accumulate(run.sizes[index:index + take])), byte_room) + 1)
                last = bases[index + take - 1]
                if offset_map.fits_offset(last) and last - first <= MAX_RELATIVE_OFFSET:
                    self._map_bulk(run, records, index, index + take, stats, transactions)
                    index += take
                    continue
            if self._map_batch(run.batch(index), start_offset, stats, transactions):
                return True
            index += 1
        return False

    def _map_bulk(self, run: OneRecordRun, records: list[Any], start: int, stop: int, stats: CleanerStats,
                  transactions: CleanedTransactionMetadata) -> None:
        """Batches [start, stop) of a run through `_map_batch`'s dedupe branch, all at once."""
        bases = run.base_offsets[start:stop]
        keys = list(map(_key_of, records[start:stop]))
        transactions.on_data_batches_read(bases[-1])
        pending = self._pending
        if self._pending_first < 0:
            self._pending_first = next(compress(bases, map(is_not, keys, repeat(None))), -1)
        pending.update(zip(keys, bases))
        if None in pending:
            del pending[None]
            self.unkeyed_batches.update(compress(bases, map(is_, keys, repeat(None))))
        size_bytes = sum(run.sizes[start:stop])
        self._throttle(size_bytes)
        self._pending_last = bases[-1]
        self._pending_bytes += size_bytes
        stats.map_messages_read += stop - start
        stats.map_bytes_read += size_bytes
        self._flush_pending_at_bounds()
        self._advance_latest_offset(bases[-1])

    def _flush_pending_at_bounds(self) -> None:
        """Put the pending keys at the deduplication window's key count or half its key bytes (see _DEDUPE_KEYS)."""
        if len(self._pending) >= _DEDUPE_KEYS or (self._pending_bytes >= _DEDUPE_KEY_BYTES // 2 and sum(
                map(len, self._pending)) >= _DEDUPE_KEY_BYTES // 2):
            self._flush_pending()
        elif self._pending_bytes >= _DEDUPE_KEY_BYTES // 2:
            self._pending_bytes = 0  # the keys are below half the bound: check again after as many bytes

    def _map_batch(self, batch: RecordBatch, start_offset: int, stats: CleanerStats,
                   transactions: CleanedTransactionMetadata) -> bool:
        """One batch of the map pass; True when the map filled up inside it."""
        offset_map = self.offset_map
        fits_offset = offset_map.fits_offset
        capacity = offset_map.capacity
        pending = self._pending
        self._throttle(batch.size_bytes)
        if batch.is_control:
            transactions.on_control_batch_read(batch)
            stats.map_messages_read += 1
        elif transactions.on_batch_read(batch):
            stats.map_messages_read += batch.records_count
            self.unmapped_batches.add(batch.base_offset)
        elif (_DEDUPE_KEYS and batch.base_offset >= start_offset and fits_offset(batch.last_offset)
              and (self._pending_first < 0 or batch.last_offset - self._pending_first <= MAX_RELATIVE_OFFSET)
              and offset_map.size + len(pending) + batch.records_count <= capacity):
            if self._pending_first < 0:
                self._pending_first = next((o for o, k in batch.keys() if k is not None), -1)  # noqa: SIM118
            collect_latest_offsets(batch, pending)
            if None in pending:
                del pending[None]
                self.unkeyed_batches.add(batch.base_offset)
            self._pending_last = batch.last_offset
            self._pending_bytes += batch.size_bytes
            stats.map_messages_read += batch.records_count
            self._flush_pending_at_bounds()
        else:
            self._flush_pending()
            self.unkeyed_batches.add(batch.base_offset)  # not known here: the recopy pass checks each record
            if offset_map.size + batch.records_count <= capacity and fits_offset(batch.last_offset):
                stats.map_messages_read += offset_map.put_keys(batch.keys(), start_offset)
            else:
                for offset, key in batch.keys():  # noqa: SIM118 - a record batch, not a dict
                    if key is not None and offset >= start_offset:
                        if offset_map.size >= capacity or not fits_offset(offset):
                            return True
                        offset_map.put(key, offset)
                    stats.map_messages_read += 1
        if batch.last_offset >= start_offset:
            self._advance_latest_offset(batch.last_offset)
        stats.map_bytes_read += batch.size_bytes
        return False


class OffsetMapRetention:
    """`RetainDecision` by the builder's offset map: a keyed record survives iff it is the latest of its key.
    Holds no state of its own (it reads the builder's); not thread-safe, as the Cleaner."""

    __slots__ = ("_builder",)

    def __init__(self, builder: OffsetMapBuilder) -> None:
        self._builder = builder

    def latest_offsets_of(self, batch: RecordBatch) -> set[int] | None:
        """The offsets of a data batch that are the latest of their key, read from the map's latest-offset
        bitmap; None unless the bitmap answers for every record (the batch is mapped, within the bitmap's
        reach, at or below the map's latest offset, and holds no unkeyed record)."""
        base_offset, last_offset = batch.base_offset, batch.last_offset
        offset_map = self._builder.offset_map
        if (last_offset > offset_map.latest_offset or base_offset in self._builder.unmapped_batches
                or base_offset in self._builder.unkeyed_batches):
            return None
        latest_bits = offset_map.latest_offset_bits()
        if latest_bits is None:
            return None
        bits_base, bits_end, bits = latest_bits
        if base_offset < bits_base or last_offset >= bits_end:
            return None
        first_byte = (base_offset - bits_base) >> 3
        flags = b"".join(map(BIT_FLAGS.__getitem__, bits[first_byte:((last_offset - bits_base) >> 3) + 1]))
        first_offset = bits_base + 8 * first_byte
        return set(compress(range(first_offset, first_offset + len(flags)), flags))

    def retained_records(self, batch: RecordBatch, records: Sequence[RecordLike], retain_deletes: bool,
                          stats: CleanerStats) -> tuple[Sequence[RecordLike], bool]:
        """The records of a data batch that survive, and whether a tombstone is among them.

        A keyed record at or below the map's latest offset survives iff it is the latest offset of its key.
        For offsets the first pass put, the map's latest-offset bitmap answers that exactly without hashing;
        older offsets (the clean section) and batches the first pass skipped ask the map by key.
        """
        offset_map = self._builder.offset_map
        latest_offset = offset_map.latest_offset
        if batch.base_offset > latest_offset:  # beyond the mapped range: everything is kept
            return records, any(record.value is None for record in records)
        latest_bits = None if batch.base_offset in self._builder.unmapped_batches else offset_map.latest_offset_bits()
        bits_base, bits_end, bits = latest_bits if latest_bits is not None else (0, 0, bytearray())
        bits_end = min(bits_end, latest_offset + 1)
        found: Iterator[int]
        if bits_base <= batch.base_offset and batch.last_offset < bits_end:
            found = iter(())  # every offset of the batch is answered by the bitmap
        else:
            found = iter(offset_map.get_many([
                record.key for record in records if record.key is not None
                and record.offset <= latest_offset and not bits_base <= record.offset < bits_end]))
        retained: list[RecordLike] = []
        keep_record = retained.append
        contains_tombstones = False
        for record in records:
            offset = record.offset
            if offset > latest_offset:
                keep = True
            elif record.key is None:
                stats.invalid_messages_read += 1
                continue
            elif bits_base <= offset < bits_end:
                relative = offset - bits_base
                keep = bool(bits[relative >> 3] & (1 << (relative & 7))) and (
                    record.value is not None or retain_deletes)
            else:
                keep = offset >= next(found) and (record.value is not None or retain_deletes)
            if keep:
                keep_record(record)
                if record.value is None:
                    contains_tombstones = True
        return retained, contains_tombstones

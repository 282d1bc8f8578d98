"""Idempotent-producer state of one partition (Kafka's ProducerStateManager / ProducerStateEntry).

Per producer id: the current epoch and metadata of the last 5 appended batches, used to answer a retried
batch with its original offsets (duplicate) and to reject sequence gaps (OUT_OF_ORDER_SEQUENCE_NUMBER) and
stale epochs (INVALID_PRODUCER_EPOCH) — kafka-protocol-notes §3.4. Transactions (Kafka's ProducerAppendInfo):
a transactional data batch opens the producer's transaction at its first offset (`ongoing_txns`, ordered by
first offset, gives the first unstable offset); a COMMIT/ABORT control batch closes it and yields a
`CompletedTxn`, which the log indexes (aborts) before calling `complete_txn`.

Snapshots are `<20-digit offset>.snapshot` files in Kafka's format (§5.2): int16 version 1, uint32 CRC-32C of
the rest, int32 count, then per producer: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64. Like Kafka, a
snapshot keeps only each producer's last batch; loading one reopens the ongoing transactions it records.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from crc32c import _crc32c as crc32c  # the extension: the package's __init__ reads its version (importlib.metadata)

from minikafka.protocol.errors import (
    CorruptMessageError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from minikafka.protocol.records import (
    CONTROL_TYPE_ABORT,
    CONTROL_TYPE_COMMIT,
    RecordBatch,
    parse_control_record_type,
    parse_end_txn_marker_coordinator_epoch,
)
from minikafka.storage.checkpoint import atomic_write

NUM_BATCHES_TO_RETAIN = 5
SNAPSHOT_VERSION = 1
SNAPSHOTS_TO_KEEP = 3
INT_MAX = 0x7FFFFFFF
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}.snapshot"


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (last_sequence == INT_MAX and next_sequence == 0)


def _decrement_sequence(sequence: int, delta: int) -> int:
    return sequence - delta if sequence >= delta else INT_MAX - (delta - sequence) + 1


class BatchMetadata(NamedTuple):
    """Sequence and offset range of one appended batch (a NamedTuple: one is made per idempotent append, and a
    frozen dataclass's field-by-field set-up cost a microsecond)."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp_ms: int

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a marker at `last_offset` (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class ProducerStateEntry:
    """One producer id's epoch and last batches (oldest first)."""

    producer_id: int
    producer_epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_timestamp_ms(self) -> int:
        return self.batches[-1].timestamp_ms if self.batches else -1

    def find_duplicate_batch(self, epoch: int, first_sequence: int, last_sequence: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for metadata in self.batches:
            if metadata.first_sequence == first_sequence and metadata.last_sequence == last_sequence:
                return metadata
        return None

    def maybe_update_producer_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, metadata: BatchMetadata) -> None:
        self.maybe_update_producer_epoch(epoch)
        self.batches.append(metadata)

    @property
    def is_retained_in_snapshot(self) -> bool:
        return bool(self.batches) or self.current_txn_first_offset >= 0

    def copy(self) -> ProducerStateEntry:
        """An independent copy (batch deque included) for readers outside the log lock (DescribeProducers)."""
        return replace(self, batches=self.batches.copy())


class ProducerStateManager:
    """All producer entries of one partition plus its snapshot files.

    Not thread-safe: the owning UnifiedLog calls it with its lock held. Readers such as the cleaner use
    `last_batch_offsets()`, which returns a copy.
    """

    def __init__(self, dir: Path, topic_partition: str = "") -> None:
        self.dir = Path(dir)
        self.topic_partition = topic_partition
        self.producers: dict[int, ProducerStateEntry] = {}
        #: first offset -> producer id of every open transaction, in first-offset order (Kafka's ongoingTxns)
        self.ongoing_txns: dict[int, int] = {}

    # ------------------------------------------------------------- validation
    def check_append(self, batch: RecordBatch, first_offset_hint: int) -> BatchMetadata | None:
        """Validate a client batch; return the cached metadata if it is a duplicate, else None.

        Raises InvalidProducerEpochError / OutOfOrderSequenceNumberError / InvalidTxnStateError per Kafka's rules.
        """
        producer_id = batch.producer_id
        entry = self.producers.get(producer_id)
        if entry is None:
            return None  # no state (new producer or state expired): any sequence is accepted
        batches = entry.batches
        if batch.producer_epoch == entry.producer_epoch and batches:
            # Every idempotent append's case, without the calls below: not a duplicate, the next sequence, and
            # no open transaction or a transactional batch. Anything else takes the general checks.
            first_sequence, last_sequence = batch.base_sequence, batch.last_sequence
            for metadata in batches:
                if metadata.first_sequence == first_sequence and metadata.last_sequence == last_sequence:
                    return metadata
            if _in_sequence(batches[-1].last_sequence, first_sequence) and (
                    entry.current_txn_first_offset < 0 or batch.is_transactional):
                return None
        duplicate = entry.find_duplicate_batch(batch.producer_epoch, batch.base_sequence, batch.last_sequence)
        if duplicate is not None:
            return duplicate
        self._check_sequence(entry, batch, first_offset_hint)
        if entry.current_txn_first_offset >= 0 and not batch.is_transactional:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {producer_id} at offset {first_offset_hint} in "
                f"partition {self.topic_partition}")
        return None

    def _check_sequence(self, entry: ProducerStateEntry, batch: RecordBatch, first_offset_hint: int) -> None:
        producer_id, epoch = batch.producer_id, batch.producer_epoch
        first_sequence = batch.base_sequence
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} at offset {first_offset_hint} in {self.topic_partition} is "
                f"{epoch}, which is smaller than the last seen epoch {entry.producer_epoch}")
        if epoch != entry.producer_epoch:
            if first_sequence != 0:
                raise OutOfOrderSequenceNumberError(
                    f"Invalid sequence number for new epoch of producer {producer_id} at offset "
                    f"{first_offset_hint} in partition {self.topic_partition}: {epoch} (request epoch), "
                    f"{first_sequence} (seq. number), {entry.producer_epoch} (current producer epoch)")
        elif (last_sequence := entry.last_sequence) == -1 and first_sequence != 0:
            raise OutOfOrderSequenceNumberError(
                f"Out of order sequence number for producer {producer_id} at offset {first_offset_hint} in "
                f"partition {self.topic_partition}: found {first_sequence} (incoming seq. number), but expected 0")
        elif last_sequence != -1 and not _in_sequence(last_sequence, first_sequence):
            raise OutOfOrderSequenceNumberError(
                f"Out of order sequence number for producer {producer_id} at offset {first_offset_hint} in "
                f"partition {self.topic_partition}: {first_sequence} (incoming seq. number), "
                f"{entry.last_sequence} (current end sequence number)")

    def check_end_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                             offset_hint: int) -> None:
        """Validate a COMMIT/ABORT marker from the transaction coordinator before it is written."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} at offset {offset_hint} in {self.topic_partition} is "
                f"{producer_epoch}, which is smaller than the last seen epoch {entry.producer_epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producerId {producer_id} at offset {offset_hint} in partition "
                f"{self.topic_partition}: {coordinator_epoch} (zombie), {entry.coordinator_epoch} (current)")

    def update(self, batch: RecordBatch) -> CompletedTxn | None:
        """Record an appended batch (offsets already assigned) carrying a producer id, without validation
        (the replication/replay origin). A marker closing a transaction returns its `CompletedTxn`; the
        transaction stays in `ongoing_txns` until the caller, having indexed it, calls `complete_txn`."""
        producer_id = batch.producer_id
        if producer_id < 0:
            return None
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id, batch.producer_epoch)
            self.producers[producer_id] = entry
        if batch.is_control:
            return self._append_end_txn_marker(entry, batch)
        metadata = BatchMetadata(batch.base_sequence, batch.last_sequence, batch.base_offset,
                                 batch.last_offset, batch.max_timestamp)
        entry.add_batch(batch.producer_epoch, metadata)
        if batch.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = batch.base_offset
            self.ongoing_txns[batch.base_offset] = producer_id
        return None

    def update_appended(self, batch: RecordBatch, first_offset: int, last_offset: int, max_timestamp: int) -> None:
        """`update` for a validated client batch (never a control batch) with a producer id, stored at
        `first_offset`..`last_offset` with `max_timestamp`: `batch` is the client's view, whose base offset is not
        the log's, so the append path needs no view of the stored copy."""
        producer_id = batch.producer_id
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id, batch.producer_epoch)
            self.producers[producer_id] = entry
        entry.add_batch(batch.producer_epoch, BatchMetadata(batch.base_sequence, batch.last_sequence, first_offset,
                                                            last_offset, max_timestamp))
        if batch.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset
            self.ongoing_txns[first_offset] = producer_id

    def _append_end_txn_marker(self, entry: ProducerStateEntry, batch: RecordBatch) -> CompletedTxn | None:
        record = next(iter(batch.records()), None)
        if record is None:
            return None  # the cleaner removed the marker's record: the transaction is long complete
        control_type = parse_control_record_type(record.key)
        if control_type not in (CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT):
            return None
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(entry.producer_id, entry.current_txn_first_offset, batch.base_offset,
                                     control_type == CONTROL_TYPE_ABORT)
        entry.maybe_update_producer_epoch(batch.producer_epoch)
        entry.coordinator_epoch = parse_end_txn_marker_coordinator_epoch(record.value)
        entry.current_txn_first_offset = -1
        return completed

    def last_stable_offset(self, completed_txn: CompletedTxn) -> int:
        """The LSO once `completed_txn` is complete: the first offset of the oldest other open transaction,
        else the offset after its marker (Kafka's ProducerStateManager.lastStableOffset)."""
        for first_offset, producer_id in self.ongoing_txns.items():
            if producer_id != completed_txn.producer_id:
                return first_offset
        return completed_txn.last_offset + 1

    def complete_txn(self, completed_txn: CompletedTxn) -> None:
        if self.ongoing_txns.pop(completed_txn.first_offset, None) is None:
            raise ValueError(f"attempted to complete transaction {completed_txn} on partition "
                             f"{self.topic_partition}, which was not started")

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction, None when none is open."""
        return next(iter(self.ongoing_txns), None)

    # ---------------------------------------------------------------- queries
    def last_batch_offsets(self) -> dict[int, int]:
        """producer id -> last offset of its last data batch (the cleaner must keep those batches)."""
        return {pid: entry.last_data_offset for pid, entry in self.producers.items() if entry.batches}

    def active_producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self.producers)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Forget producers whose last batch is now below the log start (Kafka's onLowWatermarkUpdated)."""
        for pid in [p for p, e in self.producers.items()
                    if 0 <= e.last_data_offset < log_start_offset and e.current_txn_first_offset < 0]:
            del self.producers[pid]

    def truncate_fully(self) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()

    def _rebuild_ongoing_txns(self) -> None:
        self.ongoing_txns = {
            entry.current_txn_first_offset: entry.producer_id
            for entry in sorted(self.producers.values(), key=lambda e: e.current_txn_first_offset)
            if entry.current_txn_first_offset >= 0}

    # -------------------------------------------------------------- snapshots
    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for path in self.dir.glob("*.snapshot"):
            try:
                offsets.append(int(path.name.split(".")[0]))
            except ValueError:
                continue
        return sorted(offsets)

    def take_snapshot(self, offset: int, *, durable: bool = True) -> Path:
        """Write the state as of `offset` (exclusive) atomically; keep only the newest few snapshots.

        A corrupt or missing snapshot only costs a log replay at load time, so the roll path writes it
        without fsync (`durable=False`) and the background flush makes it durable."""
        entries = [e for e in sorted(self.producers.values(), key=lambda e: e.producer_id)
                   if e.is_retained_in_snapshot]
        body = bytearray(_COUNT.pack(len(entries)))
        for entry in entries:
            last = entry.batches[-1] if entry.batches else BatchMetadata(-1, -1, -1, -1, -1)
            body += _ENTRY.pack(entry.producer_id, entry.producer_epoch, last.last_sequence, last.last_offset,
                                last.offset_delta, last.timestamp_ms, entry.coordinator_epoch,
                                entry.current_txn_first_offset)
        data = _HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(bytes(body))) + bytes(body)
        path = self.dir / snapshot_file_name(offset)
        atomic_write(path, data, durable=durable)
        for old in self.snapshot_offsets()[:-SNAPSHOTS_TO_KEEP]:
            (self.dir / snapshot_file_name(old)).unlink(missing_ok=True)
        return path

    @staticmethod
    def read_snapshot(path: Path) -> dict[int, ProducerStateEntry]:
        data = path.read_bytes()
        if len(data) < _HEADER.size + _COUNT.size:
            raise CorruptMessageError(f"snapshot {path} is truncated")
        version, crc = _HEADER.unpack_from(data)
        if version != SNAPSHOT_VERSION:
            raise CorruptMessageError(f"snapshot {path} has unknown version {version}")
        if crc32c.crc32c(data[_HEADER.size:]) != crc:
            raise CorruptMessageError(f"snapshot {path} failed its CRC check")
        (count,) = _COUNT.unpack_from(data, _HEADER.size)
        if len(data) != _HEADER.size + _COUNT.size + count * _ENTRY.size:
            raise CorruptMessageError(f"snapshot {path} has the wrong size for {count} entries")
        producers = {}
        for values in _ENTRY.iter_unpack(data[_HEADER.size + _COUNT.size:]):
            pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch, txn_first = values
            entry = ProducerStateEntry(pid, epoch, coordinator_epoch=coordinator_epoch,
                                       current_txn_first_offset=txn_first)
            if last_seq >= 0 or last_offset >= 0:
                entry.batches.append(BatchMetadata(_decrement_sequence(last_seq, offset_delta), last_seq,
                                                   last_offset - offset_delta, last_offset, timestamp))
            producers[pid] = entry
        return producers

    def load_latest_snapshot(self, log_end_offset: int) -> int | None:
        """Restore the newest valid snapshot at or below the log end; return its offset (None: none usable).

        Snapshots above the log end (their data was truncated away) and corrupt ones are deleted.
        """
        self.truncate_fully()
        for offset in reversed(self.snapshot_offsets()):
            path = self.dir / snapshot_file_name(offset)
            if offset > log_end_offset:
                path.unlink(missing_ok=True)
                continue
            try:
                self.producers = self.read_snapshot(path)
            except CorruptMessageError:
                path.unlink(missing_ok=True)
                continue
            self._rebuild_ongoing_txns()
            return offset
        return None

    def load_snapshot_at_or_below(self, offset: int) -> int | None:
        """Like `load_latest_snapshot` for the state as of `offset`, but deleting nothing (log recovery
        builds a throwaway copy of the state at a segment's base offset)."""
        self.truncate_fully()
        for snapshot_offset in reversed(self.snapshot_offsets()):
            if snapshot_offset > offset:
                continue
            try:
                self.producers = self.read_snapshot(self.dir / snapshot_file_name(snapshot_offset))
            except CorruptMessageError:
                continue
            self._rebuild_ongoing_txns()
            return snapshot_offset
        return None

    def delete_snapshots_below(self, offset: int) -> None:
        for old in self.snapshot_offsets():
            if old < offset:
                (self.dir / snapshot_file_name(old)).unlink(missing_ok=True)

    def delete_all_snapshots(self) -> None:
        for old in self.snapshot_offsets():
            (self.dir / snapshot_file_name(old)).unlink(missing_ok=True)

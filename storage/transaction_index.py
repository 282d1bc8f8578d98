"""A segment's aborted-transaction index, `<base>.txnindex`, in Kafka's format (kafka-protocol-notes §5.2).

34-byte entries: int16 version (0), int64 producerId, int64 firstOffset, int64 lastOffset,
int64 lastStableOffset. One entry per ABORT marker written into the segment, in marker order, so `last_offset`
(the marker's offset) strictly rises. Read committed fetches use it to tell consumers which producers'
records to drop (Kafka's TransactionIndex / AbortedTxn).

Like Kafka the file is created lazily on the first append: a segment without aborted transactions has no
`.txnindex` file. We keep that as an invariant (the file exists iff it holds entries), so `reset()` and a
truncation to nothing remove it. Entries are mirrored in memory for lookups.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from minikafka.storage.indexes import IndexCorruptError

TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE_BYTES = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """One transaction-index entry (Kafka's AbortedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(TXN_INDEX_VERSION, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)


class TransactionIndex:
    """Owns one `.txnindex` file and its in-memory copy.

    Not thread-safe: the owning segment's UnifiedLog lock is held by every caller.
    """

    def __init__(self, path: Path, start_offset: int) -> None:
        self.path = Path(path)
        self.start_offset = start_offset
        self._file: BinaryIO | None = None
        self._entries: list[AbortedTransaction] = []
        self._torn_bytes = 0
        self._bad_version: int | None = None
        if self.path.exists():
            self._load(self.path.read_bytes())

    def _load(self, data: bytes) -> None:
        self._torn_bytes = len(data) % ENTRY_SIZE_BYTES
        whole = len(data) - self._torn_bytes
        for version, producer_id, first, last, lso in _ENTRY.iter_unpack(data[:whole]):
            if version != TXN_INDEX_VERSION and self._bad_version is None:
                self._bad_version = version
            self._entries.append(AbortedTransaction(producer_id, first, last, lso))

    # ------------------------------------------------------------------ queries
    @property
    def entries(self) -> int:
        return len(self._entries)

    @property
    def last_offset(self) -> int | None:
        return self._entries[-1].last_offset if self._entries else None

    def all_aborted_transactions(self) -> list[AbortedTransaction]:
        return list(self._entries)

    def collect_aborted_transactions(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> tuple[list[AbortedTransaction], bool]:
        """Entries overlapping `[fetch_offset, upper_bound_offset)`; the flag is True ("complete") once an
        entry whose last stable offset reaches the upper bound was seen: no later segment can hold a
        transaction that overlaps the range (Kafka's TxnIndexSearchResult)."""
        found = []
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def sanity_check(self) -> None:
        """Raise IndexCorruptError for torn entries, an unknown version or an entry below the segment."""
        if self._torn_bytes:
            raise IndexCorruptError(f"transaction index {self.path} had {self._torn_bytes} trailing bytes")
        if self._bad_version is not None:
            raise IndexCorruptError(f"unexpected aborted transaction version {self._bad_version} in {self.path}")
        for txn in self._entries:
            if txn.last_offset < self.start_offset:
                raise IndexCorruptError(
                    f"Last offset of aborted transaction {txn} in index {self.path} is less than start offset "
                    f"{self.start_offset}")

    # ----------------------------------------------------------------- updates
    def append(self, txn: AbortedTransaction) -> None:
        last = self.last_offset
        if last is not None and last >= txn.last_offset:
            raise IndexCorruptError(
                f"The last offset of appended transactions must increase sequentially, but {txn.last_offset} is "
                f"not greater than current last offset {last} of index {self.path}")
        self._entries.append(txn)
        file = self._open()
        file.write(txn.to_bytes())

    def _open(self) -> BinaryIO:
        if self._file is None or self._file.closed:
            self._file = open(self.path, "r+b" if self.path.exists() else "w+b", buffering=0)  # noqa: SIM115
            if self._torn_bytes:
                self._file.truncate(len(self._entries) * ENTRY_SIZE_BYTES)
                self._torn_bytes = 0
            self._file.seek(0, os.SEEK_END)
        return self._file

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker (last offset) is at or above `offset`."""
        keep = next((i for i, txn in enumerate(self._entries) if txn.last_offset >= offset), len(self._entries))
        if keep == len(self._entries) and not self._torn_bytes:
            return
        del self._entries[keep:]
        if not self._entries:
            self.reset()
            return
        file = self._open()
        file.truncate(keep * ENTRY_SIZE_BYTES)
        file.seek(0, os.SEEK_END)

    def reset(self) -> None:
        """Forget every entry; the file goes too (it comes back with the next append)."""
        self._entries.clear()
        self._torn_bytes = 0
        self._bad_version = None
        self.close()
        self.path.unlink(missing_ok=True)

    # ------------------------------------------------------------------- files
    def flush(self) -> None:
        if self._file is not None and not self._file.closed:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None and not self._file.closed:
            self._file.close()
        self._file = None

    def delete(self) -> bool:
        """Close and unlink the file; True if there was one."""
        self.close()
        existed = self.path.exists()
        self.path.unlink(missing_ok=True)
        return existed

    def rename_to(self, path: Path) -> None:
        """Move the file (if any: it is created lazily) and remember the new name either way."""
        path = Path(path)
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    @property
    def size_bytes(self) -> int:
        return len(self._entries) * ENTRY_SIZE_BYTES

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path.name}, entries={len(self._entries)})"

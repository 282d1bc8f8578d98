"""Sparse segment indexes in Kafka's on-disk format (kafka-protocol-notes §5.2).

`OffsetIndex` (`.index`): 8-byte entries, int32 relative offset + int32 byte position in the `.log`.
`TimeIndex` (`.timeindex`): 12-byte entries, int64 timestamp + int32 relative offset.

Entries live in memory, where lookups read them, as `array`s of machine integers (the file's size, where lists of
ints took ten times as much), and reach the file in runs: once `WRITE_AFTER_ENTRIES` are waiting, and on
`write_pending()` (the segment's roll), `flush()`, `close()` and renames. One `write` per entry cost a syscall per
produced batch; Kafka avoids it with a memory-mapped file. The file is therefore always whole entries, a prefix of
the index: a prefix is a valid sparse index, and after a crash the log loader rebuilds every segment past the
recovery point anyway (a flush writes the entries before the recovery point passes them). Unlike Kafka we never
preallocate, so nothing needs trimming; the capacity (`segment.index.bytes // entry size`) is still enforced so
that "index full" rolls the segment.

An index is read lazily, on its first lookup or change (Kafka's LazyIndex): opening a log reads only the last
entry of each index (`last_offset`, `last_entry`), so a broker with thousands of old segments neither reads nor
holds their indexes until a fetch or a cleaning round needs one. The log loader sanity-checks the indexes of the
segments from the recovery point on only; older ones are trusted, as Kafka does (their segments were flushed).
"""

from __future__ import annotations

import bisect
import os
import struct
import sys
from array import array
from pathlib import Path
from typing import BinaryIO

from minikafka.protocol.errors import CorruptMessageError

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_BIG_ENDIAN = sys.byteorder == "big"

#: entries kept in memory only before they are written out in one run (a page of offset-index entries)
WRITE_AFTER_ENTRIES = 512


class IndexCorruptError(CorruptMessageError):
    """An index file failed its sanity check; the caller rebuilds it from the log."""


def _int_array(typecode: str, data: bytes | bytearray | memoryview) -> array[int]:
    """Big-endian integers of one size, as an array of machine integers."""
    values = array(typecode)
    values.frombytes(data)
    if not _BIG_ENDIAN:
        values.byteswap()
    return values


def _column(raw: bytes, start: int, width: int, stride: int) -> bytearray:
    """Bytes `start`..`start + width` of every `stride`-byte entry of `raw`, packed (slicing in C, no loop over
    entries)."""
    count = len(raw) // stride
    packed = bytearray(width * count)
    for k in range(width):
        packed[k::width] = raw[start + k::stride]
    return packed


class _IndexFile:
    """Shared file handling: load whole entries (on first use), write the pending ones, truncate. Not
    thread-safe (log lock)."""

    __slots__ = (
        "_entries_on_disk",
        "_file",
        "_loaded",
        "_size_on_open",
        "_torn_bytes",
        "base_offset",
        "created_new",
        "max_entries",
        "path",
    )

    entry_size = 8

    def __init__(self, path: Path, base_offset: int, max_index_size_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size_bytes // self.entry_size)
        try:
            self._size_on_open = os.stat(path).st_size
            #: the file did not exist when opened (a non-empty segment must then rebuild it)
            self.created_new = False
        except FileNotFoundError:
            self._size_on_open = 0
            self.created_new = True
        self._loaded = False
        self._torn_bytes = self._size_on_open % self.entry_size
        self._entries_on_disk = self._size_on_open // self.entry_size
        self._file: BinaryIO | None = None
        if self.created_new:  # nothing to read: create the file now, as before
            self._ensure_loaded()

    @property
    def is_loaded(self) -> bool:
        """Whether the entries were read into memory (the first lookup or change does it)."""
        return self._loaded

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        data = self.path.read_bytes() if self.path.exists() else b""
        self._torn_bytes = len(data) % self.entry_size
        whole = len(data) - self._torn_bytes
        self._load(memoryview(data)[:whole])
        self._entries_on_disk = self.entries
        file = open(self.path, "r+b" if self.path.exists() else "w+b", buffering=0)  # noqa: SIM115
        if self._torn_bytes:
            file.truncate(whole)
        file.seek(0, os.SEEK_END)
        self._file = file
        self._loaded = True

    def _last_entry_on_disk(self) -> bytes | None:
        """The file's last whole entry, read without loading the index (None when there is none)."""
        count = self._entries_on_disk
        if count == 0:
            return None
        with open(self.path, "rb") as file:
            file.seek((count - 1) * self.entry_size)
            data = file.read(self.entry_size)
        return data if len(data) == self.entry_size else None

    def _load(self, data: memoryview) -> None:
        raise NotImplementedError

    @property
    def entries(self) -> int:
        raise NotImplementedError

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return self.entries * self.entry_size

    def _packed(self, start: int) -> bytes:
        """Entries `start`.. in the file's format."""
        raise NotImplementedError

    def _entry_added(self) -> None:
        if self.entries - self._entries_on_disk >= WRITE_AFTER_ENTRIES:
            self.write_pending()

    def write_pending(self) -> None:
        """Write the entries only in memory to the file, all or none: on an OSError (ENOSPC) the file is cut back
        to the entries it had, and they stay pending in memory."""
        if not self._loaded or self.entries <= self._entries_on_disk:
            return
        view = memoryview(self._packed(self._entries_on_disk))
        written = 0
        file = self._file
        assert file is not None
        try:
            while written < len(view):
                written += file.write(view[written:]) or 0
        except OSError:
            self._truncate_file(self._entries_on_disk)
            raise
        self._entries_on_disk = self.entries

    def _truncate_entries(self, count: int) -> None:
        """Cut the file to `count` entries if it holds more (the caller has cut memory)."""
        if count < self._entries_on_disk:
            self._truncate_file(count)
            self._entries_on_disk = count

    def _truncate_file(self, count: int) -> None:
        file = self._file
        assert file is not None
        file.truncate(count * self.entry_size)
        file.seek(0, os.SEEK_END)

    def flush(self) -> None:
        self.write_pending()
        self.fsync()

    def fsync(self) -> None:
        """fsync what was written (no pending entries are written: that needs the log lock, this does not). A
        file closed meanwhile raises ValueError; an index never loaded has nothing unsynced."""
        file = self._file
        if file is not None:
            os.fsync(file.fileno())

    def close(self) -> None:
        if self._file is not None and not self._file.closed:
            try:
                self.write_pending()
            finally:
                self._file.close()

    def rename_to(self, path: Path) -> None:
        self.write_pending()
        if self._loaded or self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        if self._file is not None and not self._file.closed:
            self._file.close()
        self.path.unlink(missing_ok=True)

    def _relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} does not fit relative to base offset {self.base_offset}")
        return relative


class OffsetIndex(_IndexFile):
    """Offset -> file position lookup for one segment. Not thread-safe: the caller holds the log lock."""

    __slots__ = ("_positions", "_relative_offsets")

    entry_size = 8

    def _load(self, data: memoryview) -> None:
        pairs = _int_array("i", data)
        self._relative_offsets: array[int] = pairs[0::2]
        self._positions: array[int] = pairs[1::2]

    @property
    def entries(self) -> int:
        if not self._loaded:
            return self._entries_on_disk
        return len(self._relative_offsets)

    @property
    def last_entry(self) -> tuple[int, int]:
        """(offset, position) of the last entry, or (base_offset, 0) when empty; read from the file's last entry
        when the index is not loaded."""
        if not self._loaded:
            data = self._last_entry_on_disk()
            if data is None:
                return self.base_offset, 0
            relative, position = _OFFSET_ENTRY.unpack(data)
            return self.base_offset + relative, position
        if not self._relative_offsets:
            return self.base_offset, 0
        return self.base_offset + self._relative_offsets[-1], self._positions[-1]

    @property
    def last_offset(self) -> int:
        return self.last_entry[0]

    def entry(self, n: int) -> tuple[int, int]:
        self._ensure_loaded()
        return self.base_offset + self._relative_offsets[n], self._positions[n]

    def append(self, offset: int, position: int) -> None:
        # once per appended batch of index.interval.bytes: `is_full`, `_relative` and `_entry_added` inline
        if not self._loaded:
            self._ensure_loaded()
        relative_offsets = self._relative_offsets
        count = len(relative_offsets)
        if count >= self.max_entries:
            raise ValueError(f"offset index {self.path} is full")
        relative = offset - self.base_offset
        if not 0 <= relative <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} does not fit relative to base offset {self.base_offset}")
        if count and relative <= relative_offsets[-1]:
            raise ValueError(f"offset index entry {offset} is not above the last one ({self.last_offset})")
        relative_offsets.append(relative)
        self._positions.append(position)
        if count + 1 - self._entries_on_disk >= WRITE_AFTER_ENTRIES:
            self.write_pending()

    def _packed(self, start: int) -> bytes:
        return b"".join(map(_OFFSET_ENTRY.pack, self._relative_offsets[start:], self._positions[start:]))

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry <= offset, or (base_offset, 0)."""
        self._ensure_loaded()
        i = bisect.bisect_right(self._relative_offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._relative_offsets[i], self._positions[i]

    def positions_below(self, position: int, floor: int) -> list[int]:
        """The indexed batch positions in `[floor, position)`, nearest first, at most three: where a forward scan
        of batch lengths can start instead of at `floor` (each entry is the start of a batch)."""
        self._ensure_loaded()
        positions = self._positions
        i = bisect.bisect_left(positions, position)
        return [found for found in positions[max(0, i - 3):i][::-1] if found >= floor]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        self._ensure_loaded()
        self.truncate_entries(bisect.bisect_left(self._relative_offsets, offset - self.base_offset))

    def truncate_entries(self, keep: int) -> None:
        """Keep the first `keep` entries, in memory and on disk."""
        self._ensure_loaded()
        del self._relative_offsets[keep:]
        del self._positions[keep:]
        self._truncate_entries(keep)

    def sanity_check(self, log_size_bytes: int) -> None:
        """Raise IndexCorruptError unless offsets and positions strictly rise and stay inside the log."""
        self._ensure_loaded()
        if self._torn_bytes:
            raise IndexCorruptError(f"index {self.path} had {self._torn_bytes} trailing bytes")
        previous_offset, previous_position = -1, -1
        for relative, position in zip(self._relative_offsets, self._positions, strict=True):
            if relative <= previous_offset or position <= previous_position or position >= log_size_bytes:
                raise IndexCorruptError(f"corrupt offset index {self.path} at relative offset {relative}")
            previous_offset, previous_position = relative, position


class TimeIndex(_IndexFile):
    """Timestamp -> offset lookup for one segment. Not thread-safe: the caller holds the log lock."""

    __slots__ = ("_relative_offsets", "_timestamps")

    entry_size = 12

    def _load(self, data: memoryview) -> None:
        raw = bytes(data)
        self._timestamps: array[int] = _int_array("q", _column(raw, 0, 8, self.entry_size))
        self._relative_offsets: array[int] = _int_array("i", _column(raw, 8, 4, self.entry_size))

    @property
    def entries(self) -> int:
        if not self._loaded:
            return self._entries_on_disk
        return len(self._timestamps)

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base_offset) when empty; read from the file's last
        entry when the index is not loaded."""
        if not self._loaded:
            data = self._last_entry_on_disk()
            if data is None:
                return -1, self.base_offset
            timestamp, relative = _TIME_ENTRY.unpack(data)
            return timestamp, self.base_offset + relative
        if not self._timestamps:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._relative_offsets[-1]

    def entry(self, n: int) -> tuple[int, int]:
        self._ensure_loaded()
        return self._timestamps[n], self.base_offset + self._relative_offsets[n]

    def maybe_append(self, timestamp_ms: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append unless the timestamp is not larger than the last entry's (timestamps strictly rise)."""
        if not self._loaded:
            self._ensure_loaded()
        if self._timestamps and timestamp_ms <= self._timestamps[-1]:
            return
        if timestamp_ms < 0:
            return
        relative = self._relative(offset)
        if self._relative_offsets and relative < self._relative_offsets[-1]:
            return
        if self.is_full and not skip_full_check:
            raise ValueError(f"time index {self.path} is full")
        self._timestamps.append(timestamp_ms)
        self._relative_offsets.append(relative)
        self._entry_added()

    def _packed(self, start: int) -> bytes:
        return b"".join(map(_TIME_ENTRY.pack, self._timestamps[start:], self._relative_offsets[start:]))

    def lookup(self, timestamp_ms: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, or (-1, base_offset)."""
        self._ensure_loaded()
        i = bisect.bisect_right(self._timestamps, timestamp_ms) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._relative_offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= `offset`."""
        self._ensure_loaded()
        self.truncate_entries(bisect.bisect_left(self._relative_offsets, offset - self.base_offset))

    def truncate_entries(self, keep: int) -> None:
        """Keep the first `keep` entries, in memory and on disk."""
        self._ensure_loaded()
        del self._timestamps[keep:]
        del self._relative_offsets[keep:]
        self._truncate_entries(keep)

    def sanity_check(self, next_offset: int) -> None:
        """Raise IndexCorruptError unless timestamps strictly rise and offsets stay inside the segment."""
        self._ensure_loaded()
        if self._torn_bytes:
            raise IndexCorruptError(f"time index {self.path} had {self._torn_bytes} trailing bytes")
        previous_timestamp, previous_offset = -1, -1
        for timestamp, relative in zip(self._timestamps, self._relative_offsets, strict=True):
            if timestamp <= previous_timestamp or relative < previous_offset:
                raise IndexCorruptError(f"corrupt time index {self.path} at timestamp {timestamp}")
            if self.base_offset + relative >= max(next_offset, self.base_offset + 1):
                raise IndexCorruptError(f"time index {self.path} points past the log end")
            previous_timestamp, previous_offset = timestamp, relative

"""One `.log` file of v2 record batches: append at the end, pread-based reads, batch-header scans, truncation.

Reads use `os.pread`, so they never move a shared file position; appends go through the same descriptor at
the tracked end. Not thread-safe on its own: the owning log's lock serialises appends, truncation and renames.

Filling ahead (an active segment's file, `fill_ahead_bytes`): before an append would pass the filled end, zeros are
written up to the next multiple of `fill_ahead_bytes`, so the appends after it overwrite page-cache pages instead of
extending the file. On ext4 the page cache then holds that range in large folios (a write's folio follows its size
and alignment): 16 KB appends cost ~1.7 us each plus ~2.8 us of zeros instead of ~10.3 us (no size change, no block
reservation each time), and a 1 MiB `pread` of them ~37-40 us instead of ~95-150 (DESIGN.md, "Filling the active
segment ahead"; 256 KiB, since 1 MiB folios cost ten times more to allocate once the page cache has grown). The
zeros are past `size_bytes`, so no read sees them; `trim()` cuts them off when the segment stops being active and at
close, and a crash leaves them for the next load, which ends the log at the first batch of length 0 (as Kafka's
recovery of a preallocated segment does). Not on tmpfs or ramfs (`fill_ahead_bytes_for`), where the zeros would be
memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, RecordBatch
from minikafka.protocol.records.batch_header import HEADER_TO_LAST_OFFSET_DELTA, LENGTH_PREFIX

_LENGTH = LENGTH_PREFIX
_HEADER_PREFIX = HEADER_TO_LAST_OFFSET_DELTA
_SCAN_CHUNK_BYTES = 1 << 20
#: how far an active segment's file is filled ahead of its appends (see the module docs)
FILL_AHEAD_BYTES = 256 << 10
_ZEROS = memoryview(bytes(FILL_AHEAD_BYTES))
#: file systems whose files are memory: zeros filled ahead would hold RAM, and writes already allocate no blocks
_MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs"})
_fill_ahead_by_device: dict[int, int] = {}


def fill_ahead_bytes_for(directory: Path) -> int:
    """FILL_AHEAD_BYTES for a segment in `directory`, or 0 on tmpfs and ramfs (read from /proc/self/mountinfo once
    per device; any doubt, such as another OS, means no fill). Any thread: two racing first calls store one answer."""
    device = os.stat(directory).st_dev
    known = _fill_ahead_by_device.get(device)
    if known is None:
        known = _fill_ahead_by_device[device] = FILL_AHEAD_BYTES if _file_system_type(device) not in (
            None, *_MEMORY_FILE_SYSTEMS) else 0
    return known


def _file_system_type(device: int) -> str | None:
    """The type of the file system on `device` (mountinfo's field 3 is the major:minor of st_dev)."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields, _, after = line.partition(" - ")
                parts = fields.split()
                if len(parts) > 2 and parts[2] == wanted and after:
                    return after.split()[0]
    except OSError:
        pass
    return None


class FileRecords:
    """An append-only `.log` file; the size is tracked in memory (the file is the source of truth at open)."""

    def __init__(self, path: Path, *, fill_ahead_bytes: int = 0) -> None:
        self.path = path
        flags = os.O_RDWR | os.O_CREAT
        self._fd = os.open(path, flags, 0o644)
        self._size = os.fstat(self._fd).st_size
        assert 0 <= fill_ahead_bytes <= FILL_AHEAD_BYTES
        self._fill_ahead_bytes = fill_ahead_bytes
        #: where the file ends on disk: `_size`, or past it by the zeros filled ahead
        self._filled_end = self._size

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end; return the position it starts at. All or nothing: on an OSError (ENOSPC) the
        file is cut back to its size before the call."""
        position = self._size
        view = memoryview(data)
        length = len(view)
        end = position + length
        if end > self._filled_end and 0 < length < self._fill_ahead_bytes:
            self._fill_ahead(end)
        written = 0
        try:
            while written < length:
                written += os.pwrite(self._fd, view[written:], position + written)
        except OSError:
            if written:  # a full disk took part of it: the file ends where it did before the attempt
                os.ftruncate(self._fd, position)
                self._filled_end = position
            raise
        self._size = end
        if end > self._filled_end:  # not filled ahead (no fill, too large, or no room for the zeros): it grew the file
            self._filled_end = end
        return position

    def _fill_ahead(self, end: int) -> None:
        """Zeros from the filled end to the multiple of `fill_ahead_bytes` at or after `end`. Best effort: on an
        OSError (a full disk) the file is cut back to where it was and the append goes on without them."""
        start = self._filled_end
        fill_end = -(-end // self._fill_ahead_bytes) * self._fill_ahead_bytes
        position = start
        try:
            while position < fill_end:
                position += os.pwrite(self._fd, _ZEROS[:min(fill_end - position, len(_ZEROS))], position)
        except OSError:
            if position > start:
                os.ftruncate(self._fd, start)
            return
        self._filled_end = fill_end

    def trim(self) -> None:
        """Cut off the zeros filled ahead, so the file ends at its last batch (Kafka's FileRecords.trim)."""
        if self._filled_end > self._size and self._fd >= 0:
            os.ftruncate(self._fd, self._size)
            self._filled_end = self._size

    def read(self, position: int, size: int) -> bytes:
        """Up to `size` bytes from `position` (fewer at the end of the file)."""
        size = max(0, min(size, self._size - position))
        if size == 0:
            return b""
        chunks: list[bytes] = []
        remaining = size
        while remaining > 0:
            chunk = os.pread(self._fd, remaining, position + size - remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def read_batch(self, position: int) -> RecordBatch | None:
        """The whole batch at `position`, or None if it is not completely in the file."""
        header = self.read(position, LOG_OVERHEAD)
        if len(header) < LOG_OVERHEAD:
            return None
        _, length = _LENGTH.unpack(header)
        if length + LOG_OVERHEAD < BATCH_HEADER_SIZE:
            raise CorruptMessageError(f"batch length {length} at position {position} of {self.path}")
        data = self.read(position, length + LOG_OVERHEAD)
        if len(data) < length + LOG_OVERHEAD:
            return None
        return RecordBatch(data, 0)

    def header_at(self, position: int) -> tuple[int, int, int] | None:
        """(base offset, size in bytes, last offset) of the batch at `position`, or None past a torn tail."""
        data = self.read(position, _HEADER_PREFIX.size)
        if len(data) < _HEADER_PREFIX.size:
            return None
        base_offset, length, _, _, _, _, last_offset_delta = _HEADER_PREFIX.unpack(data)
        size = length + LOG_OVERHEAD
        if size < BATCH_HEADER_SIZE or position + size > self._size:
            return None
        return base_offset, size, base_offset + last_offset_delta

    def batches(
        self, start_position: int = 0, end_position: int | None = None, *, allow_torn_tail: bool = False
    ) -> Iterator[tuple[int, RecordBatch]]:
        """(position, batch) for each whole batch from `start_position`.

        Reads in chunks of about 1 MiB; a batch larger than the chunk is read on its own. Raises
        CorruptMessageError if a batch length is smaller than the v2 header, or if a batch's length runs past
        the end of the file: appends are whole batches, so outside crash recovery that is corruption (spec S52:
        the cleaner must mark the partition uncleanable rather than drop the rest of the segment). With
        `allow_torn_tail` (loading after a crash) the iteration just stops there.
        """
        end = self._size if end_position is None else min(end_position, self._size)
        position = start_position
        while position + LOG_OVERHEAD <= end:
            chunk = self.read(position, min(_SCAN_CHUNK_BYTES, end - position))
            offset = 0
            while offset + LOG_OVERHEAD <= len(chunk):
                _, length = _LENGTH.unpack_from(chunk, offset)
                size = length + LOG_OVERHEAD
                if size < BATCH_HEADER_SIZE:
                    if allow_torn_tail and length == 0:  # zeros filled ahead of the appends: the log ends here
                        return
                    raise CorruptMessageError(f"batch length {length} at position {position + offset}")
                if offset + size > len(chunk):
                    break
                yield position + offset, RecordBatch(chunk, offset)
                offset += size
            if offset == 0:
                batch = self.read_batch(position)
                if batch is None:
                    if allow_torn_tail:
                        return
                    _, length = _LENGTH.unpack(self.read(position, LOG_OVERHEAD))
                    raise CorruptMessageError(
                        f"batch of {length + LOG_OVERHEAD} bytes at position {position} of {self.path} is "
                        f"larger than the {self._size - position} bytes left in the file")
                if position + batch.size_bytes > end:
                    return
                yield position, batch
                offset = batch.size_bytes
            position += offset
        if not allow_torn_tail and end_position is None and position < end:
            raise CorruptMessageError(f"{end - position} trailing bytes at position {position} of {self.path}")

    def is_zeros_from(self, position: int) -> bool:
        """Whether every byte from `position` to the end of the file is zero (what filling ahead leaves)."""
        while position < self._size:
            chunk = self.read(position, _SCAN_CHUNK_BYTES)
            if chunk.count(0) != len(chunk):
                return False
            position += len(chunk)
        return True

    def truncate_to(self, size_bytes: int) -> None:
        if size_bytes < self._filled_end:
            os.ftruncate(self._fd, size_bytes)
            self._filled_end = size_bytes
            self._size = min(self._size, size_bytes)

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        """Trim, then close; an OSError of the trim is raised after the close (the file keeps its zeros, which the
        segment cuts off when it is next loaded)."""
        if self._fd >= 0:
            try:
                self.trim()
            finally:
                os.close(self._fd)
                self._fd = -1

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def last_modified_ms(self) -> int:
        return os.stat(self.path).st_mtime_ns // 1_000_000

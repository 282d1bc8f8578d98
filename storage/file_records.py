"""One `.log` file of v2 record batches: append at the end, pread-based reads, batch-header scans, truncation.

Reads use `os.pread`, so they never move a shared file position; appends go through the same descriptor at
the tracked end. Not thread-safe on its own: the owning log's lock serialises appends, truncation and renames.
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


class FileRecords:
    """An append-only `.log` file; the size is tracked in memory (the file is the source of truth at open)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        flags = os.O_RDWR | os.O_CREAT
        self._fd = os.open(path, flags, 0o644)
        self._size = os.fstat(self._fd).st_size

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
        written = 0
        try:
            while written < len(view):
                written += os.pwrite(self._fd, view[written:], position + written)
        except OSError:
            if written:  # a full disk took part of it: the file ends where it did before the attempt
                os.ftruncate(self._fd, position)
            raise
        self._size += written
        return position

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

    def truncate_to(self, size_bytes: int) -> None:
        if size_bytes < self._size:
            os.ftruncate(self._fd, size_bytes)
            self._size = size_bytes

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
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

"""The retained-offset plan file of exact compaction (issue 10): its writer, its validating reader, its cursor.

A plan names, for one partition and an offset range `[start_offset, end_offset)`, the offsets an exact round keeps:
the latest record of each key in the range. Keyless records, control batches and records of aborted transactions are
not in it (the cleaner applies its usual rules to them). The file, all integers big-endian:

    header   struct ">8s16siqq": magic b"MKPLAN1\\n", topic id (the topic's UUID, 16 raw bytes), partition,
             start_offset, end_offset                                                               44 bytes
    body     the retained offsets, each ">q", strictly increasing, each in [start_offset, end_offset)  8 * count
    trailer  struct ">qI": count, CRC-32C (the `crc32c` package) of header + body                   12 bytes

Plans of 100M keys are ~800 MB: everything here streams. The writer packs what it is given; the reader validates a
whole file in one pass of 64 KiB reads (magic, topic id, partition, range, order, range of each offset, count,
checksum, truncation) and then hands the offsets out a chunk at a time (`RetainedOffsetCursor`), so memory stays
constant whatever the count. Pure: no asyncio, no import above `cleaner` (the Spark side imports the writer).
"""

from __future__ import annotations

import base64
import os
import struct
import sys
import uuid
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from operator import lt
from typing import BinaryIO

from crc32c import _crc32c as crc32c  # the extension: the package's __init__ reads its version (importlib.metadata)

MAGIC = b"MKPLAN1\n"
HEADER = struct.Struct(">8s16siqq")
TRAILER = struct.Struct(">qI")
OFFSET_BYTES = 8
HEADER_BYTES = HEADER.size  # 44
TRAILER_BYTES = TRAILER.size  # 12
#: bytes of body read (and offsets held) at a time: 8,192 offsets
READ_CHUNK_BYTES = 64 * 1024
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_SWAP = sys.byteorder == "little"  # the file is big-endian; array("q") is native


class InvalidRetainedOffsetPlanError(ValueError):
    """A plan the broker refuses: malformed, corrupt, truncated, for another topic or partition, or out of range.

    The message names what is wrong; nothing was deleted because of the plan."""


def kafka_topic_id(topic_id: bytes | uuid.UUID) -> str:
    """A topic id as Kafka prints it (Uuid.toString: URL-safe base64 of the 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(_topic_id_bytes(topic_id)).decode().rstrip("=")


def plan_size_bytes(count: int) -> int:
    """The exact file size of a plan of `count` offsets."""
    return HEADER_BYTES + OFFSET_BYTES * count + TRAILER_BYTES


def _topic_id_bytes(topic_id: bytes | uuid.UUID) -> bytes:
    raw = topic_id.bytes if isinstance(topic_id, uuid.UUID) else bytes(topic_id)
    if len(raw) != 16:
        raise ValueError(f"a topic id is 16 bytes, got {len(raw)}")
    return raw


def _packed(offsets: array[int]) -> bytes:
    if _SWAP:
        offsets.byteswap()
    return offsets.tobytes()


class RetainedOffsetPlanWriter:
    """Writes one plan to a binary file object, streaming: `add` / `add_many` in increasing order, then `finish`.

    Owns nothing but the running checksum and count; the caller owns (opens and closes) the file. Refuses, with
    ValueError and before writing it, an offset that is not above the previous one or not in the range. Not
    thread-safe."""

    def __init__(self, file: BinaryIO, topic_id: bytes | uuid.UUID, partition: int, start_offset: int,
                 end_offset: int) -> None:
        if not 0 <= partition <= _INT32_MAX:
            raise ValueError(f"partition {partition} is not a valid partition number")
        if not 0 <= start_offset <= end_offset <= _INT64_MAX:
            raise ValueError(f"invalid range [{start_offset}, {end_offset})")
        self.topic_id = _topic_id_bytes(topic_id)
        self.partition = partition
        self.start_offset = start_offset
        self.end_offset = end_offset
        self.count = 0
        self._file = file
        self._last_offset = start_offset - 1
        self._finished = False
        header = HEADER.pack(MAGIC, self.topic_id, partition, start_offset, end_offset)
        self._crc = crc32c.crc32c(header)
        file.write(header)

    def add(self, offset: int) -> None:
        """Append one retained offset (above the previous one, inside the range)."""
        self.add_many((offset,))

    def add_many(self, offsets: Iterable[int]) -> None:
        """Append retained offsets, strictly increasing and above those added before, inside the range."""
        if self._finished:
            raise ValueError("the plan is finished")
        values = offsets if isinstance(offsets, list) else list(offsets)
        if not values:
            return
        first, last = values[0], values[-1]
        if first <= self._last_offset:
            raise ValueError(f"offset {first} is not above the previous offset {self._last_offset}"
                             if self.count else f"offset {first} is below the range start {self.start_offset}")
        if not all(map(lt, values, islice(values, 1, None))):
            position = next(i for i in range(1, len(values)) if values[i] <= values[i - 1])
            raise ValueError(f"offsets are not strictly increasing: {values[position]} after {values[position - 1]}")
        if last >= self.end_offset:
            raise ValueError(f"offset {last} is not below the range end {self.end_offset}")
        data = _packed(array("q", values))
        self._crc = crc32c.crc32c(data, self._crc)
        self._file.write(data)
        self.count += len(values)
        self._last_offset = last

    def finish(self) -> int:
        """Write the trailer; returns the count. The caller flushes and closes the file."""
        if self._finished:
            raise ValueError("the plan is finished")
        self._finished = True
        self._file.write(TRAILER.pack(self.count, self._crc))
        return self.count


@dataclass(frozen=True, slots=True)
class RetainedOffsetPlan:
    """A plan file that passed `read_plan`'s validation: where it is and what its header and trailer say.

    Picklable (a cleaner worker process reopens the file by path). Immutable; safe to share between threads."""

    path: str
    topic_id: bytes
    partition: int
    start_offset: int
    end_offset: int
    count: int
    #: the highest retained offset (-1 when the plan is empty)
    last_offset: int = -1

    @property
    def topic_uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.topic_id)

    def describe(self) -> dict[str, int]:
        """The plan as the admin endpoint reports it."""
        return {"count": self.count, "start_offset": self.start_offset, "end_offset": self.end_offset}

    def chunks(self) -> Iterator[array[int]]:
        """The offsets in order, as arrays of at most READ_CHUNK_BYTES / 8 (the file is not re-validated)."""
        with open(self.path, "rb") as file:
            file.seek(HEADER_BYTES)
            remaining = OFFSET_BYTES * self.count
            while remaining > 0:
                data = file.read(min(READ_CHUNK_BYTES, remaining))
                if len(data) % OFFSET_BYTES or not data:
                    raise InvalidRetainedOffsetPlanError(f"plan {self.path} changed while it was read")
                remaining -= len(data)
                offsets = array("q", data)
                if _SWAP:
                    offsets.byteswap()
                yield offsets

    def cursor(self) -> RetainedOffsetCursor:
        return RetainedOffsetCursor(self.chunks())


class RetainedOffsetCursor:
    """A plan's offsets consumed in increasing order, a record batch at a time (`take`); one chunk in memory.

    Not thread-safe; `close()` releases the file early."""

    def __init__(self, chunks: Iterator[array[int]]) -> None:
        self._chunks = chunks
        self._chunk: array[int] = array("q")
        self._index = 0
        self._exhausted = False

    def take(self, first_offset: int, last_offset: int) -> list[int]:
        """The plan's offsets in [first_offset, last_offset]; those below `first_offset` are passed over for good.

        Calls must come in increasing order of `first_offset` (the log's order)."""
        found: list[int] = []
        while not self._exhausted:
            chunk, index = self._chunk, self._index
            if index >= len(chunk) or chunk[-1] < first_offset:
                following = next(self._chunks, None)
                if following is None:
                    self._exhausted = True
                    self._chunk, self._index = array("q"), 0
                    break
                self._chunk, self._index = following, 0
                continue
            low = bisect_left(chunk, first_offset, index)
            high = bisect_right(chunk, last_offset, low)
            found.extend(chunk[low:high])
            self._index = high
            if high < len(chunk):
                break
        return found

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
        self._exhausted = True


def read_plan(path: str | os.PathLike[str], *, topic_id: bytes | uuid.UUID | None = None,
              partition: int | None = None) -> RetainedOffsetPlan:
    """Validate a plan file in one streaming pass; raises InvalidRetainedOffsetPlanError naming the first fault.

    Checked: the magic, the size (header, a whole number of offsets, trailer) and the trailer's count against it,
    the checksum, then the topic id and partition when given, the range, and that the offsets are strictly
    increasing and inside the range. A checksum mismatch is reported before any fault of the content (a corrupt
    file explains them all)."""
    name = os.fspath(path)
    with open(name, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        head = file.read(HEADER_BYTES)
        if len(head) < HEADER_BYTES:
            raise InvalidRetainedOffsetPlanError(
                f"plan is truncated: {size} bytes, shorter than its {HEADER_BYTES}-byte header")
        magic, plan_topic_id, plan_partition, start_offset, end_offset = HEADER.unpack(head)
        if magic != MAGIC:
            raise InvalidRetainedOffsetPlanError(f"not a retained-offset plan: magic {magic!r}, expected {MAGIC!r}")
        body_bytes = size - HEADER_BYTES - TRAILER_BYTES
        if body_bytes < 0:
            raise InvalidRetainedOffsetPlanError(
                f"plan is truncated: {size} bytes, shorter than its header and {TRAILER_BYTES}-byte trailer")
        if body_bytes % OFFSET_BYTES:
            raise InvalidRetainedOffsetPlanError(
                f"plan is truncated or corrupt: {size} bytes is not {HEADER_BYTES} + 8 * count + {TRAILER_BYTES}")
        file.seek(size - TRAILER_BYTES)
        count, expected_crc = TRAILER.unpack(file.read(TRAILER_BYTES))
        if count != body_bytes // OFFSET_BYTES:
            raise InvalidRetainedOffsetPlanError(
                f"plan is truncated or corrupt: its trailer counts {count} offsets, its size holds "
                f"{body_bytes // OFFSET_BYTES}")
        file.seek(HEADER_BYTES)
        crc = crc32c.crc32c(head)
        fault: str | None = None
        previous = start_offset - 1
        read = 0
        remaining = body_bytes
        while remaining > 0:
            data = file.read(min(READ_CHUNK_BYTES, remaining))
            if not data or len(data) % OFFSET_BYTES:
                raise InvalidRetainedOffsetPlanError("plan is truncated: it changed while it was read")
            remaining -= len(data)
            crc = crc32c.crc32c(data, crc)
            if fault is None:
                offsets = array("q", data)
                if _SWAP:
                    offsets.byteswap()
                fault = _order_fault(offsets, previous, read, start_offset, end_offset)
                previous = offsets[-1]
                read += len(offsets)
        if crc != expected_crc:
            raise InvalidRetainedOffsetPlanError(
                f"plan is corrupt: CRC-32C {crc:#010x} does not match its trailer's {expected_crc:#010x}")
        if topic_id is not None and plan_topic_id != _topic_id_bytes(topic_id):
            raise InvalidRetainedOffsetPlanError(
                f"plan is for topic id {kafka_topic_id(plan_topic_id)}, not {kafka_topic_id(topic_id)} (another "
                "topic, or the topic was deleted and recreated)")
        if partition is not None and plan_partition != partition:
            raise InvalidRetainedOffsetPlanError(f"plan is for partition {plan_partition}, not {partition}")
        if not 0 <= start_offset <= end_offset:
            raise InvalidRetainedOffsetPlanError(f"plan range [{start_offset}, {end_offset}) is invalid")
        if fault is not None:
            raise InvalidRetainedOffsetPlanError(fault)
    return RetainedOffsetPlan(os.path.abspath(name), plan_topic_id, plan_partition, start_offset, end_offset, count,
                              previous if count else -1)


def _order_fault(offsets: array[int], previous: int, read: int, start_offset: int,
                 end_offset: int) -> str | None:
    """What is wrong with a chunk of offsets following `previous` (None if nothing): order, then range."""
    first = offsets[0]
    if first < start_offset:
        return f"plan offset {first} (index {read}) is below the range start {start_offset}"
    if first <= previous:
        kind = "duplicate" if first == previous else "unsorted"
        return f"plan offsets are not strictly increasing ({kind}): {first} after {previous} at index {read}"
    if not all(map(lt, offsets, islice(offsets, 1, None))):
        i = next(i for i in range(1, len(offsets)) if offsets[i] <= offsets[i - 1])
        kind = "duplicate" if offsets[i] == offsets[i - 1] else "unsorted"
        return (f"plan offsets are not strictly increasing ({kind}): {offsets[i]} after {offsets[i - 1]} at index "
                f"{read + i}")
    if offsets[-1] >= end_offset:
        i = bisect_left(offsets, end_offset)
        return f"plan offset {offsets[i]} (index {read + i}) is not below the range end {end_offset}"
    return None

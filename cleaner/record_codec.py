"""The recopy pass's record decode and re-encode, without `Record` objects and without pure-Python varints.

`decode_records(batch)` returns aiokafka's Cython records (offset, timestamp, key, value, headers attributes, as
`protocol.records.Record` has) straight from its iterator: building a frozen `Record` per record cost more
than decoding it. `encode_batch(...)` re-encodes the retained records through aiokafka's Cython builder and
packs the header exactly as `protocol.records.builder.build_batch` does, byte for byte, including
delete-horizon batches: their record timestamp deltas are relative to the horizon, which the builder cannot
be told directly, so a 7-byte placeholder record stamped with the horizon is appended first (the builder makes
the first timestamp its base) and cut off the section again. `build_batch` encodes those batches with the
pure-Python encoder at ~20 us per record under load; this path costs ~0.5 us.

Falls back to `RecordBatch.records()` / `build_batch` when the extension is unavailable or for the batches
`RecordBatch.records()` itself hands to its pure-Python decoder. Stateless; safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import compress as select_where
from itertools import tee
from operator import attrgetter
from typing import Any, Protocol

from crc32c import _crc32c as crc32c  # the extension: the package's __init__ reads its version (importlib.metadata)

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, CompressionType, Record, RecordBatch
from minikafka.protocol.records.attributes import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from minikafka.protocol.records.batch_header import CRC_COVERED_HEADER, PREFIX
from minikafka.protocol.records.builder import build_batch
from minikafka.protocol.records.compression import compress

try:
    from aiokafka.record._crecords.default_records import DefaultRecordBatch as _CBatch
    from aiokafka.record._crecords.default_records import DefaultRecordBatchBuilder as _CBuilder
except ImportError:  # pragma: no cover - depends on the aiokafka build
    _CBatch = None
    _CBuilder = None

_UINT32 = struct.Struct(">I")
_MAX_BATCH_SIZE_BYTES = 2**31 - 1
# length 6 | attributes 0 | timestamp delta 0 | offset delta 0 | key -1 | value -1 | 0 headers
_PLACEHOLDER_BYTES = 7
_offset_of = attrgetter("offset")
_key_of = attrgetter("key")


class RecordLike(Protocol):
    """What the recopy pass reads from a decoded record (Record and aiokafka's DefaultRecord both have it)."""

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def headers(self) -> Sequence[tuple[str, bytes | None]]: ...


def decode_records(batch: RecordBatch) -> Sequence[RecordLike]:
    """Every record of a batch (decompressed), as `batch.records()` yields them but without `Record` objects."""
    if _CBatch is None or batch.attributes & ~0x7F or batch.size_bytes == BATCH_HEADER_SIZE:
        return list(batch.records())
    raw = batch.raw()
    if len(raw) != batch.size_bytes:
        raise CorruptMessageError("record batch is truncated")
    try:
        records: list[Any] = list(_CBatch(bytes(raw)))
    except Exception as exc:  # aiokafka reports bad records and codec failures with assorted types
        raise CorruptMessageError(f"malformed records in batch at base offset {batch.base_offset}: {exc!r}") from None
    return records


def _c_batch(batch: RecordBatch) -> Any:
    """aiokafka's Cython reader over the batch's bytes, or None where `decode_records` falls back."""
    if _CBatch is None or batch.attributes & ~0x7F or batch.size_bytes == BATCH_HEADER_SIZE:
        return None
    raw = batch.raw()
    if len(raw) != batch.size_bytes:
        raise CorruptMessageError("record batch is truncated")
    return _CBatch(bytes(raw))


def collect_latest_offsets(batch: RecordBatch, latest_by_key: dict[Any, int]) -> None:
    """`latest_by_key[key] = offset` for every record in order (so the latest offset wins; the None key too).

    The map pass's deduplication: each record lives only for its own store, so no record list is built (and
    the cyclic GC, which runs per 700 live allocations, has nothing to scan)."""
    try:
        reader = _c_batch(batch)
        if reader is None:
            for offset, key in batch.keys():  # noqa: SIM118 - a record batch, not a dict
                latest_by_key[key] = offset
            return
        records, offsets_of = tee(reader)
        # dict.update over (key, offset) pairs stores in record order (the latest offset wins), all in C.
        latest_by_key.update(zip(map(_key_of, records), map(_offset_of, offsets_of)))
    except CorruptMessageError:
        raise
    except Exception as exc:  # aiokafka reports bad records and codec failures with assorted types
        raise CorruptMessageError(f"malformed records in batch at base offset {batch.base_offset}: {exc!r}") from None


def select_records(batch: RecordBatch, keep_offsets: set[int]) -> list[RecordLike]:
    """The records of a batch whose offset is in `keep_offsets`, in order (decompressed).

    Equal to `[r for r in decode_records(batch) if r.offset in keep_offsets]`, but the selection runs in C
    (itertools) and a dropped record is freed as soon as it is read: the recopy pass keeps ~1 record in 10
    of an update-heavy log, and building all of them cost more than decoding them."""
    reader = _c_batch(batch)
    if reader is None:
        return [record for record in decode_records(batch) if record.offset in keep_offsets]
    try:
        records, offsets_of = tee(reader)
        return list(select_where(records, map(keep_offsets.__contains__, map(_offset_of, offsets_of))))
    except Exception as exc:  # aiokafka reports bad records and codec failures with assorted types
        raise CorruptMessageError(f"malformed records in batch at base offset {batch.base_offset}: {exc!r}") from None


def encode_batch(
    batch: RecordBatch,
    retained: Sequence[RecordLike],
    delete_horizon_ms: int | None,
    max_timestamp: int | None,
) -> bytes:
    """`build_batch(retained, ...)` with the stored batch's codec (none when empty), producer fields, flags,
    base offset and last offset delta, and the given delete horizon and max timestamp (None = computed)."""
    if _CBuilder is None:
        return build_batch(
            [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in retained],
            base_offset=batch.base_offset,
            compression=batch.compression_type if retained else CompressionType.NONE,
            timestamp_type=batch.timestamp_type,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            delete_horizon_ms=delete_horizon_ms,
            last_offset_delta=batch.last_offset_delta,
            max_timestamp=max_timestamp,
        )
    base_offset = batch.base_offset
    compression = batch.compression_type if retained else CompressionType.NONE
    section: bytes | memoryview
    if retained:
        builder = _CBuilder(2, 0, 0, -1, -1, -1, _MAX_BATCH_SIZE_BYTES)
        append = builder.append
        skip = BATCH_HEADER_SIZE
        if delete_horizon_ms is not None:
            append(0, delete_horizon_ms, None, None, [])
            skip += _PLACEHOLDER_BYTES
            base_timestamp = delete_horizon_ms
        else:
            base_timestamp = retained[0].timestamp
        top = retained[0].timestamp
        for record in retained:
            timestamp = record.timestamp
            if timestamp > top:
                top = timestamp
            headers = record.headers
            append(record.offset - base_offset, timestamp, record.key, record.value,
                   headers if type(headers) is list else list(headers))
        section = memoryview(builder.build())[skip:]
        if compression != CompressionType.NONE:
            section = compress(compression, section)
    else:
        section = b""
        base_timestamp = delete_horizon_ms if delete_horizon_ms is not None else -1
        top = -1
    attributes = int(compression) | (batch.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG_MASK
                                                         | CONTROL_FLAG_MASK))
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    crc_covered = bytearray(CRC_COVERED_HEADER.pack(
        attributes, batch.last_offset_delta, base_timestamp, top if max_timestamp is None else max_timestamp,
        batch.producer_id, batch.producer_epoch, batch.base_sequence, len(retained)))
    crc_covered += section
    batch_length = len(crc_covered) + (BATCH_HEADER_SIZE - LOG_OVERHEAD - CRC_COVERED_HEADER.size)
    out = bytearray(PREFIX.pack(base_offset, batch_length, batch.partition_leader_epoch, MAGIC_V2))
    out += _UINT32.pack(crc32c.crc32c(crc_covered))
    out += crc_covered
    return bytes(out)

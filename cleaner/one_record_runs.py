"""Runs of plain one-record batches read straight from a segment's bytes, for the cleaner's bulk paths.

Producers with linger 0 write one batch per record; going batch by batch through `RecordBatch` views, the CRC
check and one aiokafka reader per batch cost ~10 us of Python per record. `scan_segment` reads a segment's
`.log` file in 1 MiB chunks, as `FileRecords.batches` does, and hands out consecutive *plain one-record batches*
of a chunk as one `OneRecordRun` (one header unpack per batch), everything else as the usual `RecordBatch`.

A plain one-record batch: magic 2, one record with offset delta 0, no codec or lz4, not transactional, not a control
batch, no delete horizon (the attribute bits 0-2, 3 only). The run's per-batch values are lists built in C
(`struct`, `map`, `zip`), and all its records are decoded by one aiokafka reader over a synthetic batch: a header
naming N records, followed by the N records sections. lz4 sections are decompressed by python-lz4's frame decoder,
~0.4 us a call where aiokafka's `lz4_decode` takes several; a section it refuses sends the run down the generic
path, whose codec (cramjam) then decides. A valid frame decodes to the same bytes in both, and a compacted log's
frames were decoded by cramjam when appended (the key check). The synthetic batch is exact only if every section
holds exactly one record, so `decode` first checks that each section starts with the canonical varint of its own
record length (section size minus the varint): aiokafka then checks that each record is exactly that long, so record
i lies in section i and is read from the very bytes, with the very checks, that a reader over batch i alone would
use. A run that fails any of this is `None` from `decode` and the caller takes its batches one by one, the generic
way (which then raises the same CorruptMessageError for the same batch as before). Decoded records carry the
synthetic batch's offsets and timestamps: only their keys and values are meaningful.

Stateless functions and a read-only value; safe from any thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate, islice
from operator import add, eq, lt
from typing import Any

import lz4.frame
from crc32c import _crc32c as crc32c  # the extension: the package's __init__ reads its version (importlib.metadata)

from minikafka.protocol.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, RecordBatch
from minikafka.protocol.records.attributes import COMPRESSION_CODEC_MASK, CompressionType
from minikafka.protocol.records.batch_header import ATTRIBUTES_OFFSET, HEADER, RECORDS_OFFSET, SCAN_HEADER
from minikafka.storage.file_records import FileRecords

try:
    from aiokafka.record._crecords.default_records import DefaultRecordBatch as _CBatch
except ImportError:  # pragma: no cover - depends on the aiokafka build
    _CBatch = None

#: none / lz4 x create / log-append time
_PLAIN_ATTRIBUTES = frozenset({0, int(CompressionType.LZ4), 8, 8 | int(CompressionType.LZ4)})
_SCAN_CHUNK_BYTES = 1 << 20


def _length_prefix(section_size: int) -> bytes:
    """The canonical (zigzag) varint of L for the one record filling `section_size` bytes: len(varint) + L ==
    section_size; when no canonical encoding fits that size, bytes longer than the section (never a prefix)."""
    for width in range(1, 6):
        length = section_size - width
        zigzag = length << 1
        if length < 0:
            break
        encoded = bytearray()
        while zigzag >= 0x80:
            encoded.append((zigzag & 0x7F) | 0x80)
            zigzag >>= 7
        encoded.append(zigzag)
        if len(encoded) == width:
            return bytes(encoded)
    return bytes(section_size + 1)


class _LengthPrefixes(dict[int, bytes]):
    """section size -> `_length_prefix(size)`, computed once per size (lookups from C)."""

    def __missing__(self, section_size: int) -> bytes:
        prefix = self[section_size] = _length_prefix(section_size)
        return prefix


_PREFIXES = _LengthPrefixes()


@dataclass(slots=True)
class OneRecordRun:
    """Consecutive plain one-record batches of one chunk: the chunk (immutable bytes read from the segment) and,
    per batch in log order, its position in the chunk and header fields. Read-only."""

    chunk: bytes
    positions: list[int]
    sizes: list[int]
    base_offsets: list[int]
    crcs: list[int]
    attributes: list[int]
    max_timestamps: list[int]
    producer_ids: list[int]

    @classmethod
    def of(cls, chunk: bytes, start: int, headers: list[tuple[int, ...]]) -> OneRecordRun:
        base_offsets, lengths, _, crcs, attributes, _, max_timestamps, producer_ids, _ = map(list, zip(*headers))
        sizes = list(map(add, lengths, [LOG_OVERHEAD] * len(lengths)))
        positions = list(accumulate(sizes[:-1], initial=start))
        return cls(chunk, positions, sizes, base_offsets, crcs, attributes, max_timestamps, producer_ids)

    def __len__(self) -> int:
        return len(self.positions)

    def batch(self, index: int) -> RecordBatch:
        """The `RecordBatch` view of batch `index`, for the generic path."""
        return RecordBatch(self.chunk, self.positions[index])

    def ascending(self) -> bool:
        """Whether the base offsets strictly increase (as in any valid log; the bulk paths rely on it)."""
        bases = self.base_offsets
        return all(map(lt, bases, islice(bases, 1, None)))

    def crcs_valid(self) -> bool:
        """Whether every batch's stored CRC-32C matches its bytes (`RecordBatch.ensure_valid`'s CRC check; the
        scan already checked magic, length, records count and codec)."""
        view = memoryview(self.chunk)
        starts = map(add, self.positions, [ATTRIBUTES_OFFSET] * len(self.positions))
        ends = map(add, self.positions, self.sizes)
        return all(map(eq, map(crc32c.crc32c, map(view.__getitem__, map(slice, starts, ends))), self.crcs))

    def decode(self) -> list[Any] | None:
        """aiokafka's record per batch (key and value as stored; offsets and timestamps are not the batches'),
        or None when the run must go batch by batch (see the module docstring)."""
        if _CBatch is None:
            return None
        count = len(self.positions)
        chunk = self.chunk
        starts = map(add, self.positions, [RECORDS_OFFSET] * count)
        sections = list(map(chunk.__getitem__, map(slice, starts, map(add, self.positions, self.sizes))))
        try:
            if any(self.attributes):
                lz4_decode = lz4.frame.decompress
                sections = [lz4_decode(section) if attributes & COMPRESSION_CODEC_MASK else section
                            for section, attributes in zip(sections, self.attributes)]
            if not all(map(bytes.startswith, sections, map(_PREFIXES.__getitem__, map(len, sections)))):
                return None
            body = b"".join(sections)
            header = HEADER.pack(0, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body), -1, MAGIC_V2, 0, 0, 0,
                                            0, 0, -1, -1, -1, count)
            records = list(_CBatch(header + body))
        except Exception:  # a bad section or codec failure: the generic path reports it batch by batch
            return None
        return records if len(records) == count else None


def scan_segment(log: FileRecords, start_position: int = 0) -> Iterator[RecordBatch | OneRecordRun]:
    """`log.batches(start_position)`'s batches in order, consecutive plain one-record batches of a chunk
    grouped into one `OneRecordRun`. A batch that does not fit a chunk, a bad batch length and trailing bytes are
    left to `FileRecords.batches`, so the same batches come out and the same errors are raised."""
    end = log.size_bytes
    position = start_position
    unpack = SCAN_HEADER.unpack_from
    plain = _PLAIN_ATTRIBUTES
    while position + LOG_OVERHEAD <= end:
        chunk = log.read(position, min(_SCAN_CHUNK_BYTES, end - position))
        limit = len(chunk)
        offset = run_start = 0
        run: list[tuple[int, ...]] = []
        while offset + BATCH_HEADER_SIZE <= limit:
            header = unpack(chunk, offset)
            size = header[1] + LOG_OVERHEAD
            if size < BATCH_HEADER_SIZE or offset + size > limit:
                break
            if (header[8] == 1 and header[5] == 0 and header[4] in plain and header[2] == MAGIC_V2
                    and size > BATCH_HEADER_SIZE):
                if not run:
                    run_start = offset
                run.append(header)
            else:
                if run:
                    yield OneRecordRun.of(chunk, run_start, run)
                    run = []
                yield RecordBatch(chunk, offset)
            offset += size
        if run:
            yield OneRecordRun.of(chunk, run_start, run)
        if offset == 0:  # FileRecords reads a batch larger than the chunk on its own, or raises
            for _, batch in log.batches(position):
                yield batch
                offset = batch.size_bytes
                break
            else:
                return
        position += offset
    if position < end:  # fewer bytes left than a batch length: FileRecords.batches raises for them
        yield from (batch for _, batch in log.batches(position))

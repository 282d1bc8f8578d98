"""What a partition's directory still holds of one key, read from the files themselves: for `minikafka erase`'s
receipt (broker/erasure.py) and the console's key lookup (broker/console/).

`scan_partition_dir` reads every segment file in the directory — `.log`, and the cleaner's and deletion's leftovers
`.log.cleaned`, `.log.swap`, `.log.deleted` — one batch at a time (compressed batches decompressed; memory bounded
by the largest batch, not the segment), so a record the log no longer serves but a file still holds counts. It
opens files read-only and skips one that disappears under it (a deleted segment removed by its delayed deletion).
`default_partition` is the partition Kafka's default partitioner picks for a key (murmur2, as the Java client and
librdkafka's `murmur2_random` do).
Pure functions over files; safe from any thread (they race only with file deletion, which they tolerate).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafka.partitioner.default import murmur2

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import LOG_OVERHEAD, RecordBatch

#: the file name endings of segment data: the live log and what a cleaning round or a deletion leaves behind
SEGMENT_SUFFIXES = (".log", ".log.cleaned", ".log.swap", ".log.deleted")
_LENGTH = struct.Struct(">qi")


def default_partition(key: bytes, num_partitions: int) -> int:
    """Kafka's DefaultPartitioner/BuiltInPartitioner for a keyed record: toPositive(murmur2(key)) % partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def parse_key(text: str | None, hex_text: str | None) -> bytes:
    """The key from a UTF-8 string or from hex; ValueError if neither or both, or bad hex."""
    if (text is None) == (hex_text is None):
        raise ValueError("give the key either as a string (key) or as hex (key_hex)")
    if hex_text is not None:
        try:
            return bytes.fromhex(hex_text)
        except ValueError:
            raise ValueError(f"key_hex {hex_text!r} is not hex") from None
    assert text is not None
    return text.encode()


def key_sha256(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()


@dataclass(frozen=True)
class KeyRecord:
    """One record of the key found on disk; `value_bytes` is -1 for a tombstone (null value)."""

    offset: int
    timestamp_ms: int
    value_bytes: int
    file: str

    def to_json(self) -> dict[str, object]:
        return {"offset": self.offset, "timestamp_ms": self.timestamp_ms, "value_bytes": self.value_bytes,
                "tombstone": self.value_bytes < 0, "file": self.file}


@dataclass
class KeyScan:
    """The records of one key in a partition directory, by file; `files` lists every segment file read."""

    records: list[KeyRecord] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    bytes_scanned: int = 0

    def older_than(self, offset: int) -> list[KeyRecord]:
        return [record for record in self.records if record.offset < offset]


def segment_files(directory: Path) -> list[Path]:
    """The segment data files of a partition directory, live and leftover, in name order."""
    try:
        names = sorted(p for p in directory.iterdir() if p.name.endswith(SEGMENT_SUFFIXES))
    except FileNotFoundError:
        return []
    return names


def _batches(path: Path) -> Iterator[RecordBatch]:
    """Every whole batch of a segment file, one at a time (memory: one batch, whatever the segment's size; a torn
    tail is ignored: nothing in it was ever served). FileNotFoundError when the file is gone before it is opened."""
    with open(path, "rb") as file:
        while len(header := file.read(LOG_OVERHEAD)) == LOG_OVERHEAD:
            _, length = _LENGTH.unpack(header)
            rest = file.read(length)
            if len(rest) < length:
                return
            try:
                batch = RecordBatch(header + rest)
            except CorruptMessageError:
                return
            yield batch


def scan_partition_dir(directory: Path, key: bytes, *, with_values_at: int | None = None
                       ) -> tuple[KeyScan, bytes | None]:
    """Every record of `key` in the directory's segment files (control batches skipped), and the value of the
    record at offset `with_values_at` when asked (None otherwise or when absent)."""
    scan = KeyScan()
    value: bytes | None = None
    for path in segment_files(directory):
        batches = _batches(path)
        try:
            first = next(batches, None)  # opens the file
        except FileNotFoundError:
            continue
        scan.files.append(path.name)
        for batch in itertools.chain([first] if first is not None else [], batches):
            scan.bytes_scanned += batch.size_bytes  # not the file's size: an active segment's runs on in zeros
            if batch.is_control:
                continue
            for record in batch.records():
                if record.key != key:
                    continue
                scan.records.append(KeyRecord(record.offset, record.timestamp,
                                              -1 if record.value is None else len(record.value), path.name))
                if with_values_at is not None and record.offset == with_values_at:
                    value = record.value
    scan.records.sort(key=lambda r: (r.offset, r.file))
    return scan, value

"""The cleaner's bulk paths for runs of plain one-record batches (cleaner.one_record_runs) against the generic
batch-by-batch path: the same cleaned bytes, statistics and errors, on real segment files."""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import crc32c
import pytest

from minikafka.cleaner import cleaner as cleaner_module
from minikafka.cleaner import offset_map_builder as map_builder_module
from minikafka.cleaner.cleaner import Cleaner, LastProducerRecord
from minikafka.cleaner.log_to_clean import LogToClean
from minikafka.cleaner.offset_map import OffsetMap
from minikafka.cleaner.one_record_runs import OneRecordRun, scan_segment
from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import CompressionType, Record, RecordBatch, TimestampType
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.file_records import FileRecords
from minikafka.storage.log_segment import CLEANED_SUFFIX
from tests.cleaner.segment_log import SegmentLog, TopicConfig

DAY_MS = 86_400_000


def _generic_scan(log: FileRecords, start_position: int = 0) -> Iterator[RecordBatch]:
    for _, batch in log.batches(start_position):
        yield batch


def _mixed_log(directory: Path, seed: int) -> tuple[SegmentLog, dict[int, LastProducerRecord]]:
    """Mostly one-record batches (none/lz4, tombstones, unkeyed, log-append time) among transactions, markers,
    idempotent producers and small multi-record batches, over several segments."""
    rng = random.Random(seed)
    clock = FakeClock(1_700_000_000_000)
    directory.mkdir()
    log = SegmentLog(directory, clock, TopicConfig(segment_bytes=1 << 16))
    open_transactions: dict[int, int] = {}
    producers: dict[int, LastProducerRecord] = {}
    for n in range(1500):
        clock.advance_ms(rng.randrange(3))
        codec = rng.choice([CompressionType.NONE, CompressionType.NONE, CompressionType.LZ4])
        records = [(None if rng.random() < 0.03 else b"k%d" % rng.randrange(150),
                    None if rng.random() < 0.1 else b"v" * rng.randrange(0, 200))
                   for _ in range(1 if rng.random() < 0.9 else rng.randrange(2, 5))]
        roll = rng.random()
        if roll < 0.05:
            producer_id = rng.randrange(1000, 1003)
            open_transactions.setdefault(producer_id, log.next_offset)
            log.append(records, compression=codec, producer_id=producer_id, producer_epoch=0, base_sequence=0,
                       transactional=True)
            producers[producer_id] = LastProducerRecord(log.next_offset - 1, 0)
        elif roll < 0.07 and open_transactions:
            producer_id = rng.choice(sorted(open_transactions))
            log.append_marker(producer_id, commit=rng.random() < 0.5, first_offset=open_transactions.pop(producer_id))
            producers[producer_id] = LastProducerRecord(None, 0)
        elif roll < 0.12:
            producer_id = rng.randrange(2000, 2003)
            log.append(records, compression=codec, producer_id=producer_id, producer_epoch=1, base_sequence=n)
            producers[producer_id] = LastProducerRecord(log.next_offset - 1, 1)
        elif roll < 0.14:
            log.append(records, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME)
        else:
            log.append(records, compression=codec)
        if n % 300 == 299:
            log.roll()
    log.roll()
    log.append([(b"tail", b"x")])
    return log, producers


def _clean_rounds(log: SegmentLog, producers: dict[int, LastProducerRecord], slots: int) -> list[object]:
    """Cleaned files' digests and statistics of six rounds (every other one with producer state)."""
    seen: list[object] = []
    for round_number in range(6):
        cleaner = Cleaner(OffsetMap(OffsetMap.memory_bytes_for_slots(slots), 0.9), log.clock)
        to_clean = LogToClean.of(log.segments, 0, log.active.base_offset)
        result = cleaner.clean(log.segments, first_dirty_offset=0,
                               first_uncleanable_offset=to_clean.first_uncleanable_offset,
                               now_ms=log.clock.time_ms() + round_number * DAY_MS // 2, config=log.config,
                               producers=producers if round_number % 2 else None)
        stats = result.stats
        seen.append((result.end_offset, stats.messages_read, stats.messages_written, stats.bytes_read,
                     stats.bytes_written, stats.invalid_messages_read, stats.map_messages_read, stats.map_bytes_read))
        for group in result.groups:
            cleaned = group.cleaned
            for path in sorted(cleaned.dir.glob(f"{cleaned.base_offset:020d}.*{CLEANED_SUFFIX}")):
                seen.append((path.name, hashlib.sha256(path.read_bytes()).hexdigest()))
        log.swap(result)
    return seen


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("slots", [100_000, 150])  # 150: the map fills mid-segment, rounds end early
def test_bulk_paths_write_what_the_generic_path_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        seed: int, slots: int) -> None:
    fast_log, fast_producers = _mixed_log(tmp_path / "fast", seed)
    fast = _clean_rounds(fast_log, fast_producers, slots)
    monkeypatch.setattr(cleaner_module, "scan_segment", _generic_scan)  # the recopy pass
    monkeypatch.setattr(map_builder_module, "scan_segment", _generic_scan)  # the map pass
    generic_log, generic_producers = _mixed_log(tmp_path / "generic", seed)
    assert _clean_rounds(generic_log, generic_producers, slots) == fast


def test_scan_groups_plain_one_record_batches_and_yields_the_same_batches(tmp_path: Path) -> None:
    log, _ = _mixed_log(tmp_path / "log", 3)
    for segment in log.segments:
        expected = [bytes(batch.raw()) for _, batch in segment.log.batches(0)]
        scanned: list[bytes] = []
        runs = 0
        for item in scan_segment(segment.log):
            if isinstance(item, OneRecordRun):
                runs += 1
                scanned += [bytes(item.batch(i).raw()) for i in range(len(item))]
                assert all(item.batch(i).records_count == 1 and not item.batch(i).is_transactional
                           for i in range(len(item)))
            else:
                scanned.append(bytes(item.raw()))
        assert scanned == expected
        assert runs or not expected


def _one_record_log(directory: Path, count: int = 40) -> SegmentLog:
    directory.mkdir()
    log = SegmentLog(directory, FakeClock(1_700_000_000_000))
    for i in range(count):
        log.append([(b"k%d" % (i % 7), b"value-%d" % i)], compression=CompressionType.LZ4 if i % 3 else
                   CompressionType.NONE)
    log.roll()
    log.append([(b"tail", b"x")])
    return log


def _rewrite_batch(log: SegmentLog, index: int, data: bytes) -> None:
    """Overwrite batch `index` of the first segment with `data` of the same size."""
    segment = log.segments[0]
    position = [p for p, _ in segment.log.batches(0)][index]
    with segment.log.path.open("r+b") as file:
        file.seek(position)
        file.write(data)


def _error_of(log: SegmentLog) -> str:
    cleaner = Cleaner(OffsetMap(OffsetMap.memory_bytes_for_slots(1000), 0.9), log.clock)
    with pytest.raises(CorruptMessageError) as raised:
        log.clean(cleaner, 0)
    return str(raised.value)


@pytest.mark.parametrize("damage", ["crc", "record_length", "lz4_frame"])
def test_a_bad_batch_in_a_run_raises_what_the_generic_path_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   damage: str) -> None:
    errors = []
    index = 13 if damage == "lz4_frame" else 12  # lz4 when index % 3, else uncompressed
    for name in ("fast", "generic"):
        log = _one_record_log(tmp_path / name)
        batch = log.batches()[index]
        data = bytearray(batch.raw())
        if damage == "crc":
            data[-1] ^= 0xFF
        elif damage == "record_length":  # one record whose length varint is one byte short; the CRC made valid again
            data[61] -= 2
            struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
        else:  # the LZ4 frame's magic broken, the CRC made valid again: refused by both codecs
            data[61] ^= 0xFF
            struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
        _rewrite_batch(log, index, bytes(data))
        if name == "generic":
            monkeypatch.setattr(cleaner_module, "scan_segment", _generic_scan)
            monkeypatch.setattr(map_builder_module, "scan_segment", _generic_scan)
        errors.append(_error_of(log))
    assert errors[0] == errors[1]
    assert f"base offset {index}" in errors[0]


def test_trailing_bytes_after_a_run_raise_what_file_records_raises(tmp_path: Path) -> None:
    """Fewer trailing bytes than a batch length are corruption for the scan as for `FileRecords.batches`."""
    log = _one_record_log(tmp_path / "log")
    records = _file_with(tmp_path / "trailing.log", log.segments[0].log.path.read_bytes() + b"\x00" * 5)
    with pytest.raises(CorruptMessageError) as generic:
        list(records.batches(0))
    with pytest.raises(CorruptMessageError) as scanned:
        list(scan_segment(records))
    assert str(scanned.value) == str(generic.value)


def test_synthetic_decode_refuses_a_section_holding_two_records(tmp_path: Path) -> None:
    """A batch claiming one record but holding two is left to the generic path (which reports it)."""
    log = _one_record_log(tmp_path / "log", count=4)
    two = build_batch([Record(1, 0, b"a", b"1"), Record(1, 0, b"b", b"2")], base_offset=1)
    data = bytearray(two)
    struct.pack_into(">i", data, 57, 1)  # records count 1, last offset delta 0
    struct.pack_into(">i", data, 23, 0)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    chunk = log.batches()[0].raw().tobytes() + bytes(data)
    run = next(item for item in scan_segment(_file_with(tmp_path / "two.log", chunk)) if isinstance(item, OneRecordRun))
    assert len(run) == 2
    assert run.crcs_valid()
    assert run.decode() is None


def _file_with(path: Path, data: bytes) -> FileRecords:
    path.write_bytes(data)
    return FileRecords(path)

"""The recopy pass's fast codec (cleaner.record_codec) and OffsetMap.get_many against their reference paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.cleaner.offset_map import OffsetMap
from minikafka.cleaner.record_codec import decode_records, encode_batch
from minikafka.protocol.records import CompressionType, Record, RecordBatch, TimestampType
from minikafka.protocol.records.builder import build_batch, build_control_batch
from minikafka.storage.clock import FakeClock
from tests.cleaner.segment_log import SegmentLog, make_cleaner


def _stored(compression: CompressionType, timestamp_type: TimestampType = TimestampType.CREATE_TIME) -> RecordBatch:
    records = [
        Record(100, 1_000, b"a", b"1", (("h", b"x"),)),
        Record(101, 1_005, b"b", None),
        Record(103, 990, None, b"3"),
        Record(104, 1_002, b"c", b"4" * 300),
    ]
    return RecordBatch(build_batch(
        records, base_offset=100, compression=compression, timestamp_type=timestamp_type, producer_id=7,
        producer_epoch=2, base_sequence=11, partition_leader_epoch=5, last_offset_delta=6,
        max_timestamp=5_000 if timestamp_type == TimestampType.LOG_APPEND_TIME else None))


@pytest.mark.parametrize("compression", list(CompressionType))
@pytest.mark.parametrize("horizon_ms", [None, 86_400_000])
@pytest.mark.parametrize("pick", [slice(None), slice(1, 2), slice(1, None), slice(0, 0)])
def test_encode_batch_matches_build_batch_byte_for_byte(
    compression: CompressionType, horizon_ms: int | None, pick: slice
) -> None:
    batch = _stored(compression)
    decoded = list(decode_records(batch))
    reference = list(batch.records())
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in decoded] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in reference]
    retained = reference[pick]
    expected = build_batch(
        retained, base_offset=batch.base_offset,
        compression=batch.compression_type if retained else CompressionType.NONE,
        timestamp_type=batch.timestamp_type, producer_id=7, producer_epoch=2, base_sequence=11,
        partition_leader_epoch=5, delete_horizon_ms=horizon_ms, last_offset_delta=6,
        max_timestamp=None if retained else batch.max_timestamp)
    got = encode_batch(batch, decoded[pick], horizon_ms, None if retained else batch.max_timestamp)
    if compression == CompressionType.NONE or not retained:
        assert got == expected
    rebuilt = RecordBatch(got)
    rebuilt.ensure_valid()
    assert list(rebuilt.records()) == list(RecordBatch(expected).records())
    assert rebuilt.delete_horizon_ms == horizon_ms
    assert (rebuilt.base_timestamp, rebuilt.max_timestamp) == (
        RecordBatch(expected).base_timestamp, RecordBatch(expected).max_timestamp)


def test_encode_batch_log_append_time_and_control() -> None:
    batch = _stored(CompressionType.NONE, TimestampType.LOG_APPEND_TIME)
    decoded = list(decode_records(batch))
    assert {r.timestamp for r in decoded} == {5_000}
    got = RecordBatch(encode_batch(batch, decoded[:2], 9_000, batch.max_timestamp))
    assert got.timestamp_type == TimestampType.LOG_APPEND_TIME and got.max_timestamp == 5_000
    assert [r.timestamp for r in got.records()] == [5_000, 5_000]
    marker = RecordBatch(build_control_batch(base_offset=9, producer_id=3, producer_epoch=1, commit=True,
                                             coordinator_epoch=0, timestamp_ms=77))
    stamped = RecordBatch(encode_batch(marker, list(decode_records(marker)), 1_234, None))
    assert stamped.is_control and stamped.is_transactional and stamped.delete_horizon_ms == 1_234
    assert [(r.key, r.value) for r in stamped.records()] == [(r.key, r.value) for r in marker.records()]


def test_get_many_equals_get_and_counts_lookups() -> None:
    offset_map = OffsetMap(64 * 16, 0.9)
    keys = [b"k%d" % i for i in range(50)]
    for offset, key in enumerate(keys):
        offset_map.put(key, 1_000 + offset)
    probe = keys + [b"absent-%d" % i for i in range(20)]
    before = (offset_map.lookups, offset_map.collisions)
    many = offset_map.get_many(probe)
    after_many = (offset_map.lookups - before[0], offset_map.collisions - before[1])
    single = [offset_map.get(key) for key in probe]
    assert many == single == [1_000 + i for i in range(50)] + [-1] * 20
    assert after_many == (offset_map.lookups - before[0] - after_many[0],
                          offset_map.collisions - before[1] - after_many[1])


def _bit(bits: bytearray, relative: int) -> bool:
    return bool(bits[relative >> 3] & (1 << (relative & 7)))


@pytest.mark.parametrize("batched", [False, True])
def test_latest_offset_bits_mark_exactly_the_latest_offset_of_each_key(batched: bool) -> None:
    import random

    rng = random.Random(7)
    offset_map = OffsetMap(64 * 1024, 0.9)
    for _round in range(2):  # the second round checks that clear() resets the bitmap
        offset_map.clear()
        assert offset_map.latest_offset_bits() is None
        pairs = [(500 + i, b"k%d" % rng.randrange(40) if rng.random() > 0.1 else None) for i in range(3_000)]
        if batched:
            for start in range(0, len(pairs), 100):
                offset_map.put_keys(pairs[start:start + 100], 510)
        else:
            for offset, key in pairs:
                if key is not None and offset >= 510:
                    offset_map.put(key, offset)
        latest = offset_map.latest_offset_bits()
        assert latest is not None
        base, end, bits = latest
        assert end - base == 8 * len(bits) >= 3_000
        assert base == min(o for o, k in pairs if k is not None and o >= 510)
        for offset, key in pairs:
            if offset >= base:
                expected = key is not None and offset_map.get(key) == offset
                assert _bit(bits, offset - base) == expected, offset


def test_latest_offset_bits_cover_a_bounded_prefix_and_clear_resets_them() -> None:
    offset_map = OffsetMap(16 * 64, 0.9)  # 64 slots, a 32-byte bitmap: offsets [base, base + 256)
    offset_map.put(b"a", 0)
    offset_map.put_keys([(255, b"b"), (256, b"c")], 0)
    offset_map.put(b"d", 700)
    offset_map.put(b"b", 701)  # supersedes 255
    latest = offset_map.latest_offset_bits()
    assert latest is not None
    base, end, bits = latest
    assert (base, end) == (0, 256)
    assert [r for r in range(256) if _bit(bits, r)] == [0]
    assert offset_map.get(b"c") == 256 and offset_map.get(b"b") == 701
    offset_map.clear()
    assert offset_map.latest_offset_bits() is None and not any(bits)
    offset_map.put(b"a", 5)
    latest = offset_map.latest_offset_bits()
    assert latest is not None and latest[:2] == (5, 261) and _bit(latest[2], 0) and not any(latest[2][1:])


def _random_log(directory: Path, seed: int) -> tuple[SegmentLog, set[int]]:
    import random

    rng = random.Random(seed)
    directory.mkdir()
    log = SegmentLog(directory, FakeClock())
    aborted_offsets: set[int] = set()
    while log.next_offset < 1_500:
        if rng.random() < 0.03:  # an aborted transactional batch: the map pass must skip it
            first = log.next_offset
            log.append([(b"k%d" % rng.randrange(60), b"aborted")], producer_id=9, producer_epoch=0,
                       transactional=True)
            aborted_offsets.add(first)
            log.append_marker(9, commit=False, first_offset=first)
        else:
            records = []
            for _ in range(rng.randrange(1, 40)):
                roll = rng.random()
                key = None if roll < 0.03 else b"k%d" % rng.randrange(60)
                records.append((key, None if roll > 0.9 else b"v%d" % rng.randrange(1000)))
            log.append(records)
        if rng.random() < 0.05:
            log.roll()
    log.roll()
    return log, aborted_offsets


@pytest.mark.parametrize("dedupe_keys", [1, 7, 131_072])
@pytest.mark.parametrize("slots", [64, 4_096])
def test_map_pass_deduplication_matches_a_naive_map_and_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dedupe_keys: int, slots: int
) -> None:
    import minikafka.cleaner.offset_map_builder as map_builder_module

    monkeypatch.setattr(map_builder_module, "_DEDUPE_KEYS", dedupe_keys)
    log, aborted = _random_log(tmp_path / "a", 5)
    records = [(r.offset, r.key) for b in log.batches() if not b.is_control and b.base_offset not in aborted
               for r in b.records()]
    cleaner = make_cleaner(log.clock, slots)
    result = log.clean(cleaner, 0)
    offset_map = cleaner.offset_map
    expected: dict[bytes, int] = {}
    for offset, key in records:
        if key is not None and offset < result.end_offset:
            expected[key] = offset
    assert offset_map.latest_offset == result.end_offset - 1
    for key in {key for _, key in records if key is not None}:
        assert offset_map.get(key) == expected.get(key, -1), key
    latest = offset_map.latest_offset_bits()
    assert latest is not None
    base, end, bits = latest
    assert {base + r for r in range(min(end, result.end_offset) - base) if _bit(bits, r)} == set(expected.values())
    # The same log cleaned with the record-by-record map pass (deduplication off) ends up identical.
    reference, _ = _random_log(tmp_path / "b", 5)
    monkeypatch.setattr(map_builder_module, "_DEDUPE_KEYS", 0)
    monkeypatch.setattr(OffsetMap, "put_latest", None)  # any use would fail
    reference_result = reference.clean(make_cleaner(reference.clock, slots), 0)
    assert reference_result.end_offset == result.end_offset
    assert reference.key_values() == log.key_values()

"""Spec §5 scenarios A-D decided by the pure cleaning core, on real segment files with a FakeClock."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.cleaner.cleaner import LastProducerRecord
from minikafka.cleaner.log_to_clean import LogToClean, cleanable_offsets
from minikafka.protocol.records import CompressionType, RecordBatch
from minikafka.storage.clock import FakeClock
from tests.cleaner.segment_log import SegmentLog, TopicConfig, kv, make_cleaner

T0 = 1_700_000_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def batch_at(log: SegmentLog, base_offset: int) -> RecordBatch:
    return next(b for b in log.batches() if b.base_offset == base_offset)


# ---------------------------------------------------------------- A. eligibility and the basic guarantee
def test_S1_latest_value_per_key_offsets_and_batch_boundaries_preserved(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("k1=a", "k2=b", "k1=c", "k3=d", "k2=e"))
    log.roll()
    log.append(kv("k4=f"))
    result = log.clean(make_cleaner(clock), 0)
    assert result.end_offset == 5
    assert log.key_values() == [(2, b"k1", b"c"), (3, b"k3", b"d"), (4, b"k2", b"e"), (5, b"k4", b"f")]
    first = log.batches()[0]
    assert (first.base_offset, first.last_offset, first.records_count) == (0, 4, 3)
    assert log.segments[0].base_offset == 0  # compaction never moves the log start


def test_S2_active_segment_is_never_cleaned(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for value in ("a", "b", "c"):
        log.append(kv(f"k={value}"))
    offsets = cleanable_offsets(log.segments, log_start_offset=0, log_end_offset=3, checkpoint_offset=None,
                                last_stable_offset=3, min_compaction_lag_ms=0, now_ms=clock.time_ms())
    assert (offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset) == (0, 0)
    to_clean = LogToClean.of(log.segments, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)
    assert to_clean.total_bytes == 0 and to_clean.cleanable_ratio == 0.0
    result = log.clean(make_cleaner(clock), 0)
    assert result.end_offset == 0 and result.groups == []
    assert log.offsets() == [0, 1, 2]


def test_S3_dirty_ratio_excludes_the_active_segment(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv(*[f"k{i}=v" for i in range(10)]))
    log.roll()
    log.append(kv(*[f"k{i}=w" for i in range(3)]))
    log.roll()
    log.append(kv(*[f"k{i}=x" for i in range(50)]))  # active: big, but never counted
    a, b = log.segments[0].size_bytes, log.segments[1].size_bytes
    to_clean = LogToClean.of(log.segments, first_dirty_offset=10, uncleanable_offset=13)
    assert (to_clean.clean_bytes, to_clean.cleanable_bytes) == (a, b)
    assert to_clean.cleanable_ratio == b / (a + b) < 0.5
    # A dirty offset in the middle of a segment counts that segment on both sides.
    mid = LogToClean.of(log.segments, first_dirty_offset=5, uncleanable_offset=13)
    assert (mid.clean_bytes, mid.cleanable_bytes) == (a, a + b)


def test_S7_cleaning_stops_at_the_last_stable_offset_rounded_to_a_segment(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for segment in range(8):
        for i in range(7):
            log.append(kv(f"k{i}=v{segment}"))
        log.roll()
    offsets = cleanable_offsets(log.segments, log_start_offset=0, log_end_offset=56, checkpoint_offset=None,
                                last_stable_offset=50, min_compaction_lag_ms=0, now_ms=clock.time_ms())
    assert offsets.first_uncleanable_dirty_offset == 50
    to_clean = LogToClean.of(log.segments, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)
    assert to_clean.first_uncleanable_offset == 49


def test_S6_invalid_checkpoints_are_reset(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for i in range(20):
        log.append(kv(f"k{i}=v"))
    log.roll()
    common = {"last_stable_offset": 20, "min_compaction_lag_ms": 0, "now_ms": clock.time_ms()}
    too_high = cleanable_offsets(log.segments, log_start_offset=0, log_end_offset=20, checkpoint_offset=200, **common)
    assert (too_high.first_dirty_offset, too_high.force_update_checkpoint) == (0, True)
    too_low = cleanable_offsets(log.segments, log_start_offset=10, log_end_offset=20, checkpoint_offset=0, **common)
    assert (too_low.first_dirty_offset, too_low.force_update_checkpoint) == (10, True)
    fine = cleanable_offsets(log.segments, log_start_offset=0, log_end_offset=20, checkpoint_offset=15, **common)
    assert (fine.first_dirty_offset, fine.force_update_checkpoint) == (15, False)


# ------------------------------------------------------------- B. offset map capacity and multi-round cleaning
def test_S8_map_fills_mid_log_and_progresses_one_entry_per_round(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for key in ("k0", "k1", "k0", "k1", "k0"):
        log.append(kv(f"{key}=v"))
    log.roll()
    log.append(kv("k9=active"))
    cleaner = make_cleaner(clock, slots=2, load_factor=0.75)
    assert log.clean(cleaner, 2).end_offset == 3
    assert [(r.offset, r.key) for r in log.records()][:4] == [(1, b"k1"), (2, b"k0"), (3, b"k1"), (4, b"k0")]
    assert log.clean(cleaner, 3).end_offset == 4
    assert log.offsets()[:3] == [2, 3, 4]
    assert log.clean(cleaner, 4).end_offset == 5
    assert [(r.offset, r.key) for r in log.records()][:2] == [(3, b"k1"), (4, b"k0")]


def test_S9_partial_offset_map(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for i in range(5):
        log.append(kv(f"k{i}=v"))
    log.roll()
    cleaner = make_cleaner(clock, slots=3, load_factor=0.75)
    from minikafka.cleaner.cleaner_stats import CleanerStats

    stats = CleanerStats()
    cleaner.build_offset_map(log.segments, 2, 5, stats)
    offset_map = cleaner.offset_map
    assert (offset_map.get(b"k2"), offset_map.get(b"k3")) == (2, 3)
    assert offset_map.get(b"k0") == -1 and offset_map.get(b"k4") == -1
    assert offset_map.latest_offset == 3
    assert stats.map_messages_read == 4


def test_S10_multi_round_with_a_small_map(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    keys = 300
    for _ in range(2):
        for start in range(0, keys, 50):
            log.append(kv(*[f"k{i}=v" for i in range(start, start + 50)]))
    log.roll()
    log.append(kv("tail=x"))
    cleaner = make_cleaner(clock, slots=200, load_factor=0.9)  # 180 keys per round
    ends = []
    dirty = 0
    while dirty < 2 * keys:
        result = log.clean(cleaner, dirty)
        ends.append(result.end_offset)
        dirty = result.end_offset
    assert ends == [180, 360, 540, 600]
    assert log.offsets() == list(range(keys, 2 * keys + 1))
    assert result.stats.buffer_utilization == 60 / 200


def test_S12_offset_gaps_do_not_stall_progress(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for i in range(10):
        log.append(kv(f"k{i}=v"))
    log.roll(base_offset=11)
    log.append(kv("k0=w"))
    assert log.clean(make_cleaner(clock), 0).end_offset == 11

    other = SegmentLog(tmp_path / "variant", clock) if (tmp_path / "variant").mkdir() is None else None
    assert other is not None
    for i in range(10):
        other.append(kv(f"k{i}=v"))
    other.roll(base_offset=15)
    for i in range(15, 25):
        other.append(kv(f"k{i}=v"))
    other.roll(base_offset=30)
    other.append(kv("k0=w"))
    assert other.clean(make_cleaner(clock), 0).end_offset == 30


# ------------------------------------------------------------------------------ C. tombstones (KIP-534)
def test_S14_two_stage_tombstone_removal_and_header_stamp(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=2000))
    log.append(kv("k1=a"), timestamp=T0)
    log.roll()
    log.append(kv("k2=b"), timestamp=T0 + 1000)
    log.roll()
    log.append(kv("k1="), timestamp=T0 + 2000)
    log.roll()
    log.append(kv("k3=c"), timestamp=T0 + 3000)
    clock.advance_ms(5000)
    t1 = clock.time_ms()
    assert log.clean(make_cleaner(clock), 0).end_offset == 3
    assert log.offsets() == [1, 2, 3]
    stamped = batch_at(log, 2)
    assert stamped.has_delete_horizon and stamped.attributes & 0x40
    assert stamped.delete_horizon_ms == stamped.base_timestamp == t1 + 2000
    assert next(iter(stamped.records())).timestamp == T0 + 2000
    clock.advance_ms(2001)
    log.append(kv("k4=d"))
    log.roll()
    log.append(kv("k5=e"))
    assert log.clean(make_cleaner(clock), 3).end_offset == 5
    assert log.offsets() == [1, 3, 4, 5]


def test_S15_tombstone_age_counts_from_first_cleaning_not_record_timestamp(tmp_path: Path, clock: FakeClock) -> None:
    retention = 10_000
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=retention))
    log.append(kv("k=v"))
    log.append(kv("k="), timestamp=clock.time_ms() - retention - 10_000)
    log.append(kv("other=x"))
    log.roll()
    log.append(kv("z=active"))
    t1 = clock.time_ms()
    log.clean(make_cleaner(clock), 0)
    assert log.offsets() == [1, 2, 3]
    clock.advance_ms(retention - 1)
    log.clean(make_cleaner(clock), 0)
    assert 1 in log.offsets()
    clock.set_time_ms(t1 + retention)
    log.clean(make_cleaner(clock), 0)
    assert log.offsets() == [2, 3]


def test_S16_zero_delete_retention_still_needs_two_rounds(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=0))
    log.append(kv("k=v"))
    log.append(kv("k="))
    log.append(kv("other=x"))
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    assert log.offsets() == [1, 2, 3]
    assert batch_at(log, 1).delete_horizon_ms == clock.time_ms()
    log.clean(make_cleaner(clock), 0)  # same instant: now >= horizon
    assert log.offsets() == [2, 3]


def test_S17_superseded_tombstone_removed_at_once(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("k="))
    log.append(kv("k=x"))
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    assert log.offsets() == [1, 2]
    assert not any(b.has_delete_horizon for b in log.batches())


def test_S18_all_keys_deleted_and_the_last_empty_batch(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=1000))
    log.append(kv("k1=a", "k2=b"))
    log.append(kv("k1=", "k2="))
    log.roll()
    log.append(kv("k9=z"))
    log.clean(make_cleaner(clock), 0)
    assert log.offsets() == [2, 3, 4]
    assert batch_at(log, 2).has_delete_horizon
    clock.advance_ms(1000)
    # Edge (KAFKA-17076): the tombstone batch is the last batch below the round's upper bound -> empty header.
    log.clean(make_cleaner(clock), 0)
    empty = batch_at(log, 2)
    assert (empty.records_count, empty.last_offset, empty.size_bytes) == (0, 3, 61)
    assert log.offsets() == [4]
    # With a new closed dirty segment the empty batch is no longer last and disappears.
    log.append(kv("k8=y"))
    log.roll()
    log.append(kv("k7=x"))
    log.clean(make_cleaner(clock), 4)
    assert [b.base_offset for b in log.batches()] == [4, 5, 6]
    assert log.segments[0].base_offset == 0


def test_S19_tombstones_past_the_mapped_range_get_a_horizon(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=500))
    log.append(kv("a=1"))
    log.append(kv("b=2"))
    log.append(kv("c="))
    log.append(kv("d=4"))
    log.roll()
    log.append(kv("z=active"))
    result = log.clean(make_cleaner(clock, slots=3, load_factor=0.75), 0)
    assert result.end_offset == 2
    assert log.offsets() == [0, 1, 2, 3, 4]
    stamped = batch_at(log, 2)
    assert stamped.delete_horizon_ms == clock.time_ms() + 500
    assert not batch_at(log, 3).has_delete_horizon


def test_S20_compressed_batch_mixing_tombstone_and_value(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=1000))
    log.append(kv("k1=", "k2=v"), compression=CompressionType.GZIP, timestamp=T0 - 5)
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    first = batch_at(log, 0)
    horizon = clock.time_ms() + 1000
    assert first.compression_type == CompressionType.GZIP
    assert first.has_delete_horizon and first.base_timestamp == horizon
    assert [(r.offset, r.key, r.value, r.timestamp) for r in first.records()] == [
        (0, b"k1", None, T0 - 5), (1, b"k2", b"v", T0 - 5)]
    clock.advance_ms(1000)
    log.append(kv("y=1"))
    log.roll()
    log.append(kv("x=2"))
    log.clean(make_cleaner(clock), 1)
    first = batch_at(log, 0)
    assert first.compression_type == CompressionType.GZIP
    assert (first.base_offset, first.last_offset, first.delete_horizon_ms) == (0, 1, horizon)
    assert [(r.offset, r.key) for r in first.records()] == [(1, b"k2")]


# -------------------------------------------------------------- D. batch rewriting, compression, producers
@pytest.mark.parametrize(
    "codec", [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD])
def test_S21_rewritten_batch_keeps_the_stored_codec(tmp_path: Path, clock: FakeClock, codec: CompressionType) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("a=1", "b=1", "c=1"), compression=codec)
    second = bytes(log.append(kv("a=2", "c=2")).raw())
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    first = batch_at(log, 0)
    assert first.compression_type == codec
    assert (first.base_offset, first.last_offset) == (0, 2)
    assert [(r.offset, r.key, r.value) for r in first.records()] == [(1, b"b", b"1")]
    assert first.is_valid()
    assert bytes(batch_at(log, 3).raw()) == second


def test_S22_untouched_batches_are_copied_byte_for_byte(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    originals = [bytes(log.append(kv(f"k{i}=v{i}", f"j{i}=w"), compression=CompressionType.LZ4).raw())
                 for i in range(5)]
    log.roll()
    log.append(kv("z=active"))
    result = log.clean(make_cleaner(clock), 0)
    assert [bytes(b.raw()) for b in log.batches()[:5]] == originals
    assert result.stats.bytes_written == result.stats.bytes_read == sum(map(len, originals))


def test_S23_idempotent_sequences_survive_cleaning(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("1=a", "2=a", "3=a"), producer_id=1, producer_epoch=0, base_sequence=0)
    log.append(kv("3=b", "1=b", "4=b"), producer_id=2, producer_epoch=0, base_sequence=0)
    log.append(kv("1=c", "4=c"), producer_id=3, producer_epoch=0, base_sequence=0)
    log.roll()
    log.append(kv("z=active"))
    producers = {1: LastProducerRecord(2, 0), 2: LastProducerRecord(5, 0), 3: LastProducerRecord(7, 0)}
    log.clean(make_cleaner(clock), 0, producers=producers)
    batches = [b for b in log.batches() if b.producer_id > 0]
    assert [b.last_offset for b in batches] == [2, 5, 7]
    assert [(r.offset, r.key) for r in log.records()][:4] == [(1, b"2"), (3, b"3"), (6, b"1"), (7, b"4")]
    assert {b.producer_id: b.last_sequence for b in batches} == {1: 2, 2: 2, 3: 1}

    log.append(kv("2=d"), producer_id=4, producer_epoch=0, base_sequence=0)
    log.roll()
    log.append(kv("y=active"))
    log.clean(make_cleaner(clock), 8, producers={**producers, 4: LastProducerRecord(9, 0)})
    batches = [b for b in log.batches() if b.producer_id > 0]
    assert [b.last_offset for b in batches] == [2, 5, 7, 9]
    assert (batches[0].records_count, batches[0].size_bytes, batches[0].last_sequence) == (0, 61, 2)
    assert (batches[0].producer_id, batches[0].producer_epoch, batches[0].base_sequence) == (1, 0, 0)


def test_S24_producer_last_batch_kept_as_empty_header(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("k0=a"))
    log.append(kv("k0=b"), producer_id=1, producer_epoch=0, base_sequence=0)
    log.append(kv("k0=c"), producer_id=2, producer_epoch=0, base_sequence=0)
    log.append(kv("k0=d"), producer_id=3, producer_epoch=0, base_sequence=0)
    log.append(kv("k1=e"), producer_id=2, producer_epoch=0, base_sequence=1)
    log.roll()
    log.append(kv("z=active"))
    producers = {1: LastProducerRecord(1, 0), 2: LastProducerRecord(4, 0), 3: LastProducerRecord(3, 0)}
    log.clean(make_cleaner(clock), 0, producers=producers)
    closed = log.batches()[:-1]
    assert [b.last_offset for b in closed] == [1, 3, 4]
    assert closed[0].records_count == 0
    assert [(r.offset, r.key) for r in log.records()][:2] == [(3, b"k0"), (4, b"k1")]
    assert {b.producer_id: b.last_sequence for b in closed} == {1: 0, 2: 1, 3: 0}


def test_S25_empty_header_disappears_once_the_producer_writes_again(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    txn = {"producer_id": 1, "producer_epoch": 0, "transactional": True}
    log.append(kv("1=a"), base_sequence=0, **txn)
    log.append(kv("2=b", "3=c"), base_sequence=1, **txn)
    log.append_marker(1, commit=False, first_offset=0)
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0, producers={1: LastProducerRecord(2, 0)})
    closed = log.batches()[:-1]
    assert [b.last_offset for b in closed] == [2, 3]
    assert closed[0].records_count == 0 and closed[0].last_sequence == 2
    assert closed[1].is_control
    assert log.offsets() == [4]

    log.segments[-1].close()
    log.segments[-1].delete()
    log.segments.pop()
    log.next_offset = 4
    log.roll(base_offset=4)
    log.append(kv("1=x", "5=y"), producer_id=1, producer_epoch=0, base_sequence=3)
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 4, producers={1: LastProducerRecord(5, 0)})
    closed = log.batches()[:-1]
    assert [b.last_offset for b in closed] == [3, 5]
    assert log.offsets()[:2] == [4, 5]
    assert closed[1].last_sequence == 4

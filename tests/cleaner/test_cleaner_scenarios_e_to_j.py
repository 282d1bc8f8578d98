"""Spec §5 scenarios E-H and J decided by the pure core: transactions (via the aborted-transaction hook),
keys, lags (range functions), grouping and files, round statistics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.cleaner.cleaner import LastProducerRecord, group_segments_by_size
from minikafka.cleaner.log_to_clean import cleanable_offsets, max_compaction_delay_ms
from minikafka.protocol.records import RecordBatch
from minikafka.storage.clock import FakeClock
from tests.cleaner.segment_log import SegmentLog, TopicConfig, kv, make_cleaner

T0 = 1_700_000_000_000
HOUR_MS = 3_600_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def entries(log: SegmentLog) -> list[int]:
    """Offsets of data records and markers (empty batches contribute nothing)."""
    return [r.offset for b in log.batches() for r in b.records()]


def closed_entries(log: SegmentLog) -> list[int]:
    return [o for o in entries(log) if o < log.active.base_offset]


# ----------------------------------------------------------------------------------- E. transactions
def test_S26_aborted_data_removed_at_once_abort_marker_in_two_stages(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=1000))
    txn = {"producer_id": 1, "producer_epoch": 0, "transactional": True}
    log.append(kv("1=a"), **txn)
    log.append(kv("2=b", "3=c"), **txn)
    log.append_marker(1, commit=False, first_offset=0)
    log.append(kv("3=d"), **txn)
    log.append_marker(1, commit=True)
    log.roll()
    log.append(kv("z=active"))
    cleaner = make_cleaner(clock)
    log.clean(cleaner, 0)
    assert closed_entries(log) == [3, 4, 5]
    assert [o for o in log.offsets() if o < 6] == [4]
    log.clean(cleaner, 0)  # no batch of the aborted txn is read any more: the marker gets its horizon
    assert closed_entries(log) == [3, 4, 5]
    abort = next(b for b in log.batches() if b.base_offset == 3)
    assert abort.is_control and abort.delete_horizon_ms == clock.time_ms() + 1000
    clock.advance_ms(1000)
    log.clean(cleaner, 0)
    assert closed_entries(log) == [4, 5]


def test_S27_commit_marker_lifecycle(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=1000))
    txn = {"producer_id": 1, "producer_epoch": 0, "transactional": True}
    log.append(kv("1=a"), **txn)
    log.append(kv("2=b", "3=c"), **txn)
    log.append_marker(1, commit=True)
    log.append(kv("2=d"), **txn)
    log.append_marker(1, commit=True)
    log.roll()
    log.append(kv("z=active"))
    cleaner = make_cleaner(clock)
    log.clean(cleaner, 0)
    assert closed_entries(log) == [0, 2, 3, 4, 5]
    log.segments[-1].close()
    log.segments[-1].delete()
    log.segments.pop()
    log.roll(base_offset=6)
    log.append(kv("1=e", "3=f"), **txn)
    log.append_marker(1, commit=True)
    log.roll()
    log.append(kv("z=active"))
    log.clean(cleaner, 6)
    assert closed_entries(log) == [3, 4, 5, 6, 7, 8]  # marker 3 kept: its data batch was read this round
    log.clean(cleaner, 0)
    assert closed_entries(log) == [3, 4, 5, 6, 7, 8]  # now stamped
    clock.advance_ms(1000)
    log.clean(cleaner, 0)
    assert closed_entries(log) == [4, 5, 6, 7, 8]


def test_S28_aborted_transaction_spanning_segments(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("1=a"), producer_id=1, producer_epoch=0, base_sequence=0, transactional=True)
    log.roll()
    log.append_marker(1, commit=False, first_offset=0)
    log.roll()
    log.append(kv("z=active"))
    producers = {1: LastProducerRecord(0, 0)}
    for now_ms in (clock.time_ms(), 2**62):
        log.clean(make_cleaner(clock), 0, producers=producers, now_ms=now_ms)
        batches = log.batches()[:-1]
        assert [(b.base_offset, b.records_count, b.is_control) for b in batches] == [(0, 0, False), (1, 1, True)]


def test_S28_committed_transaction_spanning_segments(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("1=a"), producer_id=1, producer_epoch=0, transactional=True)
    log.roll()
    log.append_marker(1, commit=True)
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    assert closed_entries(log) == [0, 1]


def test_S30_data_keys_equal_to_control_keys(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("1=a"), producer_id=1, producer_epoch=0, transactional=True)
    log.append_marker(1, commit=True)
    commit_key = next(log.batches()[-1].records()).key
    log.append([(commit_key, b"x")], producer_id=2, producer_epoch=0, transactional=True)
    log.append_marker(2, commit=True)
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    assert closed_entries(log) == [0, 1, 2, 3]


# --------------------------------------------------------------------------------------------- F. keys
def test_S33_empty_key_is_a_key(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append([(b"", b"a")])
    log.append([(b"", b"b")])
    log.append([(None, b"unkeyed")])
    log.roll()
    log.append(kv("z=active"))
    log.clean(make_cleaner(clock), 0)
    assert log.key_values()[:1] == [(1, b"", b"b")]
    assert log.offsets() == [1, 3]


def test_S34_unkeyed_records_are_dropped_and_counted(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    unkeyed = [log.append([(None, b"u1"), (None, b"u2")]), log.append([(None, b"u3")])]
    unkeyed_bytes = sum(b.size_bytes for b in unkeyed)
    log.append(kv("k=a", "j=b"))
    log.roll()
    log.append(kv("z=active"))
    before = log.segments[0].size_bytes
    result = log.clean(make_cleaner(clock), 0)
    assert result.stats.invalid_messages_read == 3
    assert all(r.key is not None for r in log.records())
    assert log.segments[0].size_bytes == before - unkeyed_bytes
    assert "Found 3 invalid messages during compaction." in result.stats.format(0, "t-0", 0, result.end_offset)


# ------------------------------------------------------------------------------------ G. lags and rolling
def _lag_log(tmp_path: Path, clock: FakeClock, timestamps: list[int]) -> SegmentLog:
    log = SegmentLog(tmp_path, clock)
    for ts in timestamps:
        log.append(kv("k=v", "j=w"), timestamp=ts)
        log.roll()
    log.append(kv("k=active"), timestamp=timestamps[-1])
    return log


def test_S35_min_compaction_lag_holds_back_recent_segments(tmp_path: Path, clock: FakeClock) -> None:
    log = _lag_log(tmp_path, clock, [T0, T0, T0])
    common = {"log_start_offset": 0, "log_end_offset": 7, "checkpoint_offset": None, "last_stable_offset": 7,
              "min_compaction_lag_ms": HOUR_MS}
    clock.advance_ms(HOUR_MS // 2)
    held = cleanable_offsets(log.segments, now_ms=clock.time_ms(), **common)
    assert held.first_uncleanable_dirty_offset == 0
    clock.advance_ms(HOUR_MS // 2 + 1)
    free = cleanable_offsets(log.segments, now_ms=clock.time_ms(), **common)
    assert free.first_uncleanable_dirty_offset == 6  # the active segment's base
    log.clean(make_cleaner(clock), 0, uncleanable_offset=free.first_uncleanable_dirty_offset)
    assert log.offsets() == [4, 5, 6]


def test_S36_min_lag_judged_on_record_timestamps(tmp_path: Path, clock: FakeClock) -> None:
    old, recent = T0 - 2 * HOUR_MS, T0 - HOUR_MS // 2
    log = _lag_log(tmp_path, clock, [old, old + 1, recent, old + 2])
    common = {"log_start_offset": 0, "log_end_offset": 9, "checkpoint_offset": None, "last_stable_offset": 9,
              "now_ms": clock.time_ms()}
    offsets = cleanable_offsets(log.segments, min_compaction_lag_ms=HOUR_MS, **common)
    assert offsets.first_uncleanable_dirty_offset == 4  # the recent segment and everything after it wait
    unbounded = cleanable_offsets(log.segments, min_compaction_lag_ms=0, **common)
    assert unbounded.first_uncleanable_dirty_offset == 8


def test_S38_max_lag_does_not_override_min_lag_or_the_lso(tmp_path: Path, clock: FakeClock) -> None:
    old, recent = T0 - 3 * HOUR_MS, T0 - HOUR_MS // 2
    log = _lag_log(tmp_path, clock, [old, old + 1, recent, old + 2])
    firsts = [s.rolling_based_timestamp for s in log.segments]
    # max lag 2h says "clean now" for the 3h-old dirty segment ...
    assert max_compaction_delay_ms(log.segments, firsts, first_dirty_offset=0, max_compaction_lag_ms=2 * HOUR_MS,
                                   now_ms=clock.time_ms()) == HOUR_MS
    common = {"log_start_offset": 0, "log_end_offset": 9, "checkpoint_offset": None, "now_ms": clock.time_ms()}
    # ... but the 30-minute-old segment stays behind min lag 1h: only the older segments are cleanable,
    held = cleanable_offsets(log.segments, min_compaction_lag_ms=HOUR_MS, last_stable_offset=9, **common)
    assert held.first_uncleanable_dirty_offset == 4
    # and an open transaction (LSO 2) bounds the range below both.
    open_txn = cleanable_offsets(log.segments, min_compaction_lag_ms=HOUR_MS, last_stable_offset=2, **common)
    assert open_txn.first_uncleanable_dirty_offset == 2
    assert cleanable_offsets(log.segments, min_compaction_lag_ms=0, last_stable_offset=2,
                             **common).first_uncleanable_dirty_offset == 2


def test_S37_max_compaction_delay(tmp_path: Path, clock: FakeClock) -> None:
    log = _lag_log(tmp_path, clock, [T0, T0 + 5000])
    firsts = [s.rolling_based_timestamp for s in log.segments]
    assert firsts[0] == T0
    clock.advance_ms(5000)
    delay = max_compaction_delay_ms(log.segments, firsts, first_dirty_offset=0, max_compaction_lag_ms=1000,
                                    now_ms=clock.time_ms())
    assert delay == 4000
    # Only dirty closed segments count: from offset 2 the oldest first batch is T0 + 5000, not yet due.
    assert max_compaction_delay_ms(log.segments, firsts, first_dirty_offset=2, max_compaction_lag_ms=1000,
                                   now_ms=clock.time_ms()) == 0
    assert max_compaction_delay_ms(log.segments, firsts, first_dirty_offset=0,
                                   max_compaction_lag_ms=2**63 - 1, now_ms=clock.time_ms()) == 0


# ------------------------------------------------------------------------ H. grouping, files, metadata
def _ten_segments(tmp_path: Path, clock: FakeClock, config: TopicConfig | None = None) -> SegmentLog:
    log = SegmentLog(tmp_path, clock, config)
    for i in range(10):
        log.append(kv(f"k{i}=v"))
        log.roll()
    log.append(kv("z=active"))
    return log


def test_S41_segment_grouping_by_input_sizes(tmp_path: Path, clock: FakeClock) -> None:
    log = _ten_segments(tmp_path, clock)
    closed = log.segments[:-1]
    size = closed[0].size_bytes
    assert all(s.size_bytes == size for s in closed)
    assert [len(g) for g in group_segments_by_size(closed, 2**31 - 1, 2**31 - 1, 10)] == [10]
    assert [len(g) for g in group_segments_by_size(closed, 1, 2**31 - 1, 10)] == [1] * 10
    assert [len(g) for g in group_segments_by_size(closed, 3 * size + 1, 2**31 - 1, 10)] == [3, 3, 3, 1]


def test_S41_grouping_by_index_size_and_output_names(tmp_path: Path, clock: FakeClock) -> None:
    log = _ten_segments(tmp_path, clock, TopicConfig(index_interval_bytes=0))
    for segment in log.segments[:-1]:
        segment.append(*_one_more(segment))
    closed = log.segments[:-1]
    index_size = closed[0].time_index.size_bytes  # 12-byte entries: the binding limit
    assert index_size > 0 and all(s.time_index.size_bytes == index_size for s in closed)
    assert all(0 < s.offset_index.size_bytes <= index_size for s in closed)
    groups = group_segments_by_size(closed, 2**31 - 1, 3 * index_size + 1, 10)
    assert [len(g) for g in groups] == [3, 3, 3, 1]


def _one_more(segment: object) -> tuple[bytes, int, int, int]:
    from minikafka.protocol.records import Record
    from minikafka.protocol.records.builder import build_batch

    assert hasattr(segment, "next_offset")
    offset = segment.next_offset
    return build_batch([Record(offset, T0, b"extra", b"x")], base_offset=offset), offset, T0, offset


def test_S41_cleaning_merges_small_segments_named_after_the_first(tmp_path: Path, clock: FakeClock) -> None:
    log = _ten_segments(tmp_path, clock)
    size = log.segments[0].size_bytes
    log.config = TopicConfig(segment_bytes=3 * size + 1)
    result = log.clean(make_cleaner(clock), 0)
    assert [g.cleaned.base_offset for g in result.groups] == [0, 3, 6, 9]
    names = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".log")
    assert names == [f"{b:020d}.log" for b in (0, 3, 6, 9, 10)]
    assert log.offsets() == list(range(11))


def test_S42_offset_span_over_int_max_is_never_merged(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("k=a"))
    log.roll(base_offset=2**31 + 5)
    log.append(kv("k=b"))
    log.roll()
    log.append(kv("z=active"))
    end = log.active.base_offset
    assert [len(g) for g in group_segments_by_size(log.segments[:-1], 2**31 - 1, 2**31 - 1, end)] == [1, 1]
    result = log.clean(make_cleaner(clock), 0)
    assert [g.cleaned.base_offset for g in result.groups] == [0, 2**31 + 5]
    assert log.segments[0].size_bytes == 0  # k=a superseded across the gap
    assert log.offsets() == [2**31 + 5, 2**31 + 6]


def test_S42_empty_segments_always_join_a_group(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    log.append(kv("k=a"))
    log.roll(base_offset=2**31 + 5)  # stays empty, far beyond a 2^31 span
    log.roll(base_offset=2**31 + 6)
    log.append(kv("z=active"))
    closed = log.segments[:-1]
    assert [s.size_bytes > 0 for s in closed] == [True, False]
    assert [len(g) for g in group_segments_by_size(closed, 2**31 - 1, 2**31 - 1, 2**31 + 6)] == [2]
    log.clean(make_cleaner(clock), 0)
    assert [s.base_offset for s in log.segments] == [0, 2**31 + 6]


def test_S43_one_empty_batch_survives_when_a_group_is_all_obsolete(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for segment in range(4):
        for i in range(10):
            log.append(kv(f"k{segment}-{i}=v"))
        log.roll()
    log.append(kv("z=active"))
    # A later round maps every key of the first three segments as superseded.
    cleaner = make_cleaner(clock)
    for segment in range(3):
        for i in range(10):
            cleaner.offset_map.put(f"k{segment}-{i}".encode(), 10_000)
    for segment in log.segments[:3]:
        assert segment.size_bytes > 0
    from minikafka.cleaner.cleaner_stats import CleanerStats
    from minikafka.cleaner.transaction_metadata import CleanedTransactionMetadata

    group = cleaner._clean_segments(log.segments[:3], clock.time_ms(), log.config, CleanerStats(),
                                    CleanedTransactionMetadata(), {}, 30, lambda a, b: ())
    batches = [RecordBatch(bytes(b.raw())) for _, b in group.cleaned.log.batches(0)]
    assert [(b.records_count, b.last_offset) for b in batches] == [(0, 29)]


def test_S46_cleaned_segment_metadata(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(index_interval_bytes=0))
    for i in range(5):
        log.append(kv(f"k{i}=a"), timestamp=T0 + i)
    log.append(kv("k0=b"), timestamp=T0 + 100)
    log.roll()
    log.append(kv("k1=b"), timestamp=T0 + 50)
    log.roll()
    log.append(kv("z=active"), timestamp=T0 + 200)
    last_source_mtime_ms = T0 - 12_345
    os.utime(log.segments[1].log.path, ns=(last_source_mtime_ms * 10**6,) * 2)
    result = log.clean(make_cleaner(clock), 0)
    (group,) = result.groups
    cleaned = log.segments[0]
    assert cleaned is group.cleaned
    assert cleaned.log.last_modified_ms() == last_source_mtime_ms
    assert cleaned.time_index.last_entry == (T0 + 100, 5)
    assert cleaned.find_offset_by_timestamp(T0 + 1, 0) == (2, T0 + 2)
    assert not list(tmp_path.glob("*.cleaned"))


# ------------------------------------------------------------------------------------- J. statistics
def test_S53_round_statistics(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock)
    for key in ("k0", "k1", "k0", "k1", "k0"):
        log.append(kv(f"{key}=v"))
    log.roll()
    log.append(kv("z=active"))
    segment_size = log.segments[0].size_bytes
    result = log.clean(make_cleaner(clock, slots=4, load_factor=0.75), 2)
    stats = result.stats
    assert result.end_offset == 5
    assert (stats.messages_read, stats.bytes_read) == (5, segment_size)
    assert stats.messages_written == 2
    assert stats.bytes_written == log.segments[0].size_bytes
    assert stats.invalid_messages_read == 0
    assert stats.buffer_utilization == 2 / 4
    assert int(100 * stats.bytes_written / stats.bytes_read) == 40
    text = stats.format(1, "topic-0", 2, 5)
    assert "Log cleaner thread 1 cleaned log topic-0 (dirty section = [2, 5])" in text
    assert "Buffer utilization: 50.0%" in text and "(5 messages)" in text and "(2 messages)" in text


def test_S13_multi_pass_with_aborted_transactions_and_a_tiny_map(tmp_path: Path, clock: FakeClock) -> None:
    log = SegmentLog(tmp_path, clock, TopicConfig(delete_retention_ms=50_000))
    p1 = {"producer_id": 1, "producer_epoch": 0, "transactional": True}
    p2 = {"producer_id": 2, "producer_epoch": 0, "transactional": True}
    log.append(kv("1=v", "2=v"), **p1)
    log.append(kv("2=v", "3=v"), **p2)
    log.append(kv("3=v", "4=v"), **p1)
    log.append_marker(1, commit=True)
    log.append_marker(2, commit=True)
    log.append(kv("2=v", "3=v"), **p1)
    log.append_marker(1, commit=False, first_offset=8)
    log.append(kv("4=v", "5=v"), **p2)
    log.append(kv("5=v", "6=v"), **p1)
    log.append_marker(1, commit=True)
    log.append_marker(2, commit=False, first_offset=11)
    log.append(kv("6=v", "7=v"), **p2)
    log.append_marker(2, commit=True)
    log.roll()
    log.append(kv("z=active"))
    producers = {1: LastProducerRecord(14, 0), 2: LastProducerRecord(18, 0)}
    cleaner = make_cleaner(clock, slots=4, load_factor=0.75)

    def clean_pass(first_dirty: int) -> int:
        return log.clean(cleaner, first_dirty, producers=producers).end_offset

    assert clean_pass(0) == 4
    assert [b.base_offset for b in log.batches()][:-1] == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert closed_entries(log) == [0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    # The cleaned segment's .txnindex keeps only the entries still backed by data.
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_transactions()] == [
        (1, 8, 10), (2, 11, 16)]
    assert clean_pass(4) == 14
    assert closed_entries(log) == [0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert log.aborted_transactions() == []
    clock.advance_ms(50_000)
    assert clean_pass(14) == 20
    assert closed_entries(log) == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]

"""Crash recovery: torn tails, corrupt indexes, and every intermediate state of the cleaner's swap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.protocol.records import Record, iter_batches
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.file_records import FILL_AHEAD_BYTES
from minikafka.storage.indexes import WRITE_AFTER_ENTRIES
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_segment import LogSegment
from minikafka.storage.unified_log import UnifiedLog
from tests.storage.conftest import T0, LogFactory, batch


def all_offsets(log: UnifiedLog) -> list[int]:
    data = log.read(log.log_start_offset, 1 << 24).records
    return [r.offset for b in iter_batches(data) for r in b.records()]


def all_values(log: UnifiedLog) -> list[bytes | None]:
    data = log.read(log.log_start_offset, 1 << 24).records
    return [r.value for b in iter_batches(data) for r in b.records()]


def test_reopen_after_clean_close_keeps_everything(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "300"})
    for i in range(10):
        log.append_as_leader(batch(b"v%d" % i))
    log.close()
    reopened = make_log({"segment.bytes": "300"}, clean_shutdown=True)
    assert reopened.log_end_offset == 10
    assert all_offsets(reopened) == list(range(10))
    reopened.append_as_leader(batch(b"more"))
    assert reopened.log_end_offset == 11


def test_torn_tail_is_truncated_and_appends_continue(make_log: LogFactory) -> None:
    log = make_log()
    for i in range(5):
        log.append_as_leader(batch(b"value-%d" % i))
    log.flush()
    path = log.dir / "00000000000000000000.log"
    size = log.active_segment.size_bytes  # the file runs on: zeros filled ahead
    last_batch_size = len(batch(b"value-4"))
    # kill -9 mid-write: half of the last batch, then garbage
    with open(path, "r+b") as f:
        f.truncate(size - last_batch_size // 2)
        f.seek(0, os.SEEK_END)
        f.write(b"\xde\xad\xbe\xef" * 10)
    reopened = make_log(recovery_point=0, clean_shutdown=False)
    assert reopened.log_end_offset == 4
    assert path.stat().st_size == size - last_batch_size
    assert all_offsets(reopened) == [0, 1, 2, 3]
    info = reopened.append_as_leader(batch(b"after"))
    assert info.first_offset == 4
    assert all(b.is_valid() for b in iter_batches(reopened.read(0, 1 << 20).records))


@pytest.mark.parametrize("clean_shutdown", [False, True], ids=["killed", "trim failed at close"])
def test_zeros_filled_ahead_are_cut_off_at_load_and_appends_continue_after_the_last_batch(
        make_log: LogFactory, clean_shutdown: bool) -> None:
    log = make_log()
    for i in range(5):
        log.append_as_leader(batch(b"value-%d" % i))
    log.flush()
    path = log.dir / "00000000000000000000.log"
    data_bytes = log.active_segment.size_bytes
    assert path.stat().st_size == FILL_AHEAD_BYTES > data_bytes  # the active segment's file is filled ahead
    assert path.read_bytes()[data_bytes:].count(0) == FILL_AHEAD_BYTES - data_bytes
    # reopened while the first log still holds the file open: as after kill -9, or a close whose trim failed
    reopened = make_log(recovery_point=0, clean_shutdown=clean_shutdown)
    assert reopened.log_end_offset == 5
    assert path.stat().st_size == data_bytes
    assert all_offsets(reopened) == [0, 1, 2, 3, 4]
    assert reopened.append_as_leader(batch(b"after")).first_offset == 5
    assert all(b.is_valid() for b in iter_batches(reopened.read(0, 1 << 20).records))
    reopened.close()
    assert path.stat().st_size == data_bytes + len(batch(b"after"))  # trimmed at close


def test_a_crash_before_the_first_append_was_written_leaves_an_empty_segment(make_log: LogFactory,
                                                                              tmp_path: Path) -> None:
    log = make_log()
    log.append_as_leader(batch(b"value"))
    path = log.dir / "00000000000000000000.log"
    with open(path, "r+b") as f:  # the fill reached the disk, the batch did not
        f.write(bytes(log.active_segment.size_bytes))
    reopened = make_log(recovery_point=0, clean_shutdown=False)
    assert reopened.log_end_offset == 0
    assert path.stat().st_size == 0
    assert reopened.append_as_leader(batch(b"again")).first_offset == 0


def test_a_rolled_segment_ends_at_its_last_batch(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "300"})
    for i in range(10):
        log.append_as_leader(batch(b"v%d" % i))
    *rolled, active = log.segments()
    assert rolled
    assert all(segment.log.path.stat().st_size == segment.size_bytes for segment in rolled)
    assert active.log.path.stat().st_size == FILL_AHEAD_BYTES


def test_corrupt_crc_in_middle_truncates_and_drops_later_segments(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200"})
    for i in range(8):
        log.append_as_leader(batch(b"x" * 40, b"%d" % i))
    first = log.segments()[0]
    log.close()
    with open(first.log.path, "r+b") as f:
        f.seek(first.size_bytes - 5)
        f.write(b"\xff")
    reopened = make_log({"segment.bytes": "200"}, recovery_point=0)
    assert len(reopened.segments()) == 1
    assert reopened.log_end_offset < first.next_offset
    assert all_offsets(reopened) == list(range(reopened.log_end_offset))


def test_zero_padded_index_is_rebuilt(make_log: LogFactory) -> None:
    log = make_log({"index.interval.bytes": "10"})
    for i in range(10):
        log.append_as_leader(batch(b"x" * 30, timestamp_ms=T0 + i))
    entries = log.segments()[0].offset_index.entries
    log.close()
    index = log.dir / "00000000000000000000.index"
    with open(index, "ab") as f:
        f.write(b"\x00" * 80)  # Kafka-style preallocation: fails the sanity check
    reopened = make_log({"index.interval.bytes": "10"}, clean_shutdown=True)
    assert reopened.segments()[0].offset_index.entries == entries
    assert index.stat().st_size == entries * 8
    assert reopened.fetch_offset_by_timestamp(T0 + 5) == (5, T0 + 5)


def test_missing_indexes_are_rebuilt(make_log: LogFactory) -> None:
    log = make_log({"index.interval.bytes": "10"})
    for _ in range(10):
        log.append_as_leader(batch(b"x" * 30))
    log.close()
    (log.dir / "00000000000000000000.index").unlink()
    (log.dir / "00000000000000000000.timeindex").unlink()
    reopened = make_log({"index.interval.bytes": "10"}, clean_shutdown=True)
    assert reopened.segments()[0].offset_index.entries > 0
    assert all_offsets(reopened) == list(range(10))


# ----------------------------------------------------------------- swap protocol
def _cleaned_segment(dir: Path, base: int, values: list[tuple[int, bytes]]) -> LogSegment:
    """A `.cleaned` segment holding one record per (offset, value)."""
    segment = LogSegment(dir, base, suffix=".cleaned")
    for offset, value in values:
        data = build_batch([Record(offset, T0, b"k", value, ())], base_offset=offset)
        segment.append(data, offset, T0, offset)
    segment.on_becoming_inactive()
    segment.flush()
    return segment


def _three_segment_log(make_log: LogFactory) -> UnifiedLog:
    log = make_log({"segment.bytes": "150", "cleanup.policy": "compact", "file.delete.delay.ms": "0"})
    for i in range(6):
        log.append_as_leader(batch(b"orig-%d" % i, keys=[b"k"]))
    assert len(log.segments()) >= 3
    return log


def test_replace_segments_swaps_cleaned_data(make_log: LogFactory) -> None:
    log = _three_segment_log(make_log)
    old = log.segments()[:-1]
    last_old_offset = old[-1].next_offset - 1
    cleaned = _cleaned_segment(log.dir, 0, [(last_old_offset, b"cleaned")])
    log.replace_segments([cleaned], old)
    assert log.segments()[0].base_offset == 0
    assert len(log.segments()) == 2
    assert all_values(log)[0] == b"cleaned"
    names = sorted(p.name for p in log.dir.iterdir())
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    log.close()
    reopened = make_log({"segment.bytes": "150", "cleanup.policy": "compact"}, clean_shutdown=True)
    assert all_values(reopened)[0] == b"cleaned"
    assert reopened.log_end_offset == 6


def _rename(path: Path, old: str, new: str) -> None:
    path.rename(path.with_name(path.name[: len(path.name) - len(old)] + new))


@pytest.mark.parametrize("state", ["only_cleaned", "cleaned_and_partial_swap", "all_swap_old_intact",
                                   "all_swap_old_deleted", "partial_swap_renamed", "deleted_pending"])
def test_swap_recovery_states(make_log: LogFactory, state: str) -> None:
    log = _three_segment_log(make_log)
    old = log.segments()[:-1]
    last_old_offset = old[-1].next_offset - 1
    original_values = all_values(log)
    log.close()
    cleaned = _cleaned_segment(log.dir, 0, [(last_old_offset, b"cleaned")])
    cleaned.close()
    cleaned_files = [cleaned.log.path, cleaned.offset_index.path, cleaned.time_index.path]
    if state == "cleaned_and_partial_swap":
        _rename(cleaned_files[0], ".cleaned", ".swap")
    elif state != "only_cleaned":
        for path in cleaned_files:
            _rename(path, ".cleaned", ".swap")
        if state in ("all_swap_old_deleted", "partial_swap_renamed", "deleted_pending"):
            for segment in old:
                for path in (segment.log.path, segment.offset_index.path, segment.time_index.path):
                    if path.exists():
                        path.rename(str(path) + ".deleted")
        if state in ("partial_swap_renamed", "deleted_pending"):
            swap_log = cleaned_files[0].with_name(cleaned_files[0].name[: -len(".cleaned")] + ".swap")
            swap_log.rename(swap_log.with_name(swap_log.name[: -len(".swap")]))
        if state == "deleted_pending":
            for path in log.dir.glob("*.swap"):
                _rename(path, ".swap", "")
    reopened = make_log({"segment.bytes": "150", "cleanup.policy": "compact"}, recovery_point=0)
    values = all_values(reopened)
    if state in ("only_cleaned", "cleaned_and_partial_swap"):
        assert values == original_values
    else:
        assert values[0] == b"cleaned"
        assert values[1:] == original_values[last_old_offset + 1:]
    assert reopened.log_end_offset == 6
    leftovers = [p.name for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers == []


def test_replace_segments_skips_when_old_segments_already_gone(make_log: LogFactory, clock: FakeClock) -> None:
    log = _three_segment_log(make_log)
    old = log.segments()[:1]
    log.maybe_increment_log_start_offset(old[0].next_offset)
    log.delete_retention_segments(clock.time_ms())
    cleaned = _cleaned_segment(log.dir, 0, [(0, b"stale")])
    log.replace_segments([cleaned], old)
    assert b"stale" not in all_values(log)
    assert not list(log.dir.glob("*.cleaned"))


def test_config_is_used_for_recovery(tmp_path: Path, clock: FakeClock) -> None:
    config = LogConfig.from_props({"segment.bytes": "1000"})
    log = UnifiedLog(tmp_path / "t-3", config, clock=clock)
    assert (log.topic, log.partition) == ("t", 3)
    log.append_as_leader(batch(b"x"))
    log.close()
    again = UnifiedLog(tmp_path / "t-3", config, clock=clock)
    assert again.log_end_offset == 1


def index_file_entries(path: Path, entry_bytes: int) -> int:
    size = path.stat().st_size
    assert size % entry_bytes == 0, f"{path.name} holds a torn entry"
    return size // entry_bytes


def test_index_entries_reach_the_files_in_runs_and_a_crash_in_between_loses_no_lookup(
    make_log: LogFactory, tmp_path: Path
) -> None:
    """Index entries are written once WRITE_AFTER_ENTRIES wait; a kill -9 leaves the files a prefix, and the
    unclean-shutdown recovery rebuilds them whole."""
    config = {"index.interval.bytes": "1", "segment.bytes": str(1 << 30)}
    log = make_log(config)
    appends = WRITE_AFTER_ENTRIES + WRITE_AFTER_ENTRIES // 2
    for i in range(appends):
        log.append_as_leader(batch(b"v%d" % i, timestamp_ms=T0 + i))
    segment = log.segments()[0]
    in_memory = segment.offset_index.entries
    assert in_memory == appends - 1  # the first batch is never indexed (Kafka's interval rule)
    on_disk = index_file_entries(segment.offset_index.path, 8)
    assert on_disk == WRITE_AFTER_ENTRIES, "entries were written one by one, or not in runs"
    assert index_file_entries(segment.time_index.path, 12) == WRITE_AFTER_ENTRIES

    crashed = tmp_path / "crashed" / "topic-0"  # the files as a kill -9 now would leave them
    crashed.mkdir(parents=True)
    for path in log.dir.iterdir():
        (crashed / path.name).write_bytes(path.read_bytes())
    recovered = UnifiedLog(crashed, LogConfig.from_props(config), clock=FakeClock(T0), recovery_point=0)
    assert recovered.log_end_offset == appends
    assert recovered.segments()[0].offset_index.entries == in_memory
    assert index_file_entries(recovered.segments()[0].offset_index.path, 8) == in_memory
    assert recovered.fetch_offset_by_timestamp(T0 + appends - 3) == (appends - 3, T0 + appends - 3)
    assert all_values(recovered) == [b"v%d" % i for i in range(appends)]


def test_a_rolled_segment_has_all_its_index_entries_on_disk(make_log: LogFactory) -> None:
    """The cleaner's worker process opens rolled segments from their files."""
    log = make_log({"index.interval.bytes": "1"})
    for i in range(20):
        log.append_as_leader(batch(b"v%d" % i, timestamp_ms=T0 + i))
    log.roll()
    rolled = log.segments()[0]
    assert index_file_entries(rolled.offset_index.path, 8) == rolled.offset_index.entries == 19
    assert index_file_entries(rolled.time_index.path, 12) == rolled.time_index.entries == 19
    reopened = LogSegment(rolled.dir, rolled.base_offset)
    assert reopened.offset_index.entries == 19
    reopened.sanity_check()

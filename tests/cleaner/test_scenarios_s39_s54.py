"""Spec §5 scenarios S39, S40, S45, S47, S51, S52, S54 decided in-process (storage + cleaner shell with a
FakeClock), and the regression test of the read-during-swap bug (bench/cleaner_crash.py "acknowledged value
lost"): a fetch that could not fit a segment's next batch went on with a later segment, leaving an offset
hole that a consumer's position skipped."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from minikafka.cleaner.config import CleanerConfig
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.records import iter_batches
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.log_segment import LogSegment
from minikafka.storage.unified_log import UnifiedLog
from tests.cleaner.compacted_log import COMPACT, SMALL, T0, produce, read_all

HOUR_MS = 3_600_000


def make_log(directory: Path, clock: FakeClock, props: dict[str, str] | None = None) -> UnifiedLog:
    return UnifiedLog(directory, LogConfig.from_props(props or {}), clock=clock)


def fetch_step(log: UnifiedLog, position: int, max_bytes: int,
               seen: dict[bytes | None, tuple[int, bytes | None]]) -> int:
    """One fetch as librdkafka handles it: deliver records at/after the position, move the position past
    every batch received (empty batches included). Returns the new position."""
    data = log.read(position, max_bytes, max_offset=log.high_watermark, min_one_message=True).records
    for batch in iter_batches(data):
        if not batch.is_control:
            for record in batch.records():
                if record.offset >= position:
                    seen[record.key] = (record.offset, record.value)
        position = max(position, batch.last_offset + 1)
    return position


# ------------------------------------------------------------------------------ read-during-swap regression
def test_fetch_never_continues_past_a_segment_whose_next_batch_did_not_fit(tmp_path: Path,
                                                                          clock: FakeClock) -> None:
    """The crash test's lost records: segment 0 filled most of the fetch, segment 1's first batch did not fit
    in the rest (an empty read), segment 2's small batch did, and the consumer skipped offset 1."""
    log = make_log(tmp_path / "t-0", clock, COMPACT)
    produce(log, [(b"a", b"x" * 850)])
    log.roll()
    produce(log, [(b"b", b"y" * 300)])
    log.roll()
    produce(log, [(b"c", b"z")])
    data = log.read(0, 1000, max_offset=log.high_watermark).records
    assert [r.offset for b in iter_batches(data) for r in b.records()] == [0]
    # a segment emptied by cleaning (nothing at/after the position) is still skipped over
    data = log.read(1, 1000, max_offset=log.high_watermark).records
    assert [r.offset for b in iter_batches(data) for r in b.records()] == [1, 2]


def test_fetch_skips_segments_emptied_by_cleaning(log_manager: LogManager, clock: FakeClock) -> None:
    """Cleaning can leave empty segments (base offset = next offset) before the data: a fetch from offset 0
    passes over them instead of returning nothing."""
    log_manager.create_topic("t", 1, {**COMPACT, "segment.bytes": "200"})
    log = log_manager.get_log("t", 0)
    assert log is not None
    for version in range(3):
        for key in range(4):
            produce(log, [(b"k%d" % key, b"v%d" % version + b"." * 40)])
    produce(log, [(b"tail", b"x")])
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is True
    segments = log.segments()
    assert segments[0].is_empty and segments[1].is_empty and not segments[-2].is_empty
    expected = [(offset, key) for offset, key, _ in read_all(log)]
    assert expected[-1] == (12, b"tail") and len(expected) < 13
    for max_bytes in (1, 100, 1 << 20):
        seen: dict[bytes | None, tuple[int, bytes | None]] = {}
        position, fetches = 0, 0
        while position < log.high_watermark:
            new_position = fetch_step(log, position, max_bytes, seen)
            assert new_position > position, f"no progress at offset {position} with max_bytes {max_bytes}"
            position, fetches = new_position, fetches + 1
        assert {key: offset for key, (offset, _) in seen.items()} == {key: offset for offset, key in expected}


@pytest.mark.parametrize("max_bytes", [700, 1100, 1500, 2300, 3100])
def test_consumer_from_offset_zero_during_cleaner_swaps_sees_every_latest_value(
        log_manager: LogManager, clock: FakeClock, max_bytes: int) -> None:
    """A consumer fetching from offset 0 between every group swap of a cleaning round (as the restarted broker
    in bench/cleaner_crash.py serves it) ends with exactly the latest value of every key."""
    log_manager.create_topic("t", 1, {**COMPACT, "segment.bytes": "2000"})
    log = log_manager.get_log("t", 0)
    assert log is not None
    rng = random.Random(7)
    latest: dict[bytes | None, bytes | None] = {}
    for version in range(60):
        batch = [(b"k%d" % rng.randrange(12), b"%d:" % version + b"." * rng.choice((10, 90, 400)))
                 for _ in range(rng.choice((1, 1, 3)))]
        produce(log, list(batch))
        latest.update(batch)
    assert len(log.segments()) > 5
    seen: dict[bytes | None, tuple[int, bytes | None]] = {}
    position = 0
    original_replace = log.replace_segments

    def replace_then_fetch(new: list[LogSegment], old: list[LogSegment]) -> None:
        nonlocal position
        original_replace(new, old)
        position = fetch_step(log, position, max_bytes, seen)

    log.replace_segments = replace_then_fetch  # type: ignore[method-assign,assignment]
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is True
    while position < log.high_watermark:
        position = fetch_step(log, position, max_bytes, seen)
    assert {key: value for key, (_, value) in seen.items()} == latest


# --------------------------------------------------------------------------------------------- G. rolling
def test_S39_roll_decisions_use_batch_timestamps(tmp_path: Path, clock: FakeClock) -> None:
    """UnifiedLogTest.testTimeBasedLogRoll / testTimeBasedLogRollDuringAppend with segment.ms = 1 h."""
    log = make_log(tmp_path / "t-0", clock, {"segment.ms": str(HOUR_MS)})
    assert len(log.segments()) == 1
    # without timestamps (-1) the wall clock since the segment's creation counts
    clock.advance_ms(HOUR_MS + 1)
    produce(log, [(b"k", b"v")], timestamp_ms=-1)
    assert len(log.segments()) == 1, "the first append to an empty segment never rolls"
    produce(log, [(b"k", b"v")], timestamp_ms=-1)
    assert len(log.segments()) == 2, "segment created more than segment.ms ago: roll"
    for expected in (3, 4):
        clock.advance_ms(HOUR_MS + 1)
        produce(log, [(b"k", b"v")], timestamp_ms=-1)
        assert len(log.segments()) == expected
    # a timestamped batch in a segment whose first batch has none: still the wall clock
    stamped_ms = clock.time_ms() + HOUR_MS + 1
    produce(log, [(b"k", b"v")], timestamp_ms=stamped_ms)
    assert len(log.segments()) == 4
    clock.advance_ms(HOUR_MS + 1)
    produce(log, [(b"k", b"v")], timestamp_ms=stamped_ms)
    assert len(log.segments()) == 5
    # the new segment's first batch has a timestamp: wall-clock hours change nothing...
    clock.advance_ms(5 * HOUR_MS)
    produce(log, [(b"k", b"v")], timestamp_ms=stamped_ms)
    produce(log, [(b"k", b"v")], timestamp_ms=clock.time_ms() - 10 * HOUR_MS)
    assert len(log.segments()) == 5, "batches stamped at the first batch's time never roll"
    # ...exactly segment.ms after the first batch's timestamp does not roll, one millisecond more does
    produce(log, [(b"k", b"v")], timestamp_ms=stamped_ms + HOUR_MS)
    assert len(log.segments()) == 5
    produce(log, [(b"k", b"v")], timestamp_ms=stamped_ms + HOUR_MS + 1)
    assert len(log.segments()) == 6
    assert log.active_segment.base_offset == log.log_end_offset - 1  # the rolling batch starts the new one


def test_S40_segment_jitter(tmp_path: Path, clock: FakeClock) -> None:
    """UnifiedLogTest.testTimeBasedLogRollJitter: roll when waited > segment.ms - the segment's jitter."""
    max_jitter_ms = 20 * 60
    log = make_log(tmp_path / "t-0", clock, {"segment.ms": str(HOUR_MS), "segment.jitter.ms": str(max_jitter_ms)})
    produce(log, [(b"k", b"v")], timestamp_ms=clock.time_ms())
    jitter_ms = log.active_segment.rolling_jitter_ms
    assert 0 <= jitter_ms < max_jitter_ms
    clock.advance_ms(HOUR_MS - max_jitter_ms)
    produce(log, [(b"k", b"v")], timestamp_ms=clock.time_ms())
    assert len(log.segments()) == 1, "earlier than segment.ms minus the largest jitter"
    clock.advance_ms(max_jitter_ms - jitter_ms + 1)
    produce(log, [(b"k", b"v")], timestamp_ms=clock.time_ms())
    assert len(log.segments()) == 2, "later than segment.ms minus this segment's jitter"
    # every new segment draws its own jitter in [0, min(segment.jitter.ms, segment.ms))
    draws = set()
    for _ in range(40):
        clock.advance_ms(HOUR_MS + 1)
        produce(log, [(b"k", b"v")], timestamp_ms=clock.time_ms())
        draws.add(log.active_segment.rolling_jitter_ms)
    assert all(0 <= d < max_jitter_ms for d in draws) and len(draws) > 1
    capped = make_log(tmp_path / "u-0", clock, {"segment.ms": "100", "segment.jitter.ms": str(HOUR_MS)})
    for _ in range(20):
        clock.advance_ms(101)
        produce(capped, [(b"k", b"v")], timestamp_ms=clock.time_ms())
        assert 0 <= capped.active_segment.rolling_jitter_ms < 100
    no_jitter = make_log(tmp_path / "v-0", clock, {"segment.ms": "100"})
    assert no_jitter.active_segment.rolling_jitter_ms == 0


# ------------------------------------------------------------------------------- H. files, checkpoints
def fill_with_duplicates(log: UnifiedLog, rounds: int = 3, keys: int = 20, timestamp_ms: int = T0) -> None:
    for r in range(rounds):
        produce(log, [(b"k%d" % i, b"v%d" % r) for i in range(keys)], timestamp_ms)
        log.roll()
    produce(log, [(b"tail", b"x")], timestamp_ms)


def names(log: UnifiedLog, suffix: str) -> list[str]:
    return sorted(p.name for p in log.dir.iterdir() if p.name.endswith(suffix))


def test_S45_deleted_files_linger_for_file_delete_delay_ms(log_manager: LogManager, clock: FakeClock) -> None:
    log_manager.create_topic("t", 1, {**COMPACT, "file.delete.delay.ms": "1000"})
    log = log_manager.get_log("t", 0)
    assert log is not None
    fill_with_duplicates(log)
    replaced = [s.base_offset for s in log.segments()[:-1]]
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is True
    assert log_manager.cleaner_offset_checkpoint.read() == {("t", 0): 60}
    # right after the swap: every replaced segment's files are there as `.deleted`
    assert names(log, ".log.deleted") == [f"{b:020d}.log.deleted" for b in replaced]
    assert len(names(log, ".index.deleted")) == len(names(log, ".timeindex.deleted")) == len(replaced)
    assert [s.base_offset for s in log.pending_deletions] == replaced
    # reads are served by the new segments meanwhile
    assert read_all(log) == [(40 + i, b"k%d" % i, b"v2") for i in range(20)] + [(60, b"tail", b"x")]
    clock.advance_ms(999)
    log_manager.roll_due_segments(clock.time_ms())
    assert len(names(log, ".deleted")) == 3 * len(replaced)
    clock.advance_ms(1)
    log_manager.roll_due_segments(clock.time_ms())
    assert names(log, ".deleted") == [] and log.pending_deletions == []
    assert read_all(log)[-1] == (60, b"tail", b"x")


def test_S45_retention_deletes_linger_too_and_restart_removes_leftovers(tmp_path: Path, clock: FakeClock) -> None:
    directory = tmp_path / "t-0"
    log = make_log(directory, clock, {"retention.ms": "1000", "file.delete.delay.ms": "60000"})
    fill_with_duplicates(log, keys=2)
    clock.advance_ms(5000)
    assert log.delete_retention_segments(clock.time_ms()) == 3
    assert len(names(log, ".log.deleted")) == 3
    assert read_all(log) == [(6, b"tail", b"x")]
    assert log.delete_pending_segments(clock.time_ms() + 59_999) == 0
    # a crash now leaves the `.deleted` files behind: loading the directory deletes them
    reopened = make_log(directory, clock, {"retention.ms": "1000"})
    assert names(reopened, ".deleted") == []
    assert read_all(reopened) == [(6, b"tail", b"x")]
    # a clean close unlinks whatever is still pending
    clock.advance_ms(10_000)
    produce(reopened, [(b"k", b"late")], clock.time_ms())
    reopened.roll()
    produce(reopened, [(b"k", b"later")], clock.time_ms())
    clock.advance_ms(5000)
    assert reopened.delete_retention_segments(clock.time_ms()) >= 1
    assert names(reopened, ".deleted")
    reopened.close()
    assert names(reopened, ".deleted") == []


def test_S45_zero_delay_unlinks_at_once(tmp_path: Path, clock: FakeClock) -> None:
    log = make_log(tmp_path / "t-0", clock, {"retention.ms": "1000", "file.delete.delay.ms": "0"})
    fill_with_duplicates(log, keys=2)
    clock.advance_ms(5000)
    assert log.delete_retention_segments(clock.time_ms()) == 3
    assert names(log, ".deleted") == [] and log.pending_deletions == []


def test_S47_deleted_partition_leaves_the_checkpoint(log_manager: LogManager, clock: FakeClock) -> None:
    for topic in ("gone", "kept"):
        log_manager.create_topic(topic, 2, COMPACT)
        for partition in range(2):
            log = log_manager.get_log(topic, partition)
            assert log is not None
            fill_with_duplicates(log, keys=2)
    cleaner = LogCleaner(log_manager, SMALL, clock)
    while cleaner.run_once(cleaner.workers[0]):
        pass
    assert log_manager.cleaner_offset_checkpoint.read() == {
        ("gone", 0): 6, ("gone", 1): 6, ("kept", 0): 6, ("kept", 1): 6}
    log_manager.delete_topic("gone")
    assert log_manager.cleaner_offset_checkpoint.read() == {("kept", 0): 6, ("kept", 1): 6}
    lines = (log_manager.log_dir / "cleaner-offset-checkpoint").read_text().splitlines()
    assert lines[:2] == ["0", "2"] and sorted(lines[2:]) == ["kept 0 6", "kept 1 6"]


def test_S47_malformed_checkpoint_takes_the_log_dir_offline(log_manager: LogManager, clock: FakeClock) -> None:
    from minikafka.protocol.errors import KafkaStorageError

    log_manager.create_topic("t", 2, COMPACT)
    logs = [log_manager.get_log("t", p) for p in range(2)]
    for log in logs:
        assert log is not None
        fill_with_duplicates(log, keys=2)
    path = log_manager.log_dir / "cleaner-offset-checkpoint"
    path.write_text("0\n3\nt 0 4\n")  # entry count mismatch
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is False  # nothing is cleaned in an offline dir
    assert log_manager.offline_reason is not None and "checkpoint" in log_manager.offline_reason
    for log in logs:
        assert log is not None
        with pytest.raises(KafkaStorageError) as raised:
            log.read(0, 1000)
        assert raised.value.error_code == 56
        with pytest.raises(KafkaStorageError):
            produce(log, [(b"k", b"v")])
    assert path.read_text() == "0\n3\nt 0 4\n"  # an offline dir's checkpoint is left alone


# ---------------------------------------------------------------------------------- J. errors, metrics
def corrupt(segment: LogSegment, position: int, garbage: bytes) -> None:
    with open(segment.log.path, "r+b") as f:
        f.seek(position)
        f.write(garbage)


def cleanable_bytes(log: UnifiedLog) -> int:
    return sum(s.size_bytes for s in log.segments()[:-1])


def test_S51_corrupt_segments_make_partitions_uncleanable_others_continue(
        log_manager: LogManager, clock: FakeClock) -> None:
    """testMarksPartitionsAsOfflineAndPopulatesUncleanableMetrics: three partitions with 20 keys x3, garbage
    over a segment of partitions 0 and 1, more duplicates; 0 and 1 become uncleanable, 2 is cleaned."""
    policy = {"cleanup.policy": "compact,delete", "retention.ms": str(HOUR_MS)}
    logs = []
    for name in ("p0", "p1", "p2"):  # one single-partition topic each, so that one can be deleted alone
        log_manager.create_topic(name, 1, {**COMPACT, **policy})
        log = log_manager.get_log(name, 0)
        assert log is not None
        fill_with_duplicates(log)
        logs.append(log)
    for log in logs[:2]:
        first = log.segments()[0]
        corrupt(first, first.size_bytes // 2, b"\xff" * 64)
    for log in logs:
        fill_with_duplicates(log)
    cleaner = LogCleaner(log_manager, SMALL, clock, max_retries=0)
    worker = cleaner.workers[0]
    while cleaner.run_once(worker):
        pass
    marks = cleaner.manager.uncleanable_partitions()
    assert sorted(marks) == [("p0", 0), ("p1", 0)] and all(m.permanent for m in marks.values())
    assert all("Corrupt" in m.reason or "Invalid" in m.reason for m in marks.values())
    assert log_manager.cleaner_offset_checkpoint.read() == {("p2", 0): 121}
    assert [v for _, k, v in read_all(logs[2]) if k != b"tail"] == [b"v2"] * 20
    metrics = cleaner.metrics()
    assert metrics.uncleanable_partitions_count == 2
    assert metrics.uncleanable_bytes == cleanable_bytes(logs[0]) + cleanable_bytes(logs[1]) > 0
    # the uncleanable partitions are skipped by compact,delete retention too
    clock.advance_ms(2 * HOUR_MS)
    for log in logs:
        produce(log, [(b"new", b"n")], clock.time_ms())
    cleaner.run_once(worker)
    assert logs[0].log_start_offset == logs[1].log_start_offset == 0
    assert logs[2].log_start_offset == logs[2].active_segment.base_offset > 0
    log_manager.delete_topic("p0")
    cleaner.run_once(worker)
    metrics = cleaner.metrics()
    assert metrics.uncleanable_partitions_count == 1
    assert metrics.uncleanable_bytes == cleanable_bytes(logs[1])
    assert cleaner.dead_thread_count == 0


def test_S52_large_records_clean_even_after_max_message_bytes_is_lowered(
        log_manager: LogManager, clock: FakeClock) -> None:
    mib = 1024 * 1024
    log_manager.create_topic("t", 1, {**COMPACT, "max.message.bytes": str(2 * mib)})
    log = log_manager.get_log("t", 0)
    assert log is not None
    for version in range(3):
        for key in range(2):
            produce(log, [(b"k%d" % key, bytes([version]) * mib)])
        log.roll()
    produce(log, [(b"tail", b"x")])
    config = CleanerConfig(dedupe_buffer_size=4 * mib, backoff_ms=100, io_buffer_size=1024)
    cleaner = LogCleaner(log_manager, config, clock)
    assert cleaner.run_once(cleaner.workers[0]) is True
    cleaned = [(k, (v or b"")[:1], len(v or b"")) for _, k, v in read_all(log)]
    assert cleaned == [(b"k0", b"\x02", mib), (b"k1", b"\x02", mib), (b"tail", b"x", 1)]
    # ratio 0: the one small dirty record is enough to make the 4 MiB log eligible
    log_manager.alter_topic_config("t", {**COMPACT, "min.cleanable.dirty.ratio": "0",
                                         "max.message.bytes": str(512 * 1024)})
    log.roll()
    produce(log, [(b"k0", b"small")])
    log.roll()
    produce(log, [(b"tail", b"y")])
    assert cleaner.run_once(cleaner.workers[0]) is True
    assert [(k, len(v or b"")) for _, k, v in read_all(log)] == [
        (b"k1", mib), (b"tail", 1), (b"k0", 5), (b"tail", 1)]  # the active segment's tail=y is not cleaned
    assert cleaner.manager.uncleanable_partitions() == {}


@pytest.mark.parametrize("damage", ["size_past_end", "garbage_magic"])
def test_S52_corrupt_batch_header_makes_the_partition_uncleanable(
        log_manager: LogManager, clock: FakeClock, damage: str) -> None:
    log_manager.create_topic("t", 1, COMPACT)
    log = log_manager.get_log("t", 0)
    assert log is not None
    fill_with_duplicates(log, keys=4)
    first = log.segments()[1]
    if damage == "size_past_end":  # the batch claims more bytes than are left in the segment
        corrupt(first, 8, (first.size_bytes).to_bytes(4, "big"))
    else:
        corrupt(first, 16, b"\x63")  # magic byte
    before = [s.base_offset for s in log.segments()]
    cleaner = LogCleaner(log_manager, SMALL, clock, max_retries=0)
    assert cleaner.run_once(cleaner.workers[0]) is True
    (mark,) = cleaner.manager.uncleanable_partitions().values()
    assert mark.permanent and "Corrupt" in mark.reason
    assert [s.base_offset for s in log.segments()] == before  # nothing swapped in: no record silently dropped
    assert log_manager.cleaner_offset_checkpoint.read() == {}
    assert not list(log.dir.glob("*.cleaned"))


def test_S54_dead_threads_counted_and_revived_by_reconfiguration(log_manager: LogManager,
                                                                 clock: FakeClock) -> None:
    from minikafka.protocol.errors import InvalidConfigError

    config = CleanerConfig(dedupe_buffer_size=16 * 1024 * 1024, backoff_ms=10, threads=2)
    cleaner = LogCleaner(log_manager, config, clock)
    original_run_once = cleaner.run_once

    def boom(_worker: object) -> bool:
        raise RuntimeError("bug in the cleaner loop")

    cleaner.run_once = boom  # type: ignore[method-assign,assignment]
    cleaner.startup()
    for worker in cleaner.workers:
        assert worker.thread is not None
        worker.thread.join(10)
    assert cleaner.dead_thread_count == 2 == cleaner.metrics().dead_thread_count
    for threads in (0, 5):  # to 0, or more than double: rejected, threads untouched
        with pytest.raises(InvalidConfigError):
            cleaner.reconfigure(CleanerConfig(dedupe_buffer_size=16 * 1024 * 1024, backoff_ms=10, threads=threads))
    assert cleaner.dead_thread_count == 2
    cleaner.run_once = original_run_once  # type: ignore[method-assign]
    cleaner.reconfigure(CleanerConfig(dedupe_buffer_size=16 * 1024 * 1024, backoff_ms=10, threads=3))
    try:
        assert len(cleaner.workers) == 3 and cleaner.dead_thread_count == 0
        assert all(w.thread is not None and w.thread.is_alive() for w in cleaner.workers)
        with pytest.raises(InvalidConfigError):  # less than half of 3
            cleaner.reconfigure(CleanerConfig(dedupe_buffer_size=16 * 1024 * 1024, backoff_ms=10, threads=1))
    finally:
        cleaner.shutdown()
    assert cleaner.dead_thread_count == 0

"""Spec §5 scenarios S39, S40, S45, S47, S51, S52, S54 decided in-process (storage + cleaner shell with a
FakeClock), and the regression test of the read-during-swap bug (bench/cleaner_crash.py "acknowledged value
lost"): a fetch that could not fit a segment's next batch went on with a later segment, leaving an offset
hole that a consumer's position skipped."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleaner.config import CleanerConfig
from cleaner.log_cleaner import LogCleaner
from protocol.records import Record, iter_batches
from protocol.records.builder import build_batch
from storage.clock import FakeClock
from storage.log_config import LogConfig
from storage.log_manager import LogManager
from storage.log_segment import LogSegment
from storage.unified_log import UnifiedLog

T0 = 1_700_000_000_000
HOUR_MS = 3_600_000
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
SMALL = CleanerConfig(dedupe_buffer_size=4 * 1024 * 1024, backoff_ms=100)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def log_manager(tmp_path: Path, clock: FakeClock) -> Iterator[LogManager]:
    manager = LogManager(tmp_path / "data", {}, clock)
    manager.startup()
    yield manager
    manager.shutdown()


def make_log(directory: Path, clock: FakeClock, props: dict[str, str] | None = None) -> UnifiedLog:
    return UnifiedLog(directory, LogConfig.from_props(props or {}), clock=clock)


def produce(log: UnifiedLog, pairs: list[tuple[bytes | None, bytes | None]], timestamp_ms: int = T0) -> None:
    records = [Record(i, timestamp_ms, key, value) for i, (key, value) in enumerate(pairs)]
    log.append_as_leader(build_batch(records, base_offset=0))


def read_all(log: UnifiedLog) -> list[tuple[int, bytes | None, bytes | None]]:
    data = log.read(log.log_start_offset, 1 << 30).records
    return [(r.offset, r.key, r.value) for b in iter_batches(data) if not b.is_control for r in b.records()]


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

"""The LogCleaner shell (spec §2.1, §2.2, §2.9, §2.12-§2.14, §3): rounds, checkpoint, retention, retries,
pause/abort, manual compaction and threads, against a real LogManager under tmp_path with a FakeClock."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from minikafka.cleaner.cleaner_manager import CleaningState
from minikafka.cleaner.config import CleanerConfig
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.cleaner.throttler import Throttler
from minikafka.protocol.records import iter_batches
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog
from tests.cleaner.compacted_log import COMPACT, SMALL, T0, produce
from tests.cleaner.compacted_log import read_all as latest


def make_topic(log_manager: LogManager, name: str, overrides: dict[str, str] | None = None,
               partitions: int = 1) -> list[UnifiedLog]:
    log_manager.create_topic(name, partitions, {**COMPACT, **(overrides or {})})
    return [log_manager.get_log(name, p) for p in range(partitions)]  # type: ignore[misc]


def fill_with_duplicates(log: UnifiedLog, rounds: int = 3, keys: int = 4) -> None:
    for r in range(rounds):
        produce(log, [(b"k%d" % i, b"v%d" % r) for i in range(keys)])
        log.roll()
    produce(log, [(b"tail", b"x")])


def test_round_cleans_checkpoints_and_logs_kafka_stats(log_manager: LogManager, clock: FakeClock,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    (log,) = make_topic(log_manager, "t")
    fill_with_duplicates(log)
    cleaner = LogCleaner(log_manager, SMALL, clock)
    with caplog.at_level(logging.INFO, logger="minikafka.cleaner.log_cleaner"):
        assert cleaner.run_once(cleaner.workers[0]) is True
    assert latest(log) == [(8 + i, b"k%d" % i, b"v2") for i in range(4)] + [(12, b"tail", b"x")]
    assert log_manager.cleaner_offset_checkpoint.read() == {("t", 0): 12}
    text = caplog.text
    assert "Beginning cleaning of log t-0" in text
    assert "Log cleaner thread 0 cleaned log t-0 (dirty section = [0, 12])" in text
    assert "(12 messages)" in text and "(4 messages)" in text
    stats = cleaner.workers[0].last_stats
    assert (stats.messages_read, stats.messages_written) == (12, 4)
    # Nothing dirty is left: the next iteration cleans nothing (the thread would back off).
    assert cleaner.run_once(cleaner.workers[0]) is False
    assert cleaner.manager.time_of_last_run_ms == clock.time_ms()
    (status,) = cleaner.partition_status()
    assert status.dirty_bytes == 0 and status.record.records_removed == 8 and status.record.last_clean_ms == T0


def test_ratio_threshold_then_max_compaction_lag_makes_it_due(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t", {"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "5000"})
    produce(log, [(b"k", b"a")])
    produce(log, [(b"k", b"b")])
    log.roll()
    cleaner = LogCleaner(log_manager, SMALL, clock)
    # The whole closed segment is dirty (ratio 1.0 > 0.99) so make it partly clean first.
    assert cleaner.run_once(cleaner.workers[0]) is True
    produce(log, [(b"k", b"c")])
    log.roll()
    assert cleaner.run_once(cleaner.workers[0]) is False  # ratio below 0.99, not overdue yet
    assert cleaner.manager.max_dirty_ratio > 0
    clock.advance_ms(7000)
    assert cleaner.run_once(cleaner.workers[0]) is True
    pre = cleaner.workers[0].last_pre_clean_stats
    assert pre.delayed_partitions == 1 and pre.max_compaction_delay_ms == 2000
    assert [v for _, _, v in latest(log)] == [b"c"]


def test_min_compaction_lag_holds_back_recent_segments(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t", {"min.compaction.lag.ms": "60000"})
    fill_with_duplicates(log)
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is False
    clock.advance_ms(60_001)
    assert cleaner.run_once(cleaner.workers[0]) is True


def test_compact_delete_retention_runs_on_the_cleaner(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t", {"cleanup.policy": "compact,delete", "retention.ms": "100000"})
    fill_with_duplicates(log)
    clock.advance_ms(200_000)
    produce(log, [(b"new", b"y")], timestamp_ms=clock.time_ms())
    cleaner = LogCleaner(log_manager, SMALL, clock)
    cleaner.run_once(cleaner.workers[0])
    assert log.log_start_offset >= 12
    assert all(key in (b"tail", b"new") for _, key, _ in latest(log))


def test_failing_partition_is_retried_then_uncleanable_and_others_still_clean(
        log_manager: LogManager, clock: FakeClock) -> None:
    bad, good = make_topic(log_manager, "t", partitions=2)
    fill_with_duplicates(bad)
    first = bad.segments()[0]
    with open(first.log.path, "r+b") as f:  # garbage over the second batch's header
        f.seek(first.size_bytes // 2)
        f.write(b"\xff" * 64)
    cleaner = LogCleaner(log_manager, SMALL, clock, max_retries=2, retry_backoff_ms=1000)
    worker = cleaner.workers[0]
    assert cleaner.run_once(worker) is True  # attempt 1 fails
    mark = cleaner.manager.uncleanable_partitions()[("t", 0)]
    assert mark.failures == 1 and not mark.permanent and mark.retry_at_ms == T0 + 1000
    assert cleaner.run_once(worker) is False  # waiting for the retry
    fill_with_duplicates(good)
    assert cleaner.run_once(worker) is True  # the healthy partition is cleaned meanwhile
    assert log_manager.cleaner_offset_checkpoint.read().get(("t", 1)) == 12
    for expected_failures, wait_ms in ((2, 1000), (3, 2000)):
        clock.advance_ms(wait_ms)
        assert cleaner.run_once(worker) is True
        assert cleaner.manager.uncleanable_partitions()[("t", 0)].failures == expected_failures
    mark = cleaner.manager.uncleanable_partitions()[("t", 0)]
    assert mark.permanent and "Error" in mark.reason
    clock.advance_ms(10**9)
    assert cleaner.run_once(worker) is False
    assert cleaner.dead_thread_count == 0


def test_pause_and_resume(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t")
    fill_with_duplicates(log)
    cleaner = LogCleaner(log_manager, SMALL, clock)
    cleaner.abort_and_pause("t", 0)
    cleaner.abort_and_pause("t", 0)
    assert cleaner.manager.state_of(("t", 0)) == (CleaningState.PAUSED, 2)
    assert cleaner.run_once(cleaner.workers[0]) is False
    cleaner.resume("t", 0)
    assert cleaner.run_once(cleaner.workers[0]) is False
    cleaner.resume("t", 0)
    assert cleaner.run_once(cleaner.workers[0]) is True
    with pytest.raises(ValueError):
        cleaner.resume("t", 0)


def test_abort_during_a_round_keeps_data_and_checkpoint(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t")
    fill_with_duplicates(log)
    before = latest(log)
    cleaner = LogCleaner(log_manager, SMALL, clock)
    aborter: list[threading.Thread] = []

    def throttle(_bytes: int) -> None:
        if not aborter:
            aborter.append(threading.Thread(target=cleaner.abort_and_pause, args=("t", 0, 10.0)))
            aborter[0].start()
            deadline = time.monotonic() + 10
            while cleaner.manager.state_of(("t", 0)) != (CleaningState.ABORTED, 0) and time.monotonic() < deadline:
                time.sleep(0.001)

    cleaner.throttler.maybe_throttle = throttle  # type: ignore[method-assign,assignment]
    assert cleaner.run_once(cleaner.workers[0]) is True
    aborter[0].join(10)
    assert cleaner.manager.state_of(("t", 0)) == (CleaningState.PAUSED, 1)
    assert latest(log) == before
    assert log_manager.cleaner_offset_checkpoint.read() == {}
    assert not list(log.dir.glob("*.cleaned")) and ("t", 0) not in cleaner.manager.uncleanable_partitions()


def test_topic_deleted_mid_round_is_not_marked_uncleanable(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t")
    fill_with_duplicates(log)
    cleaner = LogCleaner(log_manager, SMALL, clock)
    deleting = threading.Thread(target=log_manager.delete_topic, args=("t",))

    def throttle(_bytes: int) -> None:
        if not deleting.is_alive() and deleting.ident is None:
            deleting.start()  # the deletion aborts this round and waits for it to stop
            deadline = time.monotonic() + 10
            while cleaner.manager.state_of(("t", 0)) != (CleaningState.ABORTED, 0) and time.monotonic() < deadline:
                time.sleep(0.01)

    cleaner.throttler.maybe_throttle = throttle  # type: ignore[method-assign,assignment]
    cleaner.run_once(cleaner.workers[0])
    deleting.join(10)
    assert not deleting.is_alive() and log_manager.get_log("t", 0) is None
    assert cleaner.manager.uncleanable_partitions() == {}
    assert cleaner.manager.state_of(("t", 0)) is None


def test_manual_compaction_ignores_ratio_but_honours_min_lag(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t", {"min.cleanable.dirty.ratio": "1.0"})
    (lagged,) = make_topic(log_manager, "lagged", {"min.compaction.lag.ms": "60000"})
    for target in (log, lagged):
        for r in range(3):
            produce(target, [(b"k%d" % i, b"v%d" % r) for i in range(4)])  # all in the active segment
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is False
    request = cleaner.request_compaction("t")  # no threads running: served by a one-off thread
    assert request.wait(30)
    summary = request.to_json()
    assert summary["records_removed"] == 8 and summary["results"][0]["status"] == "cleaned"
    assert [v for _, _, v in latest(log)] == [b"v2"] * 4
    request = cleaner.request_compaction("lagged", 0)
    assert request.wait(30)
    assert request.to_json()["results"][0]["status"] == "nothing_to_clean"
    assert len(latest(lagged)) == 12


def test_threads_clean_in_the_background_and_stop(log_manager: LogManager, clock: FakeClock) -> None:
    config = CleanerConfig(dedupe_buffer_size=8 * 1024 * 1024, threads=2, backoff_ms=20)
    logs = make_topic(log_manager, "t", partitions=3)
    for log in logs:
        fill_with_duplicates(log)
    cleaner = LogCleaner(log_manager, config, clock)
    cleaner.startup()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if log_manager.cleaner_offset_checkpoint.read() == {("t", p): 12 for p in range(3)}:
                break
            time.sleep(0.02)
        assert log_manager.cleaner_offset_checkpoint.read() == {("t", p): 12 for p in range(3)}
        request = cleaner.request_compaction("t")
        assert request.wait(20)
        # The roll made each "tail" segment cleanable; one round each, nothing to remove.
        assert request.to_json()["records_removed"] == 0 and len(request.to_json()["results"]) == 3
    finally:
        cleaner.shutdown()
    assert all(w.thread is not None and not w.thread.is_alive() for w in cleaner.workers)
    assert cleaner.dead_thread_count == 0


def test_thread_death_is_counted(log_manager: LogManager, clock: FakeClock) -> None:
    cleaner = LogCleaner(log_manager, CleanerConfig(dedupe_buffer_size=4 * 1024 * 1024, backoff_ms=10), clock)

    def boom(_worker: object) -> bool:
        raise RuntimeError("bug")

    cleaner.run_once = boom  # type: ignore[method-assign,assignment]
    cleaner.startup()
    cleaner.shutdown()
    assert cleaner.dead_thread_count == 1


def test_throttler_sleeps_to_the_desired_rate() -> None:
    clock = FakeClock(T0)
    slept: list[float] = []
    throttler = Throttler(1000.0, clock, slept.append)
    throttler.maybe_throttle(500)
    clock.advance_ms(300)
    throttler.maybe_throttle(500)  # 1000 bytes in 300 ms at 1000 B/s: sleep until 1000 ms
    assert slept == [0.7]
    unlimited = Throttler(CleanerConfig().io_max_bytes_per_second, clock, slept.append)
    clock.advance_ms(300)
    unlimited.maybe_throttle(10**9)
    assert slept == [0.7] and unlimited.total_bytes == 10**9


def test_tombstone_removed_after_its_horizon_without_new_dirty_data(log_manager: LogManager,
                                                                     clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t", {"delete.retention.ms": "1000"})
    produce(log, [(b"k1", b"old"), (b"k2", b"x")])
    produce(log, [(b"k1", b"new"), (b"k2", None)])
    log.roll()
    cleaner = LogCleaner(log_manager, SMALL, clock)
    assert cleaner.run_once(cleaner.workers[0]) is True
    assert latest(log) == [(2, b"k1", b"new"), (3, b"k2", None)]
    (status,) = cleaner.partition_status()
    assert status.record.tombstones_pending == 1 and status.record.tombstone_horizon_ms == T0 + 1000
    assert cleaner.run_once(cleaner.workers[0]) is False  # horizon not reached
    clock.advance_ms(1000)
    assert cleaner.run_once(cleaner.workers[0]) is True  # no new dirty segment needed
    assert latest(log) == [(2, b"k1", b"new")]
    assert log_manager.cleaner_offset_checkpoint.read() == {("t", 0): 4}
    (status,) = cleaner.partition_status()
    assert status.record.tombstones_pending == 0 and status.record.tombstone_horizon_ms is None
    assert cleaner.run_once(cleaner.workers[0]) is False


def test_metrics_formulas(log_manager: LogManager, clock: FakeClock) -> None:
    (log,) = make_topic(log_manager, "t", {"max.compaction.lag.ms": "1000", "min.cleanable.dirty.ratio": "0.99"})
    produce(log, [(b"k", b"a")])
    produce(log, [(b"k", b"b")])
    log.roll()
    cleaner = LogCleaner(log_manager, SMALL, clock)
    clock.advance_ms(3500)
    assert cleaner.run_once(cleaner.workers[0]) is True
    m = cleaner.metrics()
    stats = cleaner.workers[0].last_stats
    assert m.max_compaction_delay_secs == 2  # floor(2500 / 1000)
    assert m.cleaner_recopy_percent == int(100 * stats.bytes_written / stats.bytes_read)
    assert m.max_buffer_utilization_percent == int(100 * stats.buffer_utilization)
    assert m.dead_thread_count == 0 and m.uncleanable_partitions_count == 0 and m.time_since_last_run_ms == 0
    clock.advance_ms(250)
    assert cleaner.metrics().time_since_last_run_ms == 250
    assert cleaner.metrics().cleaner_io_bytes > 0


def test_fetch_across_segments_never_skips_the_tail_of_a_segment(log_manager: LogManager, clock: FakeClock) -> None:
    """Cleaning leaves small batches after big ones; a fetch that cannot fit a segment's next (big) batch must
    not continue with the next segment's (small) batches: clients would skip the offsets in between."""
    (log,) = make_topic(log_manager, "t")
    produce(log, [(b"small", b"s")])
    produce(log, [(b"big", b"x" * 5000)])
    log.roll()
    produce(log, [(b"next", b"n")])
    data = log.read(0, 1000).records  # room for the first batch and the next segment's, not for "big"
    offsets = [r.offset for b in iter_batches(data) for r in b.records()]
    assert offsets == [0]

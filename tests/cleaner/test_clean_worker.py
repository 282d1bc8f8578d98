"""Cleaning rounds in worker processes (`cleaner.clean_worker`, issue 4 item 3): same output as the in-thread
path, abort mid-round, a killed worker, shutdown; against real LogManagers under tmp_path with a FakeClock."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.cleaner.clean_worker import CleanWorker, CleanWorkerCrashedError, GroupDone
from minikafka.cleaner.cleaner import CleanedGroup
from minikafka.cleaner.cleaner_manager import LogCleaningAbortedError
from minikafka.cleaner.config import CleanerConfig
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.records import Record, iter_batches
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog

T0 = 1_700_000_000_000
#: small segments so one round makes several groups; tombstones get a horizon on the first clean
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.bytes": "2048",
           "delete.retention.ms": "60000"}
IN_PROCESS = CleanerConfig(dedupe_buffer_size=4 * 1024 * 1024, backoff_ms=100, worker_processes=True)
IN_THREAD = dataclasses.replace(IN_PROCESS, worker_processes=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def _manager(directory: Path, clock: FakeClock) -> LogManager:
    manager = LogManager(directory, {}, clock)
    manager.startup()
    return manager


@pytest.fixture
def log_manager(tmp_path: Path, clock: FakeClock) -> Iterator[LogManager]:
    manager = _manager(tmp_path / "data", clock)
    yield manager
    manager.shutdown()


def fill(log_manager: LogManager, rounds: int = 6, keys: int = 40) -> UnifiedLog:
    """Several segments of overwritten keys, some tombstones, and an active tail."""
    log_manager.create_topic("t", 1, COMPACT)
    log = log_manager.get_log("t", 0)
    assert log is not None
    for r in range(rounds):
        pairs = [(b"k%03d" % i, None if (i + r) % 7 == 0 else b"value-%d-%d" % (r, i) * 3) for i in range(keys)]
        for start in range(0, keys, 8):
            records = [Record(j, T0, k, v) for j, (k, v) in enumerate(pairs[start:start + 8])]
            log.append_as_leader(build_batch(records, base_offset=0))
    log.roll()
    log.append_as_leader(build_batch([Record(0, T0, b"tail", b"x")], base_offset=0))
    return log


def records(log: UnifiedLog) -> list[tuple[int, bytes | None, bytes | None]]:
    data = log.read(log.log_start_offset, 1 << 30).records
    return [(r.offset, r.key, r.value) for b in iter_batches(data) if not b.is_control for r in b.records()]


def latest_by_key(log: UnifiedLog) -> dict[bytes | None, bytes | None]:
    return {key: value for _, key, value in records(log)}


def cleaned_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".cleaned"))


def segment_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())
            if p.suffix in (".log", ".index", ".timeindex", ".deleted")}


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_worker_round_writes_the_same_files_as_the_in_thread_round(tmp_path: Path, clock: FakeClock) -> None:
    outcomes = []
    for name, config in (("thread", IN_THREAD), ("process", IN_PROCESS)):
        manager = _manager(tmp_path / name, clock)
        log = fill(manager)
        before = latest_by_key(log)
        bytes_before = log.size_bytes
        cleaner = LogCleaner(manager, config, clock)
        try:
            assert cleaner.run_once(cleaner.workers[0]) is True
            assert (cleaner.workers[0].process is not None) is config.worker_processes
            (status,) = cleaner.partition_status()
            stats = cleaner.workers[0].last_stats
            outcomes.append((segment_files(log.dir), records(log), manager.cleaner_offset_checkpoint.read(),
                             (stats.messages_read, stats.messages_written, stats.bytes_read, stats.bytes_written,
                              stats.map_messages_read, stats.buffer_utilization),
                             dataclasses.replace(status.record, log_identity=0), cleaned_files(log.dir)))
            assert latest_by_key(log) == before
            assert log.size_bytes < bytes_before / 2
        finally:
            cleaner.shutdown()
            manager.shutdown()
    (files_t, records_t, checkpoint_t, stats_t, record_t, cleaned_t), in_process = outcomes
    assert files_t and cleaned_t == []
    assert list(in_process[0]) == list(files_t)  # same file names, then byte for byte
    for name, data in files_t.items():
        assert in_process[0][name] == data, name
    assert in_process[1:] == (records_t, checkpoint_t, stats_t, record_t, cleaned_t)
    assert record_t.tombstones_pending > 0 and record_t.tombstone_horizon_ms == T0 + 60000


def test_abort_mid_round_leaves_no_cleaned_files_and_the_log_intact(log_manager: LogManager) -> None:
    log = fill(log_manager)
    before, segments_before = latest_by_key(log), [s.base_offset for s in log.segments()]
    worker = CleanWorker(4 * 1024 * 1024, 0.9)
    swapped: list[int] = []

    def swap(group: CleanedGroup, done: GroupDone) -> None:
        log.replace_segments([group.cleaned], group.sources)
        swapped.append(done.base_offset)

    def check_done() -> None:
        if swapped:
            raise LogCleaningAbortedError("t-0 paused")

    first_uncleanable = log.segments()[-1].base_offset
    try:
        with pytest.raises(LogCleaningAbortedError):
            worker.clean(log.segments(), first_dirty_offset=0, first_uncleanable_offset=first_uncleanable,
                         now_ms=T0, config=log.config, producers={}, check_done=check_done,
                         throttle=lambda _bytes: None, throttle_rate_per_sec=40_960.0, on_group_cleaned=swap)
        assert swapped == [0]  # one group was swapped in, the round stopped before the next one
        assert cleaned_files(log.dir) == []
        assert latest_by_key(log) == before
        offsets = [offset for offset, _, _ in records(log)]
        assert offsets == sorted(set(offsets))
        assert [s.base_offset for s in log.segments()][1:] == segments_before[-(len(log.segments()) - 1):]
        # The same worker serves the next round to the end.
        swapped.clear()
        result = worker.clean(log.segments(), first_dirty_offset=0, first_uncleanable_offset=first_uncleanable,
                              now_ms=T0, config=log.config, producers={}, check_done=lambda: None,
                              throttle=lambda _bytes: None, throttle_rate_per_sec=1e308, on_group_cleaned=swap)
        assert result.result.end_offset == first_uncleanable and len(swapped) >= 1
        assert worker.starts == 1 and cleaned_files(log.dir) == []
        assert latest_by_key(log) == before
    finally:
        worker.close()


def test_killed_worker_fails_the_round_then_a_new_worker_cleans(log_manager: LogManager, clock: FakeClock,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    log = fill(log_manager)
    before = latest_by_key(log)
    cleaner = LogCleaner(log_manager, IN_PROCESS, clock, max_retries=3, retry_backoff_ms=1000)
    thread = cleaner.workers[0]
    real_throttle = cleaner.throttler.maybe_throttle
    killed: list[int] = []

    def kill_worker_once(observed_bytes: int) -> None:
        assert thread.process is not None and thread.process.pid is not None
        if not killed:
            killed.append(thread.process.pid)
            os.kill(thread.process.pid, signal.SIGKILL)
        real_throttle(observed_bytes)

    monkeypatch.setattr(cleaner.throttler, "maybe_throttle", kill_worker_once)
    try:
        assert cleaner.run_once(thread) is True  # the round fails, the thread lives on
        mark = cleaner.manager.uncleanable_partitions()[("t", 0)]
        assert mark.failures == 1 and not mark.permanent and "CleanWorkerCrashedError" in mark.reason
        assert cleaned_files(log.dir) == [] and latest_by_key(log) == before
        assert cleaner.dead_thread_count == 0
        clock.advance_ms(1000)
        assert cleaner.run_once(thread) is True
        assert thread.process is not None and thread.process.starts == 2 and thread.process.pid != killed[0]
        assert ("t", 0) not in cleaner.manager.uncleanable_partitions()
        assert latest_by_key(log) == before and cleaned_files(log.dir) == []
        assert log_manager.cleaner_offset_checkpoint.read() == {("t", 0): log.segments()[-1].base_offset}
        assert cleaner.throttler.total_bytes > 0
    finally:
        cleaner.shutdown()


def test_error_in_the_worker_is_raised_in_the_parent_and_the_worker_keeps_serving(
        log_manager: LogManager, clock: FakeClock) -> None:
    log = fill(log_manager)
    first = log.segments()[0]
    with open(first.log.path, "r+b") as f:  # garbage over a batch header in the middle
        f.seek(first.size_bytes // 2)
        f.write(b"\xff" * 64)
    cleaner = LogCleaner(log_manager, IN_PROCESS, clock, max_retries=3, retry_backoff_ms=1000)
    thread = cleaner.workers[0]
    try:
        assert cleaner.run_once(thread) is True
        mark = cleaner.manager.uncleanable_partitions()[("t", 0)]
        assert mark.failures == 1 and "Error" in mark.reason and "CleanWorkerCrashedError" not in mark.reason
        assert cleaned_files(log.dir) == []
        assert thread.process is not None and thread.process.starts == 1
    finally:
        cleaner.shutdown()


def test_threads_start_their_workers_and_shutdown_stops_them(log_manager: LogManager, clock: FakeClock) -> None:
    cleaner = LogCleaner(log_manager, dataclasses.replace(IN_PROCESS, backoff_ms=10_000), clock)
    cleaner.startup()
    try:
        worker = cleaner.workers[0]
        for _ in range(200):
            if worker.process is not None and worker.process.pid is not None:
                break
            time.sleep(0.01)
        assert worker.process is not None
        pid = worker.process.pid
        assert pid is not None and not process_gone(pid)
    finally:
        cleaner.shutdown()
    assert worker.process.pid is None and process_gone(pid)


def test_worker_processes_config_key() -> None:
    assert CleanerConfig.from_props({}).worker_processes is True
    config = CleanerConfig.from_props({"minikafka.log.cleaner.worker.processes": "false"})
    assert config.worker_processes is False


def test_worker_killed_mid_round_raises_crashed_and_its_cleaned_files_are_removed(log_manager: LogManager) -> None:
    log = fill(log_manager)
    before = latest_by_key(log)
    worker = CleanWorker(4 * 1024 * 1024, 0.9)
    first_uncleanable = log.segments()[-1].base_offset

    def kill_on_first_io(_bytes: int) -> None:
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)

    try:
        with pytest.raises(CleanWorkerCrashedError, match="exited with code -9"):
            worker.clean(log.segments(), first_dirty_offset=0, first_uncleanable_offset=first_uncleanable,
                         now_ms=T0, config=log.config, producers={}, check_done=lambda: None,
                         throttle=kill_on_first_io, throttle_rate_per_sec=40_960.0,
                         on_group_cleaned=lambda group, done: log.replace_segments([group.cleaned], group.sources))
        assert worker.pid is None and cleaned_files(log.dir) == [] and latest_by_key(log) == before
    finally:
        worker.close()


@pytest.mark.parametrize("config", [IN_THREAD, IN_PROCESS], ids=["thread", "process"])
def test_aborted_transaction_whose_marker_is_past_the_cleanable_range_does_not_supersede_a_committed_value(
    tmp_path: Path, clock: FakeClock, config: CleanerConfig
) -> None:
    """bench.kill_loop found this (worker path only): an ABORT marker's `.txnindex` entry lives in the marker's
    segment. When the aborted records sit below the first uncleanable offset and the marker above it, the worker,
    which opened only the segments below, did not see the entry: the aborted record went into the offset map as
    the key's latest and the committed value under it was removed, so read_committed lost the key."""
    manager = _manager(tmp_path / "data", clock)
    manager.create_topic("t", 1, COMPACT)
    log = manager.get_log("t", 0)
    assert log is not None

    def send(value: bytes, sequence: int) -> None:
        log.append_as_leader(build_batch([Record(0, T0, b"k", value)], base_offset=0, producer_id=7,
                                         producer_epoch=0, base_sequence=sequence, is_transactional=True))

    send(b"committed", 0)                                      # 0
    log.append_transaction_marker(7, 0, 0, commit=True)        # 1
    log.roll()
    send(b"aborted", 1)                                        # 2
    log.roll()
    log.append_transaction_marker(7, 0, 0, commit=False)       # 3, in the active segment
    assert log.last_stable_offset == 4 and [s.base_offset for s in log.segments()] == [0, 2, 3]
    cleaner = LogCleaner(manager, config, clock)
    try:
        assert cleaner.run_once(cleaner.workers[0]) is True
        assert manager.cleaner_offset_checkpoint.read() == {("t", 0): 3}
        assert (0, b"k", b"committed") in records(log), records(log)
    finally:
        cleaner.shutdown()
        manager.shutdown()

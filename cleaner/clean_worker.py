"""Cleaning rounds in a worker process: the parent-side proxy `CleanWorker` and the worker's loop.

Why a process: the cleaner core is pure-Python CPU work. Run as a thread of the broker it holds the GIL most
of the time and the event loop waits for it at every switch interval (bench/produce_latency.py measured
produce p99 63 ms idle vs 2,704 ms while one cleaner thread compacted, BENCHMARKS.md). In a process of its
own the round costs the broker's GIL nothing but a few pipe messages per MiB.

Decisions (DESIGN decision 6, issue 4 item 3):
- One long-lived worker per cleaner thread, started with the "spawn" context (the broker has threads and an
  event loop: it is never forked). The worker owns its `OffsetMap` (`dedupe_buffer_bytes_per_thread`), so the
  broker process does not hold that memory. On Linux it asks for SIGKILL when the thread that started it
  ends (prctl PDEATHSIG), so a broker killed with -9 leaves no cleaner behind. It runs at the broker's
  priority: nice +10 (and +5) was tried and gave a slightly steadier produce p99 under CPU contention, but on
  the loaded 2-CPU box it starved the cleaner (the S56 soak saw too few rounds while producing in 4 of 5 runs
  at +10, 2 of 5 at +5, 0 of 5 at 0), and the max.compaction.lag.ms deadline matters more.
- The parent sends a picklable `CleanJob`: partition directory, base offsets of the segments below the first
  uncleanable offset (the only ones a round reads: the map pass stops there and the recopy pass ends at the
  map's end offset), the round's offsets and `now_ms`, the four topic configs the core reads, the producer
  view, and the aborted transactions overlapping those segments, read from the whole log's `.txnindex` files
  (an entry lives in its ABORT marker's segment, which may be at or above the first uncleanable offset: with
  only the sources' indexes an aborted record there was mapped as its key's latest and removed the committed
  value under it; bench.kill_loop found it). The worker opens those segments by path (it never writes,
  truncates or closes-with-flush them) and runs `Cleaner.clean`.
- Each finished group is announced to the parent (base offset of the `.cleaned` segment, source base
  offsets, tombstones counted in the worker) and the worker WAITS for the answer: the parent opens the
  `.cleaned` segment and swaps it in with `UnifiedLog.replace_segments` against the live source segments,
  exactly as the in-thread path, then answers "ok". The parent stays the only writer of the live log.
- I/O throttling stays in the parent's shared `Throttler`: the worker reports the bytes it read/wrote every
  `io_report_bytes` (1 MiB, less for slow rates) and waits for the answer, while the parent sleeps as
  `maybe_throttle` says. Every answer may be "abort" instead of "ok"; the parent also checks `check_done`
  (shutdown, abort-and-pause, topic deletion) whenever the pipe is quiet for 100 ms. So an abort reaches the
  worker within one MiB of work or one segment. The worker then deletes its unfinished `.cleaned` files and
  answers "aborted".
- A worker that dies (killed, crashed) or does not answer an abort within `_ABORT_TIMEOUT_S` fails the round
  with `CleanWorkerCrashedError` (the caller's bounded retry path), its `.cleaned` files are removed by the
  parent and the next round starts a new worker. An exception inside the worker is sent back and re-raised
  in the parent (the original exception when it pickles); the worker itself keeps serving.
- `close()` (LogCleaner.shutdown) asks the worker to stop, then terminates and finally kills it.
- Statistics come back with the end offset. The worker's clock starts at the job's `now_ms` and advances in
  real time, so round timings are in the broker's time domain.

Costs measured: starting a worker takes ~0.3-0.6 s (spawn + imports + map allocation), once per cleaner
thread; per round the parent does a few ms of work per group (open the cleaned segment, swap).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import pickle
import signal
import sys
import time
import traceback
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from minikafka.cleaner.cleaner import CleanedGroup, Cleaner, CleaningResult, LastProducerRecord, TopicCleaningConfig
from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.offset_map import OffsetMap
from minikafka.cleaner.retained_offset_plan import RetainedOffsetPlan
from minikafka.cleaner.worker_entry import worker_entry
from minikafka.storage.local_log import collect_aborted_transactions
from minikafka.storage.log_segment import CLEANED_SUFFIX, LogSegment
from minikafka.storage.transaction_index import AbortedTransaction

logger = logging.getLogger("minikafka.cleaner.clean_worker")

_IO_REPORT_BYTES = 1 << 20
_POLL_S = 0.1
_ABORT_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 5.0
_PR_SET_PDEATHSIG = 1


class CleanWorkerCrashedError(RuntimeError):
    """The worker process died or stopped answering during a round (the round fails, a new worker starts)."""


class CleanWorkerError(RuntimeError):
    """An exception raised in the worker that could not be sent back as itself (text and traceback)."""


class _AbortedByParent(Exception):
    """Raised inside the worker when the parent answers "abort"."""


@dataclass(frozen=True, slots=True)
class TopicValues:
    """The topic configs the core reads (`TopicCleaningConfig`), as plain picklable values."""

    segment_bytes: int
    segment_index_bytes: int
    index_interval_bytes: int
    delete_retention_ms: int

    @classmethod
    def of(cls, config: TopicCleaningConfig) -> TopicValues:
        return cls(config.segment_bytes, config.segment_index_bytes, config.index_interval_bytes,
                   config.delete_retention_ms)


@dataclass(frozen=True, slots=True)
class CleanJob:
    """One round for the worker (picklable)."""

    dir: str
    #: (base offset, file suffix) of every segment below the first uncleanable offset, oldest first
    segments: tuple[tuple[int, str], ...]
    first_dirty_offset: int
    first_uncleanable_offset: int
    now_ms: int
    config: TopicValues
    producers: dict[int, LastProducerRecord]
    io_report_bytes: int = _IO_REPORT_BYTES
    #: aborted transactions overlapping the sources, read by the parent from the WHOLE log: an entry lives in the
    #: `.txnindex` of its ABORT marker's segment, which may be at or above the first uncleanable offset
    aborted_transactions: tuple[AbortedTransaction, ...] = ()
    #: an exact round's validated retained-offset plan (the worker reopens its file by path), None for an ordinary one
    plan: RetainedOffsetPlan | None = None


@dataclass(frozen=True, slots=True)
class GroupDone:
    """A `.cleaned` segment the worker finished (files closed, flushed, mtime set) and what it replaces."""

    base_offset: int
    source_base_offsets: tuple[int, ...]
    aborted_transactions: tuple[AbortedTransaction, ...]
    tombstones: int
    tombstone_horizon_ms: int | None


@dataclass(slots=True)
class WorkerRound:
    """A round's outcome on the parent side: the core's result plus the tombstones of the cleaned groups."""

    result: CleaningResult
    tombstones: int = 0
    tombstone_horizon_ms: int | None = None
    groups: list[GroupDone] = field(default_factory=list)


def count_tombstones(segment: LogSegment) -> tuple[int, int | None]:
    """Tombstones in a cleaned segment and their earliest delete horizon (only batches stamped with a
    horizon can hold them); transaction markers awaiting their horizon count for the horizon only."""
    count = 0
    horizon_ms: int | None = None
    for _, batch in segment.log.batches(0):
        batch_horizon_ms = batch.delete_horizon_ms
        if batch_horizon_ms is None:
            continue
        tombstones = 0 if batch.is_control else sum(1 for record in batch.records() if record.value is None)
        if tombstones or batch.is_control:
            count += tombstones
            horizon_ms = batch_horizon_ms if horizon_ms is None else min(horizon_ms, batch_horizon_ms)
    return count, horizon_ms


def remove_cleaned_files(directory: Path, base_offsets: Sequence[int]) -> int:
    """Unlink the `.cleaned` files of these base offsets (an unfinished round's output); returns how many."""
    removed = 0
    for base_offset in base_offsets:
        for path in directory.glob(f"{base_offset:020d}.*{CLEANED_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed


def _close_files(segment: LogSegment) -> None:
    """Release a segment's descriptors without `LogSegment.close()`'s final time-index append."""
    segment.offset_index.close()
    segment.time_index.close()
    segment.txn_index.close()
    segment.log.close()


# ------------------------------------------------------------------------------------------- parent side
class CleanWorker:
    """Parent-side proxy of one cleaner thread's worker process.

    Owns the process and the parent end of its pipe; starts the process on first use and again after a
    crash. Not thread-safe: used by one cleaner thread; `close()` may be called by another thread once that
    thread has stopped (LogCleaner.shutdown joins first).
    """

    def __init__(self, map_memory_bytes: int, load_factor: float, *, name: str = "kafka-log-cleaner-worker"
                 ) -> None:
        self.map_memory_bytes = map_memory_bytes
        self.load_factor = load_factor
        self.name = name
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._finalizer: weakref.finalize | None = None
        #: workers started so far (1 after the first round, +1 per restart)
        self.starts = 0

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        """Start the worker now (the cleaner thread does at startup, so the first round does not wait for it)."""
        self._ensure_started()

    def _ensure_started(self) -> tuple[BaseProcess, Connection]:
        if self._process is not None and self._conn is not None and self._process.is_alive():
            return self._process, self._conn
        self._discard()
        context = multiprocessing.get_context("spawn")
        parent_conn, child_conn = context.Pipe(duplex=True)
        process = context.Process(target=worker_entry, args=(child_conn, self.map_memory_bytes, self.load_factor),
                                  name=self.name, daemon=True)
        process.start()
        child_conn.close()
        self._process, self._conn = process, parent_conn
        # a proxy dropped without close() (a LogCleaner never shut down) must not leave its worker running
        self._finalizer = weakref.finalize(self, _kill, process, parent_conn)
        self.starts += 1
        logger.info("Started cleaner worker process %s (pid %s)", self.name, process.pid)
        return process, parent_conn

    def clean(
        self,
        segments: Sequence[LogSegment],
        *,
        first_dirty_offset: int,
        first_uncleanable_offset: int,
        now_ms: int,
        config: TopicCleaningConfig,
        producers: Mapping[int, LastProducerRecord],
        check_done: Callable[[], None],
        throttle: Callable[[int], None],
        throttle_rate_per_sec: float,
        on_group_cleaned: Callable[[CleanedGroup, GroupDone], None],
        plan: RetainedOffsetPlan | None = None,
    ) -> WorkerRound:
        """One round in the worker; same contract as `Cleaner.clean` with `on_group_cleaned` (and `plan`), which
        here also gets the worker's description of the group (tombstones). Raises what the round raised
        (check_done's exception on abort), or CleanWorkerCrashedError."""
        check_done()
        process, conn = self._ensure_started()
        sources = [s for s in segments if s.base_offset < first_uncleanable_offset]
        directory = Path(sources[0].dir) if sources else Path(segments[0].dir)
        by_base = {s.base_offset: s for s in sources}
        report_bytes = _IO_REPORT_BYTES
        if throttle_rate_per_sec < 1e300:
            report_bytes = int(min(_IO_REPORT_BYTES, max(4096.0, throttle_rate_per_sec / 10)))
        aborted = collect_aborted_transactions(segments, sources[0].base_offset, first_uncleanable_offset) \
            if sources else []
        job = CleanJob(str(directory), tuple((s.base_offset, s.suffix) for s in sources), first_dirty_offset,
                       first_uncleanable_offset, now_ms, TopicValues.of(config), dict(producers), report_bytes,
                       tuple(aborted), plan)
        outcome = WorkerRound(CleaningResult(first_dirty_offset, [], CleanerStats()))
        busy = False  # the worker is inside the job (an abort must reach it) until "done" or "error"
        try:
            self._send(conn, ("job", job))
            busy = True
            while True:
                message = self._receive(process, conn, check_done)
                kind = message[0]
                if kind in ("done", "error"):
                    busy = False
                if message[1]:
                    throttle(message[1])
                if kind == "io":
                    check_done()
                    self._send(conn, ("ok",))
                elif kind == "group":
                    check_done()
                    self._swap_group(directory, config, by_base, message[2], outcome, on_group_cleaned)
                    self._send(conn, ("ok",))
                elif kind == "done":
                    outcome.result.end_offset, outcome.result.stats = message[2], message[3]
                    return outcome
                elif kind == "error":
                    raise _rebuild_error(message[2], message[3])
                else:
                    raise CleanWorkerCrashedError(f"unexpected message {kind!r} from the cleaner worker")
        except CleanWorkerCrashedError:
            self._discard()
            remove_cleaned_files(directory, list(by_base))
            raise
        except BaseException:
            if busy:
                self._abort(directory, list(by_base))
            raise

    @staticmethod
    def _swap_group(directory: Path, config: TopicCleaningConfig, by_base: Mapping[int, LogSegment],
                    done: GroupDone, outcome: WorkerRound,
                    on_group_cleaned: Callable[[CleanedGroup, GroupDone], None]) -> None:
        cleaned = LogSegment(directory, done.base_offset, suffix=CLEANED_SUFFIX,
                             index_interval_bytes=config.index_interval_bytes,
                             max_index_size_bytes=config.segment_index_bytes)
        group = CleanedGroup(cleaned, [by_base[b] for b in done.source_base_offsets],
                             list(done.aborted_transactions))
        try:
            on_group_cleaned(group, done)
        except BaseException:
            _close_files(cleaned)
            raise
        outcome.result.groups.append(group)
        outcome.groups.append(done)
        outcome.tombstones += done.tombstones
        horizon_ms = done.tombstone_horizon_ms
        if horizon_ms is not None and (outcome.tombstone_horizon_ms is None
                                       or horizon_ms < outcome.tombstone_horizon_ms):
            outcome.tombstone_horizon_ms = horizon_ms

    def _send(self, conn: Connection, message: tuple[Any, ...]) -> None:
        try:
            conn.send(message)
        except (OSError, ValueError) as exc:
            # Usually the worker died first: say how, as _receive does, instead of only the pipe's symptom.
            process = self._process
            if process is not None:
                death = self._death_text(process)  # waits up to 1 s for the exit
                if process.exitcode is not None:
                    raise CleanWorkerCrashedError(f"{death}; pipe broken: {exc}") from exc
            raise CleanWorkerCrashedError(f"cleaner worker pipe broken: {exc}") from exc

    def _receive(self, process: BaseProcess, conn: Connection,
                 check_done: Callable[[], None] | None, timeout_s: float | None = None) -> tuple[Any, ...]:
        """The next message; between quiet intervals runs check_done (may raise) and notices a dead worker."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            ready = wait([conn, process.sentinel], _POLL_S)
            if conn in ready:
                try:
                    message: tuple[Any, ...] = conn.recv()
                except (EOFError, OSError) as exc:
                    raise CleanWorkerCrashedError(self._death_text(process)) from exc
                return message
            if process.sentinel in ready or not process.is_alive():
                raise CleanWorkerCrashedError(self._death_text(process))
            if deadline is not None and time.monotonic() >= deadline:
                raise CleanWorkerCrashedError(f"cleaner worker (pid {process.pid}) did not answer in {timeout_s} s")
            if check_done is not None:
                check_done()

    def _death_text(self, process: BaseProcess) -> str:
        process.join(1.0)
        return f"cleaner worker process (pid {process.pid}) exited with code {process.exitcode}"

    def _abort(self, directory: Path, base_offsets: list[int]) -> None:
        """Tell the worker to drop the round and wait until it did; a worker that cannot is killed."""
        process, conn = self._process, self._conn
        if process is None or conn is None:
            remove_cleaned_files(directory, base_offsets)
            return
        try:
            self._send(conn, ("abort",))
            while True:
                kind = self._receive(process, conn, None, _ABORT_TIMEOUT_S)[0]
                if kind in ("aborted", "done", "error"):
                    break
        except CleanWorkerCrashedError as exc:
            logger.warning("Cleaner worker %s: %s while aborting; restarting it", self.name, exc)
            self._discard()
        remove_cleaned_files(directory, base_offsets)

    def _discard(self) -> None:
        """Forget the current worker, killing it if it still runs."""
        if self._finalizer is not None:
            self._finalizer()
        self._process = self._conn = self._finalizer = None

    def close(self) -> None:
        """Stop the worker: a polite "stop", then SIGTERM, then SIGKILL."""
        process, conn = self._process, self._conn
        if self._finalizer is not None:
            self._finalizer.detach()
        self._process = self._conn = self._finalizer = None
        if process is None:
            return
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("stop",))
            conn.close()
        process.join(_STOP_TIMEOUT_S)
        if process.is_alive():
            process.terminate()
            process.join(_STOP_TIMEOUT_S)
        if process.is_alive():
            process.kill()
            process.join(_STOP_TIMEOUT_S)
        process.close()


def _kill(process: BaseProcess, conn: Connection) -> None:
    conn.close()
    if process.is_alive():
        process.kill()
    process.join(_STOP_TIMEOUT_S)
    process.close()


def _rebuild_error(error: BaseException | None, text: str) -> BaseException:
    if error is None:
        return CleanWorkerError(text)
    error.__cause__ = CleanWorkerError(text)
    return error


# ------------------------------------------------------------------------------------------- worker side
class _JobClock:
    """The worker's clock: the job's `now_ms` advancing in real time (stats timings, not horizons)."""

    def __init__(self) -> None:
        self._origin_ms = 0
        self._origin_monotonic_ms = time.monotonic_ns() // 1_000_000

    def start(self, now_ms: int) -> None:
        self._origin_ms = now_ms
        self._origin_monotonic_ms = time.monotonic_ns() // 1_000_000

    def time_ms(self) -> int:
        return self._origin_ms + self.monotonic_ms() - self._origin_monotonic_ms

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class _WorkerChannel:
    """The worker's end of the pipe during a job: io reports, abort checks, group hand-over."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.report_bytes = _IO_REPORT_BYTES
        self.pending_io_bytes = 0

    def take_io(self) -> int:
        pending, self.pending_io_bytes = self.pending_io_bytes, 0
        return pending

    def ask(self, message: tuple[Any, ...]) -> None:
        """Send and wait for the parent's answer; raises _AbortedByParent on "abort"."""
        self.conn.send(message)
        while True:
            answer = self.conn.recv()
            if answer[0] == "ok":
                return
            if answer[0] == "abort":
                raise _AbortedByParent()

    def check_done(self) -> None:
        while self.conn.poll():
            if self.conn.recv()[0] == "abort":
                raise _AbortedByParent()

    def throttle(self, observed_bytes: int) -> None:
        self.pending_io_bytes += observed_bytes
        if self.pending_io_bytes >= self.report_bytes:
            self.ask(("io", self.take_io()))


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def worker_main(conn: Connection, map_memory_bytes: int, load_factor: float) -> None:
    """The worker process: serve jobs until "stop" or until the parent goes away."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the broker, which stops us
    channel = _WorkerChannel(conn)
    clock = _JobClock()
    cleaner = Cleaner(OffsetMap(map_memory_bytes, load_factor), clock, check_done=channel.check_done,
                      throttle=channel.throttle)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        if message[0] != "job":
            continue  # a late "abort"/"ok" for a round that already ended
        try:
            _run_job(conn, channel, clock, cleaner, message[1])
        except (EOFError, OSError, BrokenPipeError):
            return


def _run_job(conn: Connection, channel: _WorkerChannel, clock: _JobClock, cleaner: Cleaner, job: CleanJob) -> None:
    directory = Path(job.dir)
    base_offsets = [base for base, _ in job.segments]
    segments: list[LogSegment] = []
    channel.report_bytes = job.io_report_bytes
    channel.pending_io_bytes = 0
    clock.start(job.now_ms)

    def hand_over(group: CleanedGroup) -> None:
        tombstones, horizon_ms = count_tombstones(group.cleaned)
        _close_files(group.cleaned)
        done = GroupDone(group.cleaned.base_offset, tuple(s.base_offset for s in group.sources),
                         tuple(group.aborted_transactions), tombstones, horizon_ms)
        try:
            channel.ask(("group", channel.take_io(), done))
        except _AbortedByParent:
            group.cleaned.delete()
            raise

    try:
        for base_offset, suffix in job.segments:
            if not (directory / f"{base_offset:020d}.log{suffix}").exists():
                raise FileNotFoundError(f"segment {base_offset} of {directory} is gone")
            segments.append(LogSegment(directory, base_offset, suffix=suffix,
                                       index_interval_bytes=job.config.index_interval_bytes,
                                       max_index_size_bytes=job.config.segment_index_bytes))
        result = cleaner.clean(
            segments, first_dirty_offset=job.first_dirty_offset,
            first_uncleanable_offset=job.first_uncleanable_offset, now_ms=job.now_ms, config=job.config,
            producers=job.producers, collect_aborted_transactions=lambda start, upper: [
                t for t in job.aborted_transactions if t.last_offset >= start and t.first_offset < upper],
            on_group_cleaned=hand_over, plan=job.plan)
        conn.send(("done", channel.take_io(), result.end_offset, result.stats))
    except _AbortedByParent:
        remove_cleaned_files(directory, base_offsets)
        conn.send(("aborted", channel.take_io()))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        remove_cleaned_files(directory, base_offsets)
        raise
    except Exception as exc:  # sent back to the parent, which fails the round; this worker keeps serving
        remove_cleaned_files(directory, base_offsets)
        conn.send(("error", channel.take_io(), _picklable(exc), "".join(traceback.format_exception(exc))))
    finally:
        for segment in segments:
            _close_files(segment)


def _picklable(exc: BaseException) -> BaseException | None:
    try:
        copy = pickle.loads(pickle.dumps(exc))
    except Exception:
        return None
    return copy if isinstance(copy, BaseException) else None


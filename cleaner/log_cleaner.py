"""`LogCleaner`: the cleaner threads around the pure core (spec §2.1, §2.2, §2.8-§2.14; DESIGN decision 6).

Each of `log.cleaner.threads` plain threads loops as Kafka's `CleanerThread.doWork`: serve a pending manual
compaction or grab the filthiest eligible partition (dirty ratio above `min.cleanable.dirty.ratio`, or
overdue by `max.compaction.lag.ms`; `min.compaction.lag.ms` and the LSO always honoured), clean it with its
own `Cleaner` and `OffsetMap` (in the thread's worker process, `cleaner.clean_worker`, unless
`minikafka.log.cleaner.worker.processes=false`), swap each cleaned group in as soon as it is written
(storage's crash-safe `replace_segments`), checkpoint the round's end offset, log Kafka's statistics block;
then run retention of every compacted log (`compact,delete` deletes by time/size, `compact` only below the
log start offset); sleep `log.cleaner.backoff.ms` when nothing was cleaned. All threads share one I/O `Throttler`.

A failing partition never kills a thread: it is retried with exponential backoff, then reported uncleanable
(`LogCleanerManager`). A partition deleted while it is being cleaned aborts the round quietly.

Exact compaction (issue 10): `request_exact_compaction` queues one round whose keep-or-drop decision comes from a
retained-offset plan instead of the offset map (`Cleaner.clean(plan=...)`, `cleaner.plan_retention`); the rest of
the round (groups, horizons, markers, swap, statistics, metrics) is the ordinary one.

The rounds of a manual request are driven by `manual_compaction` (`compact_now`, `compact_exact_now`) through
`clean_round`; the gauges and per-partition statuses are computed in `cleaner_metrics`.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.cleaner.cleaner_manager import (
    LogCleanerManager,
    LogCleaningAbortedError,
    ThreadShutdownError,
    TopicPartition,
    is_disk_failure,
    is_out_of_space,
)
from minikafka.cleaner.cleaner_metrics import (
    CleanerMetrics,
    PartitionCleaningRecord,
    PartitionCleaningStatus,
    cleaner_metrics,
    partition_statuses,
)
from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.cleaner_thread import CleanerThread
from minikafka.cleaner.config import CleanerConfig
from minikafka.cleaner.filthiest_log import PreCleanStats, grab_filthiest_compacted_log
from minikafka.cleaner.log_to_clean import LogToClean
from minikafka.cleaner.throttler import Throttler
from minikafka.protocol.errors import InvalidConfigError, UnknownTopicOrPartitionError
from minikafka.storage.clock import Clock
from minikafka.storage.log_manager import LogManager, TopicMetadata
from minikafka.storage.unified_log import UnifiedLog

if TYPE_CHECKING:
    # The cleaning core and the worker process's proxy (multiprocessing, pickle) are imported by the first round or
    # worker start, in a cleaner thread: not on the broker's start path (tests/broker/test_startup_imports.py).
    from minikafka.cleaner.clean_worker import CleanWorker, GroupDone
    from minikafka.cleaner.cleaner import CleanedGroup, Cleaner, CleaningResult

    # Manual and exact compaction: imported by their first request (or a round that meets a plan).
    from minikafka.cleaner.manual_compaction import CompactionRequest, PartitionCompactionResult
    from minikafka.cleaner.retained_offset_plan import RetainedOffsetPlan

logger = logging.getLogger("minikafka.cleaner.log_cleaner")

class LogCleaner:
    """Owns the cleaner threads, their offset maps, the shared throttler, the manual-compaction queue and
    the per-partition cleaning records; `manager` owns cleaning states, uncleanable marks and checkpoints.

    Thread-safe: public methods may be called from any thread (the broker calls them through worker
    threads); `_lock` guards the queue and the records.
    """

    def __init__(self, log_manager: LogManager, config: CleanerConfig, clock: Clock, *, max_retries: int = 3,
                 retry_backoff_ms: int | None = None, sleep: Callable[[float], None] = time.sleep,
                 prestart_delay_s: float = 0.0) -> None:
        self.log_manager = log_manager
        #: see `_prestart_due`; the broker passes a few seconds (KafkaServer), 0 starts workers at once
        self.prestart_delay_s = prestart_delay_s
        self._prestart_at = 0.0  # time.monotonic() from which idle threads prestart without a compacted log
        self.config = config
        self.clock = clock
        self.manager = LogCleanerManager(
            log_manager, clock.time_ms(), max_retries=max_retries,
            retry_backoff_ms=config.backoff_ms if retry_backoff_ms is None else retry_backoff_ms)
        self.throttler = Throttler(config.io_max_bytes_per_second, clock, sleep)
        self.workers = [CleanerThread(i) for i in range(config.threads)]
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._shutdown = threading.Event()
        self._manual: collections.deque[tuple[CompactionRequest, int]] = collections.deque()
        self._records: dict[TopicPartition, PartitionCleaningRecord] = {}
        self._running = False
        log_manager.abort_cleaning = self.abort_cleaning

    # --------------------------------------------------------------- lifecycle
    def startup(self) -> None:
        """Start the worker threads (each allocates its offset map first)."""
        self._shutdown.clear()
        self._prestart_at = time.monotonic() + self.prestart_delay_s
        for worker in self.workers:
            worker.dead = False
            worker.thread = threading.Thread(target=self._run, args=(worker,), name=f"kafka-log-cleaner-thread-"
                                             f"{worker.index}", daemon=True)
            worker.thread.start()
        self._running = bool(self.workers)

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop the threads; a round in progress is abandoned at its next check (its `.cleaned` files go)."""
        self._shutdown.set()
        with self._wake:
            self._wake.notify_all()
        for worker in self.workers:
            if worker.thread is not None:
                worker.thread.join(timeout_s)
            if worker.process is not None and (worker.thread is None or not worker.thread.is_alive()):
                worker.process.close()
        self._running = False

    def validate_reconfiguration(self, new_config: CleanerConfig) -> None:
        """Kafka's LogCleaner.validateReconfiguration: `log.cleaner.threads` may change dynamically only
        within half to double the current count, and never to 0 (InvalidConfigError otherwise)."""
        current, wanted = self.config.threads, new_config.threads
        if wanted < 1:
            raise InvalidConfigError(f"Log cleaner threads should be at least 1, got {wanted}")
        if wanted < current / 2:
            raise InvalidConfigError(f"Log cleaner threads cannot be reduced to less than half the current "
                                     f"value {current}")
        if wanted > current * 2:
            raise InvalidConfigError(f"Log cleaner threads cannot be increased to more than double the current "
                                     f"value {current}")
        new_config.validate()

    def reconfigure(self, new_config: CleanerConfig) -> None:
        """Dynamic cleaner config (Kafka's LogCleaner.reconfigure): stop every thread, apply the config, start
        fresh threads. This is also what revives dead threads (`DeadThreadCount` drops to 0)."""
        self.validate_reconfiguration(new_config)
        was_running = self._running
        self.shutdown()
        self.config = new_config
        self.throttler.desired_rate_per_sec = new_config.io_max_bytes_per_second  # KAFKA-13996
        self.workers = [CleanerThread(i) for i in range(new_config.threads)]
        if was_running:
            self.startup()

    def _cleaner_for(self, worker: CleanerThread) -> Cleaner:
        if worker.cleaner is None:
            from minikafka.cleaner.cleaner import Cleaner
            from minikafka.cleaner.offset_map import OffsetMap

            offset_map = OffsetMap(self.config.dedupe_buffer_bytes_per_thread, self.config.io_buffer_load_factor)
            worker.cleaner = Cleaner(offset_map, self.clock, check_done=lambda: self._check_done(worker),
                                     throttle=self.throttler.maybe_throttle)
        return worker.cleaner

    def _process_for(self, worker: CleanerThread) -> CleanWorker:
        if worker.process is None:
            from minikafka.cleaner.clean_worker import CleanWorker

            worker.process = CleanWorker(self.config.dedupe_buffer_bytes_per_thread,
                                         self.config.io_buffer_load_factor,
                                         name=f"kafka-log-cleaner-worker-{worker.index}")
        return worker.process

    def _run(self, worker: CleanerThread) -> None:
        try:
            while not self._shutdown.is_set():
                if not self.run_once(worker):
                    self._idle(worker)
        except ThreadShutdownError:
            pass
        except BaseException:
            worker.dead = True
            logger.exception("Cleaner %d: thread died", worker.index)

    def _idle(self, worker: CleanerThread) -> None:
        """Kafka's backoff: wait `log.cleaner.backoff.ms`, less if a manual request or shutdown comes. Meanwhile
        get the worker process (re)started once `_prestart_due`, so the next round does not wait for it."""
        deadline = time.monotonic() + self.config.backoff_ms / 1000.0
        while True:
            pending = self.config.worker_processes and not self._prestart_due()
            if not pending:
                self._prestart_process(worker)
            with self._wake:
                if self._manual or self._shutdown.is_set():
                    return
                now = time.monotonic()
                if now >= deadline:
                    return
                wake_at = min(deadline, self._prestart_at) if pending else deadline
                notified = self._wake.wait(max(0.0, wake_at - now))
            if notified or wake_at >= deadline:
                return

    def _prestart_due(self) -> bool:
        """Whether an idle thread should start its worker process now: when a compacted log is hosted (a round
        may come soon), otherwise only `prestart_delay_s` after `startup()`. Spawning the worker costs ~0.3 s
        of CPU (a fresh interpreter importing the cleaner and storage stacks); on a fresh broker with nothing
        to clean that competed with the broker's own start and its first requests (bench/startup.py: the
        first acknowledged produce came 50-120 ms later on 2 CPUs), and a short-lived broker (a test's
        MiniKafka) never needs the worker at all. A round that comes first starts it on demand (`CleanWorker`)."""
        return time.monotonic() >= self._prestart_at or any(log.config.compact for log in self.log_manager.all_logs())

    def _prestart_process(self, worker: CleanerThread) -> None:
        """While idle, get the worker process (re)started so the next round does not wait for it."""
        if self.config.worker_processes:
            try:
                self._process_for(worker).start()
            except Exception:  # the next round tries again and fails like any cleaning error
                logger.exception("Cleaner %d: could not start its worker process", worker.index)

    @property
    def dead_thread_count(self) -> int:
        return sum(1 for w in self.workers if w.dead)

    # ---------------------------------------------------------------- main loop
    def run_once(self, worker: CleanerThread) -> bool:
        """One iteration of Kafka's doWork without the backoff sleep: True if a partition was cleaned."""
        cleaned = self._serve_manual(worker)
        if not cleaned:
            log, grab = self.manager.grab_filthiest(self.clock.time_ms())
            if log is not None and grab.chosen is not None:
                worker.last_pre_clean_stats = grab.pre_clean_stats
                self.clean_round(worker, log, grab.chosen.log_to_clean, grab.pre_clean_stats)
                cleaned = True
            else:
                cleaned = self._clean_expired_tombstones(worker)
        self._run_retention()
        return cleaned

    def clean_round(self, worker: CleanerThread, log: UnifiedLog, to_clean: LogToClean,
                    pre_clean: PreCleanStats, result: PartitionCompactionResult | None = None, *,
                    minimum_checkpoint: int = -1, plan: RetainedOffsetPlan | None = None,
                    checkpoint_end: bool = True) -> int | None:
        """Clean one round and end it in the manager; returns the end offset, None if aborted or failed. The
        checkpoint becomes max(end offset, `minimum_checkpoint`), or stays (at least `minimum_checkpoint`) when
        not `checkpoint_end`. A plan the round refuses (InvalidRetainedOffsetPlanError) is no failure of the
        partition: the result says "refused"."""
        from minikafka.cleaner.retained_offset_plan import InvalidRetainedOffsetPlanError

        tp = (log.topic, log.partition)
        end_offset = None
        try:
            stats, end_offset = self._clean_log(worker, log, to_clean, pre_clean, plan)
            if result is not None:
                result.add_round(stats, to_clean.first_dirty_offset, end_offset)
        except ThreadShutdownError:
            raise
        except LogCleaningAbortedError:
            logger.info("Cleaner %d: cleaning of %s-%d aborted", worker.index, *tp)
            if result is not None:
                result.status = "aborted"
        except InvalidRetainedOffsetPlanError as exc:
            logger.warning("Cleaner %d: plan for %s-%d refused: %s", worker.index, *tp, exc)
            if result is not None:
                result.status, result.error = "refused", str(exc)
        except Exception as exc:
            if self._hosted(log):
                reason = f"{type(exc).__name__}: {exc}"
                logger.debug("Cleaner %d: round of %s-%d failed", worker.index, *tp, exc_info=True)
                if is_disk_failure(exc):
                    log.log_dir_failed(f"cleaning {log.topic_partition} failed: {reason}")
                self.manager.mark_failed(tp, log, reason, self.clock.time_ms(), out_of_space=is_out_of_space(exc))
                if result is not None:
                    result.status, result.error = "failed", reason
            elif result is not None:
                result.status = "unknown_partition"
        finally:
            worker.current, worker.current_log = None, None
            if end_offset is None:
                checkpoint = None
            elif checkpoint_end:
                checkpoint = max(end_offset, minimum_checkpoint)
            else:
                checkpoint = minimum_checkpoint if minimum_checkpoint >= 0 else None
            self.manager.done_cleaning(tp, checkpoint)
        return end_offset

    def _clean_log(self, worker: CleanerThread, log: UnifiedLog, to_clean: LogToClean,
                   pre_clean: PreCleanStats, plan: RetainedOffsetPlan | None = None) -> tuple[CleanerStats, int]:
        from minikafka.cleaner.clean_worker import count_tombstones
        from minikafka.cleaner.cleaner import LastProducerRecord

        tp = (log.topic, log.partition)
        name = log.topic_partition
        worker.current, worker.current_log = tp, log
        if plan is None:
            logger.info("Cleaner %d: Beginning cleaning of log %s", worker.index, name)
        else:
            logger.info("Cleaner %d: Beginning exact cleaning of log %s with a plan of %d offsets for [%d, %d)",
                        worker.index, name, plan.count, plan.start_offset, plan.end_offset)
        producers = {pid: LastProducerRecord(entry.last_data_offset if entry.batches else None, entry.producer_epoch)
                     for pid, entry in log.producer_state.active_producers().items()}
        tombstones = 0
        horizon_ms: int | None = None

        def swap(group: CleanedGroup, counted: tuple[int, int | None]) -> None:
            nonlocal tombstones, horizon_ms
            count, group_horizon_ms = counted
            tombstones += count
            if group_horizon_ms is not None:
                horizon_ms = group_horizon_ms if horizon_ms is None else min(horizon_ms, group_horizon_ms)
            logger.info("Cleaner %d: Swapping in cleaned segment %s for segment(s) %s in log %s", worker.index,
                        group.cleaned.base_offset, [s.base_offset for s in group.sources], name)
            log.replace_segments([group.cleaned], group.sources)

        def swap_in_thread(group: CleanedGroup) -> None:
            try:
                self._check_done(worker)
            except BaseException:
                group.cleaned.close()
                group.cleaned.delete()
                raise
            swap(group, count_tombstones(group.cleaned))

        def swap_from_process(group: CleanedGroup, done: GroupDone) -> None:
            swap(group, (done.tombstones, done.tombstone_horizon_ms))  # check_done ran before the hand-over

        result: CleaningResult
        if self.config.worker_processes:
            result = self._process_for(worker).clean(
                log.segments(), first_dirty_offset=to_clean.first_dirty_offset,
                first_uncleanable_offset=to_clean.first_uncleanable_offset, now_ms=self.clock.time_ms(),
                config=log.config, producers=producers, check_done=lambda: self._check_done(worker),
                throttle=self.throttler.maybe_throttle,
                throttle_rate_per_sec=self.throttler.desired_rate_per_sec,
                on_group_cleaned=swap_from_process, plan=plan).result
        else:
            result = self._cleaner_for(worker).clean(
                log.segments(), first_dirty_offset=to_clean.first_dirty_offset,
                first_uncleanable_offset=to_clean.first_uncleanable_offset, now_ms=self.clock.time_ms(),
                config=log.config, producers=producers, on_group_cleaned=swap_in_thread, plan=plan)
        stats = result.stats
        worker.last_stats = stats
        text = stats.format(worker.index, name, to_clean.first_dirty_offset, result.end_offset)
        if pre_clean.delayed_partitions > 0:
            text += (f"\n\tCleanable partitions: {pre_clean.cleanable_partitions}, Delayed partitions: "
                     f"{pre_clean.delayed_partitions}, max delay: {pre_clean.max_compaction_delay_ms}")
        logger.info(text)
        with self._lock:
            record = self._records.get(tp)
            if record is None or record.log_identity != id(log):
                record = self._records[tp] = PartitionCleaningRecord(log_identity=id(log))
            record.last_clean_ms = self.clock.time_ms()
            record.records_removed += stats.messages_read - stats.messages_written
            record.bytes_removed += max(stats.bytes_read - stats.bytes_written, 0)
            record.tombstones_pending = tombstones
            record.tombstone_horizon_ms = horizon_ms
        return stats, result.end_offset

    def _clean_expired_tombstones(self, worker: CleanerThread) -> bool:
        """Beyond Kafka: a partition whose cleaned section holds tombstones past their delete horizon gets a
        round even without new dirty data (Kafka waits for the next dirty segment), so a tombstone is gone
        within delete.retention.ms + backoff + one cleaning. The round re-maps from the log start offset."""
        now_ms = self.clock.time_ms()
        with self._lock:
            due = [tp for tp, r in self._records.items()
                   if r.tombstone_horizon_ms is not None and r.tombstone_horizon_ms <= now_ms]
        for tp in due:
            log = self.log_manager.get_log(*tp)
            if log is None or not log.config.compact or tp in self.manager.uncleanable_partitions():
                continue
            if not self.manager.try_begin(tp, timeout_s=0):
                continue
            checkpoints = self.manager.read_checkpoints()
            checkpoint = checkpoints.get(tp, log.log_start_offset)
            view = self.manager.view_of(log, {tp: log.log_start_offset}, now_ms, ignore_marks=True,
                                        min_cleanable_ratio=0.0)
            grab = grab_filthiest_compacted_log([view], now_ms)
            if grab.chosen is None:
                with self._lock:
                    self._records[tp].tombstone_horizon_ms = None
                self.manager.done_cleaning(tp, None)
                continue
            logger.info("Cleaner %d: tombstones of %s passed their delete horizon; cleaning it", worker.index,
                        log.topic_partition)
            # `clean_round` ends the state; the checkpoint must never move backwards.
            self.clean_round(worker, log, grab.chosen.log_to_clean, grab.pre_clean_stats,
                             minimum_checkpoint=checkpoint)
            with self._lock:
                record = self._records.get(tp)
                if record is not None and record.tombstone_horizon_ms is not None and \
                        record.tombstone_horizon_ms <= now_ms:
                    record.tombstone_horizon_ms = None  # not removable by a horizon round; no busy loop
            return True
        return False

    def _check_done(self, worker: CleanerThread) -> None:
        if self._shutdown.is_set():
            raise ThreadShutdownError()
        tp, log = worker.current, worker.current_log
        if tp is not None:
            self.manager.check_aborted(tp)
            if self.log_manager.get_log(*tp) is not log:  # its identity: a recreated topic has a new log
                raise LogCleaningAbortedError(f"{tp[0]}-{tp[1]} was deleted")

    def _hosted(self, log: UnifiedLog) -> bool:
        return self.log_manager.get_log(log.topic, log.partition) is log

    def _run_retention(self) -> None:
        logs = self.manager.deletable_logs()
        deleted = 0
        try:
            for log in logs:
                try:
                    deleted += log.delete_retention_segments(self.clock.time_ms())
                except Exception as exc:
                    if self._hosted(log):
                        self.manager.mark_failed((log.topic, log.partition), log,
                                                 f"retention: {type(exc).__name__}: {exc}", self.clock.time_ms())
        finally:
            self.manager.done_deleting(logs)
        if deleted:
            self.log_manager.checkpoint_log_start_offsets()

    # ------------------------------------------------------------ pause/abort
    def abort_and_pause(self, topic: str, partition: int, timeout_s: float | None = 60.0) -> None:
        """Abort a running round of the partition (waiting for it to stop) and pause its cleaning."""
        self.manager.abort_and_pause((topic, partition), timeout_s)

    def resume(self, topic: str, partition: int) -> None:
        self.manager.resume((topic, partition))

    def abort_cleaning(self, topic: str, partition: int, timeout_s: float | None = 60.0) -> None:
        """Abort a running round of the partition and wait for it to stop, without pausing it afterwards
        (topic deletion: `LogManager.abort_cleaning`)."""
        self.manager.abort_cleaning((topic, partition), timeout_s)

    # -------------------------------------------------------- manual compaction
    def compaction_target(self, topic: str, partition: int | None) -> TopicMetadata:
        """The topic of a compaction request; UnknownTopicOrPartitionError / InvalidConfigError (not compacted)."""
        meta = self.log_manager.topic(topic)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist")
        if partition is not None and not 0 <= partition < meta.num_partitions:
            raise UnknownTopicOrPartitionError(f"Partition {topic}-{partition} does not exist")
        if not self.log_manager.log_config(topic).compact:
            raise InvalidConfigError(f"Topic {topic} does not have cleanup.policy compact")
        return meta

    def request_compaction(self, topic: str, partition: int | None = None) -> CompactionRequest:
        """Queue a manual compaction (dirty-ratio threshold ignored, min lag honoured); see
        `manual_compaction.compact_now`."""
        from minikafka.cleaner.manual_compaction import CompactionRequest

        meta = self.compaction_target(topic, partition)
        partitions = list(range(meta.num_partitions)) if partition is None else [partition]
        return self._enqueue(CompactionRequest(topic, partitions))

    def request_exact_compaction(self, topic: str, partition: int, plan_path: str | Path, *,
                                 delete_plan: bool = False) -> CompactionRequest:
        """Queue an exact round (issue 10) of `topic`-`partition` with the retained-offset plan at `plan_path`.

        Validates now, in the caller's thread, streaming the file once: InvalidRetainedOffsetPlanError names the
        fault (format, truncation, checksum, order, another topic id or partition, a range outside
        [log start offset, `exact_end_limit(roll_active=True)`]). The round re-checks the range when it runs and
        checks the plan against the log (`PlanRetention.verify`); see `manual_compaction.compact_exact_now`. With
        `delete_plan` the file is unlinked once the request is done, or now if it is refused."""
        from minikafka.cleaner.exact_round import check_plan_range
        from minikafka.cleaner.manual_compaction import CompactionRequest
        from minikafka.cleaner.retained_offset_plan import read_plan

        try:
            meta = self.compaction_target(topic, partition)
            log = self.log_manager.get_log(topic, partition)
            if log is None:
                raise UnknownTopicOrPartitionError(f"Partition {topic}-{partition} does not exist")
            plan = read_plan(plan_path, topic_id=meta.topic_id, partition=partition)
            check_plan_range(plan, log, self.exact_end_limit(log, roll_active=True))
        except BaseException:
            if delete_plan:
                Path(plan_path).unlink(missing_ok=True)
            raise
        return self._enqueue(CompactionRequest(topic, [partition], plan=plan, delete_plan=delete_plan))

    def exact_end_limit(self, log: UnifiedLog, *, roll_active: bool) -> int:
        """The largest end offset a plan for `log` may have now (`exact_round.exact_end_limit`)."""
        from minikafka.cleaner.exact_round import exact_end_limit

        return exact_end_limit(log, self.manager.read_checkpoints().get((log.topic, log.partition)),
                               self.clock.time_ms(), roll_active=roll_active)

    def _enqueue(self, request: CompactionRequest) -> CompactionRequest:
        if not self._running:
            thread = threading.Thread(target=self._serve_alone, args=(request,), name="kafka-log-cleaner-manual",
                                      daemon=True)
            thread.start()
            return request
        with self._wake:
            self._manual.extend((request, p) for p in request.partitions)
            self._wake.notify_all()
        return request

    def _serve_alone(self, request: CompactionRequest) -> None:
        """Cleaner disabled: a one-off worker (with its own map) serves the request and exits."""
        worker = CleanerThread(-1)
        try:
            for partition in request.partitions:
                self._serve(worker, request, partition)
        finally:
            if worker.process is not None:
                worker.process.close()

    def _serve_manual(self, worker: CleanerThread) -> bool:
        with self._lock:
            if not self._manual:
                return False
            request, partition = self._manual.popleft()
        self._serve(worker, request, partition)
        return True

    def _serve(self, worker: CleanerThread, request: CompactionRequest, partition: int) -> None:
        from minikafka.cleaner.manual_compaction import compact_exact_now, compact_now

        result = None
        try:
            if request.plan is None:
                result = compact_now(self, worker, request.topic, partition)
            else:
                result = compact_exact_now(self, worker, request.topic, request.plan)
        finally:
            if result is None:  # shutdown (or a bug) mid-request: do not leave the plan file behind
                request.discard_plan()
            else:
                request.finish(result)

    # ------------------------------------------------------------------ state
    def cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """The cleaner-offset-checkpoint entries: below its entry a partition holds at most one record per key."""
        return self.manager.read_checkpoints()

    def cleaning_record(self, log: UnifiedLog) -> PartitionCleaningRecord:
        """A copy of the running totals of `log` (fresh ones if it was never cleaned or was recreated)."""
        with self._lock:
            record = self._records.get((log.topic, log.partition))
            if record is None or record.log_identity != id(log):
                return PartitionCleaningRecord(log_identity=id(log))
            return PartitionCleaningRecord(**{k: getattr(record, k) for k in record.__slots__})

    # ------------------------------------------------------------------ metrics
    def metrics(self, statuses: list[PartitionCleaningStatus] | None = None) -> CleanerMetrics:
        """Broker-wide gauges; `statuses` (from `partition_status`) supplies uncleanable bytes."""
        return cleaner_metrics(self, statuses)

    def partition_status(self) -> list[PartitionCleaningStatus]:
        """Dirty ratio, dirty bytes and KIP-354 delay of every compacted partition, computed now."""
        return partition_statuses(self)

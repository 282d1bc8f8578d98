"""Per-partition cleaning state, uncleanable marks with bounded retry, and the cleaner-offset-checkpoint
(Kafka's LogCleanerManager, spec §2.1 state machine, §2.2 grab, §2.9 checkpoint, §2.13 errors).

States: absent (None) -> IN_PROGRESS -> absent on success; IN_PROGRESS -> ABORTED -> PAUSED(1) when an
abort is requested while cleaning; absent -> PAUSED(1); PAUSED(n) <-> PAUSED(n+-1); PAUSED(1) -> absent on
resume. `abort_and_pause` blocks until the cleaner thread has observed the abort.

Beyond Kafka: a partition that fails is not "uncleanable until restart" at once. It is retried after
`retry_backoff_ms * 2^(failures-1)`; after `max_retries` failed retries it is reported uncleanable (with the
reason) until it is deleted, recreated, manually compacted successfully, or the broker restarts. A round that
failed for want of disk space (ENOSPC, EDQUOT) is retried without end, its backoff capped at the last retry's,
so cleaning resumes by itself once space is freed (Kafka would take the log dir offline).
"""

from __future__ import annotations

import enum
import errno
import logging
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from minikafka.cleaner.filthiest_log import GrabResult, PartitionView, grab_filthiest_compacted_log
from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.local_log import DISK_FAILURE_ERRNOS
from minikafka.storage.log_manager import LogManager
from minikafka.storage.log_segment import SegmentInconsistentError
from minikafka.storage.unified_log import UnifiedLog

logger = logging.getLogger("minikafka.cleaner.log_cleaner")

TopicPartition = tuple[str, int]


class LogCleaningAbortedError(Exception):
    """Raised inside a round when its partition's cleaning was aborted (Kafka's LogCleaningAbortedException)."""


class ThreadShutdownError(Exception):
    """Raised inside a round when the cleaner is shutting down."""


class CleaningState(enum.Enum):
    IN_PROGRESS = "in_progress"
    ABORTED = "aborted"
    PAUSED = "paused"


@dataclass(slots=True)
class UncleanablePartition:
    """Why a partition is skipped: the last failure, how many rounds failed, and when to retry."""

    reason: str
    failures: int
    #: clock time of the next attempt; None once the retries are exhausted (reported as uncleanable)
    retry_at_ms: int | None
    log_identity: int

    @property
    def permanent(self) -> bool:
        return self.retry_at_ms is None


class LogCleanerManager:
    """Owns the cleaning states, the uncleanable marks, the grab bookkeeping (`time_of_last_run_ms`,
    `max_dirty_ratio`) and all writes of `cleaner-offset-checkpoint`.

    Thread-safe: one Condition guards every field; cleaner threads, the admin endpoint and topic deletion
    call in concurrently. No disk I/O other than the checkpoint file happens under it.
    """

    def __init__(self, log_manager: LogManager, now_ms: int, *, max_retries: int = 3,
                 retry_backoff_ms: int = 15_000) -> None:
        self.log_manager = log_manager
        self.max_retries = max_retries
        self.retry_backoff_ms = retry_backoff_ms
        self._cond = threading.Condition()
        self._states: dict[TopicPartition, tuple[CleaningState, int]] = {}
        self._uncleanable: dict[TopicPartition, UncleanablePartition] = {}
        self.time_of_last_run_ms = now_ms
        self.max_dirty_ratio = 0.0

    # -------------------------------------------------------------- checkpoint
    def read_checkpoints(self) -> dict[TopicPartition, int]:
        """The checkpoint entries; a malformed file takes the log dir offline (spec §2.9, S47) and reads as
        no entries."""
        if self.log_manager.offline_reason is not None:
            return {}
        try:
            return self.log_manager.cleaner_offset_checkpoint.read()
        except KafkaStorageError as exc:
            self.log_manager.mark_log_dir_offline(str(exc))
            return {}

    def update_checkpoints(self, updates: dict[TopicPartition, int]) -> None:
        """Merge `updates` into the checkpoint file, dropping partitions this broker no longer hosts."""
        if not updates or self.log_manager.offline_reason is not None:
            return
        with self._cond, self.log_manager.cleaner_checkpoint_lock:
            hosted = {(log.topic, log.partition) for log in self.log_manager.all_logs()}
            offsets = {tp: o for tp, o in self.read_checkpoints().items() if tp in hosted}
            offsets.update({tp: o for tp, o in updates.items() if tp in hosted})
            self.log_manager.cleaner_offset_checkpoint.write(offsets)

    # ------------------------------------------------------------------- grab
    def view_of(self, log: UnifiedLog, checkpoints: dict[TopicPartition, int], now_ms: int, *,
                ignore_marks: bool = False, min_cleanable_ratio: float | None = None) -> PartitionView:
        """A snapshot of one partition for `grab_filthiest_compacted_log`. Caller holds `_cond` or passes
        `ignore_marks`."""
        tp = (log.topic, log.partition)
        config = log.config
        mark = self._uncleanable.get(tp)
        return PartitionView(
            topic_partition=tp, segments=log.segments(), log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset, last_stable_offset=log.last_stable_offset,
            checkpoint_offset=checkpoints.get(tp), compact=config.compact,
            min_cleanable_ratio=(config.min_cleanable_dirty_ratio if min_cleanable_ratio is None
                                 else min_cleanable_ratio),
            min_compaction_lag_ms=config.min_compaction_lag_ms, max_compaction_lag_ms=config.max_compaction_lag_ms,
            cleaning_in_progress=not ignore_marks and tp in self._states,
            uncleanable=not ignore_marks and mark is not None and (
                mark.permanent or (mark.retry_at_ms is not None and now_ms < mark.retry_at_ms)))

    def grab_filthiest(self, now_ms: int) -> tuple[UnifiedLog | None, GrabResult]:
        """Kafka's grabFilthiestCompactedLog: choose a log and mark it IN_PROGRESS."""
        checkpoints = self.read_checkpoints()
        with self._cond:
            self.time_of_last_run_ms = now_ms
            logs = {(log.topic, log.partition): log for log in self.log_manager.all_logs()
                    if log.offline_reason is None}
            self._drop_marks_of_missing(logs)
            views = [self.view_of(log, checkpoints, now_ms) for log in logs.values()]
            result = grab_filthiest_compacted_log(views, now_ms)
            self.max_dirty_ratio = result.max_dirty_ratio
            chosen = None
            if result.chosen is not None:
                tp = result.chosen.view.topic_partition
                self._states[tp] = (CleaningState.IN_PROGRESS, 0)
                chosen = logs[tp]
        for tp, exc in result.failures.items():
            self.mark_failed(tp, logs[tp], f"{type(exc).__name__}: {exc}", now_ms)
        self.update_checkpoints(dict(result.checkpoint_updates))
        return chosen, result

    def try_begin(self, tp: TopicPartition, timeout_s: float | None = None) -> bool:
        """Mark `tp` IN_PROGRESS once it is in no cleaning state (manual compaction, retention)."""
        with self._cond:
            if not self._cond.wait_for(lambda: tp not in self._states, timeout_s):
                return False
            self._states[tp] = (CleaningState.IN_PROGRESS, 0)
            return True

    def deletable_logs(self) -> list[UnifiedLog]:
        """Compacted logs in no cleaning state and not uncleanable, marked IN_PROGRESS (Kafka's deletableLogs)."""
        with self._cond:
            chosen = []
            for log in self.log_manager.all_logs():
                tp = (log.topic, log.partition)
                if log.config.compact and tp not in self._states and tp not in self._uncleanable \
                        and log.offline_reason is None:
                    self._states[tp] = (CleaningState.IN_PROGRESS, 0)
                    chosen.append(log)
            return chosen

    def done_deleting(self, logs: Iterable[UnifiedLog]) -> None:
        for log in logs:
            self._finish((log.topic, log.partition))

    # ------------------------------------------------------------------ rounds
    def check_aborted(self, tp: TopicPartition) -> None:
        with self._cond:
            state = self._states.get(tp)
        if state is not None and state[0] is CleaningState.ABORTED:
            raise LogCleaningAbortedError(f"cleaning of {tp[0]}-{tp[1]} was aborted")

    def done_cleaning(self, tp: TopicPartition, end_offset: int | None) -> None:
        """End of a round: checkpoint `end_offset` if it completed (None when aborted or failed)."""
        with self._cond:
            state = self._states.get(tp)
            if end_offset is not None and state is not None and state[0] is CleaningState.IN_PROGRESS:
                try:
                    self.update_checkpoints({tp: end_offset})
                except OSError as exc:  # the cleaned segments are in; the next round reads the range again
                    logger.error("Could not checkpoint the cleaning of %s-%d up to %d: %s", tp[0], tp[1], end_offset,
                                 exc)
                    if exc.errno in DISK_FAILURE_ERRNOS:
                        self.log_manager.mark_log_dir_offline(f"writing the cleaner-offset-checkpoint failed: {exc}")
                mark = self._uncleanable.get(tp)
                if mark is not None:
                    del self._uncleanable[tp]
            self._finish(tp)

    def _finish(self, tp: TopicPartition) -> None:
        with self._cond:
            state = self._states.get(tp)
            if state is None:
                return
            if state[0] is CleaningState.ABORTED:
                self._states[tp] = (CleaningState.PAUSED, 1)
            elif state[0] is CleaningState.IN_PROGRESS:
                del self._states[tp]
            self._cond.notify_all()

    def mark_failed(self, tp: TopicPartition, log: UnifiedLog, reason: str, now_ms: int, *,
                    out_of_space: bool = False) -> UncleanablePartition:
        """Count a failed round; schedule a retry or, once retries are exhausted (never when `out_of_space`),
        mark it uncleanable."""
        with self._cond:
            previous = self._uncleanable.get(tp)
            failures = previous.failures + 1 if previous is not None and previous.log_identity == id(log) else 1
            backoff_ms = self.retry_backoff_ms * 2 ** (min(failures, self.max_retries) - 1)
            retry_at = None if failures > self.max_retries and not out_of_space else now_ms + backoff_ms
            mark = UncleanablePartition(reason, failures, retry_at, id(log))
            self._uncleanable[tp] = mark
        if mark.permanent:
            logger.warning("Unexpected exception thrown when cleaning log %s-%d (%s). Marking its partition "
                           "(%s-%d) as uncleanable after %d failed rounds", tp[0], tp[1], reason, tp[0], tp[1],
                           failures)
        else:
            logger.warning("Cleaning %s-%d failed (%s); retry %d of %d at %d", tp[0], tp[1], reason, failures,
                           self.max_retries, retry_at)
        return mark

    def clear_failures(self, tp: TopicPartition) -> None:
        with self._cond:
            self._uncleanable.pop(tp, None)

    def uncleanable_partitions(self) -> dict[TopicPartition, UncleanablePartition]:
        """Every mark, including those still waiting for a retry (see `UncleanablePartition.permanent`)."""
        with self._cond:
            return dict(self._uncleanable)

    def _drop_marks_of_missing(self, logs: dict[TopicPartition, UnifiedLog]) -> None:
        for tp, mark in list(self._uncleanable.items()):
            log = logs.get(tp)
            if log is None or id(log) != mark.log_identity:
                del self._uncleanable[tp]

    # ------------------------------------------------------------ pause/abort
    def abort_and_pause(self, tp: TopicPartition, timeout_s: float | None = None) -> None:
        """Stop cleaning `tp` and keep it paused until `resume`; waits for a running round to notice."""
        with self._cond:
            state = self._states.get(tp)
            if state is None:
                self._states[tp] = (CleaningState.PAUSED, 1)
            elif state[0] is CleaningState.IN_PROGRESS:
                self._states[tp] = (CleaningState.ABORTED, 0)
            elif state[0] is CleaningState.PAUSED:
                self._states[tp] = (CleaningState.PAUSED, state[1] + 1)
            if not self._cond.wait_for(
                    lambda: self._states.get(tp, (None, 0))[0] is CleaningState.PAUSED, timeout_s):
                raise TimeoutError(f"cleaning of {tp[0]}-{tp[1]} did not stop within {timeout_s}s")

    def abort_cleaning(self, tp: TopicPartition, timeout_s: float | None = None) -> None:
        """Abort a running round of `tp` and wait until it has stopped, leaving the pause count as it was
        (Kafka's LogCleanerManager.abortCleaning, called when the partition's log is deleted)."""
        with self._cond:
            self.abort_and_pause(tp, timeout_s)
            self.resume(tp)

    def resume(self, tp: TopicPartition) -> None:
        with self._cond:
            state = self._states.get(tp)
            if state is None or state[0] is not CleaningState.PAUSED:
                raise ValueError(f"Compaction for partition {tp[0]}-{tp[1]} cannot be resumed since it is not "
                                 "paused.")
            if state[1] <= 1:
                del self._states[tp]
            else:
                self._states[tp] = (CleaningState.PAUSED, state[1] - 1)
            self._cond.notify_all()

    def state_of(self, tp: TopicPartition) -> tuple[CleaningState, int] | None:
        with self._cond:
            return self._states.get(tp)


def is_out_of_space(exc: BaseException) -> bool:
    """Whether a failed round ran out of disk space (the OSError may be wrapped, e.g. in KafkaStorageError)."""
    return any(error.errno in (errno.ENOSPC, errno.EDQUOT) for error in _os_errors(exc))


def is_disk_failure(exc: BaseException) -> bool:
    """Whether a failed round met a broken disk (EIO, a read-only remount) or left files that disagree with
    memory: Kafka's cleaner takes the log dir offline for these."""
    return any(isinstance(error, SegmentInconsistentError) or error.errno in DISK_FAILURE_ERRNOS
               for error in _os_errors(exc))


def _os_errors(exc: BaseException) -> Iterator[OSError]:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError):
            yield seen
        seen = seen.__cause__ or seen.__context__

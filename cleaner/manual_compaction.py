"""A request to compact some partitions now (`POST /admin/compact`, `minikafka compact`), and its outcome.

An exact request (`POST /admin/compact?exact=true`, issue 10) carries a validated retained-offset plan for its one
partition; it is served by one exact round instead of rounds until the cleanable range is done.

`compact_now` and `compact_exact_now` serve one partition of a request on a cleaner thread (`LogCleaner._serve`):
they take the partition through the `LogCleanerManager` like any round and run it with `LogCleaner.clean_round`.
Requests are thread-safe (`finish`, `wait`); the two functions run on the one thread serving the request."""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from minikafka.cleaner.cleaner_manager import CleaningState
from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.exact_round import ExactRoundRange, check_plan_range
from minikafka.cleaner.filthiest_log import PreCleanStats, grab_filthiest_compacted_log
from minikafka.cleaner.retained_offset_plan import InvalidRetainedOffsetPlanError, RetainedOffsetPlan
from minikafka.protocol.errors import KafkaError
from minikafka.storage.unified_log import UnifiedLog

if TYPE_CHECKING:
    from minikafka.cleaner.cleaner_thread import CleanerThread
    from minikafka.cleaner.log_cleaner import LogCleaner

TopicPartition = tuple[str, int]

#: bound on the rounds of one manual compaction of one partition (each must move the end offset forward)
_MAX_MANUAL_ROUNDS = 10_000


@dataclass(slots=True)
class PartitionCompactionResult:
    """What a manual compaction did to one partition (summed over its rounds)."""

    topic: str
    partition: int
    #: "cleaned", "nothing_to_clean", "paused", "aborted", "failed" or "unknown_partition"; for an exact request
    #: also "refused" (the plan does not fit the log as it is now: `error` says why; nothing was deleted)
    status: str = "pending"
    rounds: int = 0
    first_dirty_offset: int | None = None
    end_offset: int | None = None
    messages_read: int = 0
    messages_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    error: str | None = None

    def add_round(self, stats: CleanerStats, first_dirty_offset: int, end_offset: int) -> None:
        self.rounds += 1
        if self.first_dirty_offset is None:
            self.first_dirty_offset = first_dirty_offset
        self.end_offset = end_offset
        self.messages_read += stats.messages_read
        self.messages_written += stats.messages_written
        self.bytes_read += stats.bytes_read
        self.bytes_written += stats.bytes_written

    @property
    def records_removed(self) -> int:
        return self.messages_read - self.messages_written

    @property
    def bytes_removed(self) -> int:
        return self.bytes_read - self.bytes_written

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["records_removed"] = self.records_removed
        data["bytes_removed"] = self.bytes_removed
        return data


@dataclass(slots=True)
class CompactionRequest:
    """Partitions to compact now, filled in by cleaner threads; `done` is set once every one has a result.

    Owns the plan file of an exact request when `delete_plan` (unlinked once the request is done).
    Thread-safe: results are written under the request's lock by the thread that served the partition.
    """

    topic: str
    partitions: list[int]
    results: dict[int, PartitionCompactionResult] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: an exact request's validated plan (its one partition is `plan.partition`)
    plan: RetainedOffsetPlan | None = None
    #: unlink the plan file once the request is done (the admin endpoint's spooled upload)
    delete_plan: bool = False

    def finish(self, result: PartitionCompactionResult) -> None:
        with self._lock:
            self.results[result.partition] = result
            if len(self.results) >= len(self.partitions):
                self.discard_plan()
                self.done.set()

    def discard_plan(self) -> None:
        """Unlink the plan file if this request owns it (idempotent)."""
        if self.plan is not None and self.delete_plan:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.plan.path)

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.done.wait(timeout_s)

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            results = [self.results[p].to_json() for p in sorted(self.results)]
        body: dict[str, Any] = {
            "topic": self.topic,
            "partitions": self.partitions,
            "done": self.done.is_set(),
            "results": results,
            "records_removed": sum(r["records_removed"] for r in results),
            "bytes_removed": sum(r["bytes_removed"] for r in results),
        }
        if self.plan is not None:
            body["exact"] = True
            body["plan"] = self.plan.describe()
        return body


def roll_active_segment(log: UnifiedLog, result: PartitionCompactionResult) -> bool:
    """Roll the active segment for a manual request; a failed roll (a full disk) fails the request, not the thread."""
    try:
        log.roll()
    except KafkaError as exc:
        result.status, result.error = "failed", f"rolling the active segment failed: {exc}"
        return False
    return True


def compact_now(cleaner: LogCleaner, worker: CleanerThread, topic: str, partition: int) -> PartitionCompactionResult:
    """Roll the active segment, then clean rounds until the whole cleanable range is done."""
    result = PartitionCompactionResult(topic, partition)
    tp = (topic, partition)
    log = cleaner.log_manager.get_log(topic, partition)
    if log is None:
        result.status = "unknown_partition"
        return result
    # "now" includes what was just written; min.compaction.lag.ms still holds it back
    if not roll_active_segment(log, result):
        return result
    cleaner.manager.clear_failures(tp)
    previous_end = -1
    for _ in range(_MAX_MANUAL_ROUNDS):
        state = cleaner.manager.state_of(tp)
        if (state is not None and state[0] is CleaningState.PAUSED) or not cleaner.manager.try_begin(tp, 300):
            result.status = "paused"
            return result
        now_ms = cleaner.clock.time_ms()
        view = cleaner.manager.view_of(log, cleaner.manager.read_checkpoints(), now_ms, ignore_marks=True,
                                    min_cleanable_ratio=0.0)
        grab = grab_filthiest_compacted_log([view], now_ms)
        cleaner.manager.update_checkpoints(dict(grab.checkpoint_updates))
        if grab.chosen is None or grab.failures:
            cleaner.manager.done_cleaning(tp, None)
            if grab.failures:
                result.status, result.error = "failed", str(next(iter(grab.failures.values())))
            break
        end_offset = cleaner.clean_round(worker, log, grab.chosen.log_to_clean, grab.pre_clean_stats, result)
        if end_offset is None or end_offset <= previous_end:
            break
        previous_end = end_offset
        if end_offset >= grab.chosen.log_to_clean.first_uncleanable_offset:
            break
    if result.status == "pending":
        result.status = "cleaned" if result.rounds else "nothing_to_clean"
    return result


def compact_exact_now(cleaner: LogCleaner, worker: CleanerThread, topic: str, plan: RetainedOffsetPlan
                       ) -> PartitionCompactionResult:
    """One exact round: roll the active segment if the plan reaches into it, re-check the plan's range against
    the log as it is now, clean `[log start, end)` deciding `[start, end)` by the plan; the checkpoint as
    `ExactRoundRange.checkpoint_end` says (never backwards)."""
    partition = plan.partition
    result = PartitionCompactionResult(topic, partition)
    tp = (topic, partition)
    log = cleaner.log_manager.get_log(topic, partition)
    meta = cleaner.log_manager.topic(topic)
    if log is None or meta is None:
        result.status = "unknown_partition"
        return result
    if meta.topic_id.bytes != plan.topic_id:
        result.status, result.error = "refused", f"topic {topic} was deleted and recreated since the plan was made"
        return result
    if plan.end_offset > log.segments()[-1].base_offset and not roll_active_segment(log, result):
        return result
    cleaner.manager.clear_failures(tp)
    state = cleaner.manager.state_of(tp)
    if (state is not None and state[0] is CleaningState.PAUSED) or not cleaner.manager.try_begin(tp, 300):
        result.status = "paused"
        return result
    try:
        check_plan_range(plan, log, cleaner.exact_end_limit(log, roll_active=False))
    except InvalidRetainedOffsetPlanError as exc:
        cleaner.manager.done_cleaning(tp, None)
        result.status, result.error = "refused", str(exc)
        return result
    if plan.start_offset == plan.end_offset:
        cleaner.manager.done_cleaning(tp, None)
        result.status = "nothing_to_clean"
        return result
    bounds = ExactRoundRange.of(plan, log.segments(), log.log_start_offset)
    end_offset = cleaner.clean_round(worker, log, bounds.to_clean, PreCleanStats(), result, plan=plan,
                                     minimum_checkpoint=cleaner.manager.read_checkpoints().get(tp, -1),
                                     checkpoint_end=bounds.checkpoint_end)
    if result.status == "pending":
        result.status = "cleaned" if end_offset is not None else "failed"
    return result

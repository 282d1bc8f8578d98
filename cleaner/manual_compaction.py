"""A request to compact some partitions now (`POST /admin/compact`, `minikafka compact`), and its outcome.

An exact request (`POST /admin/compact?exact=true`, issue 10) carries a validated retained-offset plan for its one
partition; it is served by one exact round instead of rounds until the cleanable range is done."""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.retained_offset_plan import RetainedOffsetPlan
from minikafka.protocol.errors import KafkaError
from minikafka.storage.unified_log import UnifiedLog

TopicPartition = tuple[str, int]


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


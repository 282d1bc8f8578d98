"""`MemberTimers`: the per-member timers of KIP-848 consumer groups, by kind — the session timeout of every
member, the revocation (rebalance) timeout of a consumer-protocol member, and the join and sync timeouts of a
member using the classic protocol inside a consumer group (Kafka's consumerGroupSessionTimeoutKey,
consumerGroupRebalanceTimeoutKey, consumerGroupJoinKey, consumerGroupSyncKey).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from minikafka.broker.groups.scheduler import Cancellable, Scheduler

__all__ = ["MemberTimers", "TimerKind"]


class TimerKind(enum.Enum):
    SESSION = "session"
    REVOCATION = "revocation"
    CLASSIC_JOIN = "join"
    CLASSIC_SYNC = "sync"


class MemberTimers:
    """Owns the pending timers by (kind, group id, member id); a timer removes itself before it fires.
    Event-loop thread only; not thread-safe."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._timers: dict[tuple[TimerKind, str, str], Cancellable] = {}

    def schedule(self, kind: TimerKind, group_id: str, member_id: str, delay_ms: int,
                 callback: Callable[[], None]) -> None:
        """(Re)start the timer: a pending one of the same key is cancelled."""
        key = (kind, group_id, member_id)
        self.cancel(kind, group_id, member_id)

        def fire() -> None:
            self._timers.pop(key, None)
            callback()

        self._timers[key] = self._scheduler.call_later(delay_ms, fire)

    def schedule_if_absent(self, kind: TimerKind, group_id: str, member_id: str, delay_ms: int,
                           callback: Callable[[], None]) -> None:
        if (kind, group_id, member_id) not in self._timers:
            self.schedule(kind, group_id, member_id, delay_ms, callback)

    def pending(self, kind: TimerKind, group_id: str, member_id: str) -> bool:
        return (kind, group_id, member_id) in self._timers

    def cancel(self, kind: TimerKind, group_id: str, member_id: str) -> None:
        timer = self._timers.pop((kind, group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def cancel_member(self, group_id: str, member_id: str) -> None:
        for kind in TimerKind:
            self.cancel(kind, group_id, member_id)

    def cancel_all(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

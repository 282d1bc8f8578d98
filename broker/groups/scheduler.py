"""`Scheduler`: delayed callbacks for the coordinator's session and rebalance timeouts.

`LoopScheduler` uses the running asyncio loop (event-loop thread only); `ManualScheduler` runs due
callbacks when a test advances its `FakeClock`, so the state machine is testable synchronously.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

from minikafka.storage.clock import FakeClock


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Cancellable: ...


class LoopScheduler:
    """Timers on the running asyncio loop."""

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Cancellable:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback)


class _ManualHandle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """Timers driven by a FakeClock: `advance_ms` moves the clock and runs what fell due, in order."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self._queue: list[tuple[int, int, _ManualHandle, Callable[[], None]]] = []
        self._sequence = itertools.count()

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Cancellable:
        handle = _ManualHandle()
        due_ms = self.clock.monotonic_ms() + max(delay_ms, 0)
        heapq.heappush(self._queue, (due_ms, next(self._sequence), handle, callback))
        return handle

    def advance_ms(self, delta_ms: int) -> None:
        target_ms = self.clock.monotonic_ms() + delta_ms
        while self._queue and self._queue[0][0] <= target_ms:
            due_ms, _seq, handle, callback = heapq.heappop(self._queue)
            if due_ms > self.clock.monotonic_ms():
                self.clock.advance_ms(due_ms - self.clock.monotonic_ms())
            if not handle.cancelled:
                callback()
        if target_ms > self.clock.monotonic_ms():
            self.clock.advance_ms(target_ms - self.clock.monotonic_ms())

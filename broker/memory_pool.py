"""`MemoryPool`: Kafka's request memory pool (`queued.max.request.bytes`), shared by every connection.

A connection reserves the whole declared size of a large request frame before it reads the frame's body, and
gives it back once the request has been handled, as Kafka's SimpleMemoryPool does for every request. Until its
reservation is granted the connection is muted (its socket is not read), so what requests in flight can hold
is bounded by the pool. Whole-frame reservations cannot deadlock: no connection waits while holding part of
what it needs. Waiters are served first come, first served, so a large frame is not starved by small ones.

Event-loop thread only (not thread-safe).
"""

from __future__ import annotations

import asyncio
from collections import deque


class MemoryPool:
    """`capacity_bytes` of reservable request memory; `None` is Kafka's -1: unbounded, never waits."""

    def __init__(self, capacity_bytes: int | None) -> None:
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def bounded(self) -> bool:
        return self.capacity_bytes is not None

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def acquire(self, size_bytes: int) -> None:
        """Reserve `size_bytes` (at most the capacity: `queued.max.request.bytes` >= `socket.request.max.bytes`
        is validated at start-up), waiting behind earlier requests while the pool is short."""
        if self.capacity_bytes is None:
            return
        if not self._waiters and self.used_bytes + size_bytes <= self.capacity_bytes:
            self.used_bytes += size_bytes
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size_bytes, waiter)
        self._waiters.append(entry)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(size_bytes)  # granted, but the connection went away before using it
            else:
                self._waiters.remove(entry)
                self._grant()
            raise

    def release(self, size_bytes: int) -> None:
        if self.capacity_bytes is None:
            return
        self.used_bytes -= size_bytes
        self._grant()

    def _grant(self) -> None:
        assert self.capacity_bytes is not None
        while self._waiters and self.used_bytes + self._waiters[0][0] <= self.capacity_bytes:
            size_bytes, waiter = self._waiters.popleft()
            self.used_bytes += size_bytes
            waiter.set_result(None)

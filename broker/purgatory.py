"""`FetchPurgatory`: long-polling Fetch requests wait here until an append to one of their partitions.

A waiting fetch registers one future under each partition it reads; `notify_append()` completes the futures
of that partition. The fetch then re-reads and decides whether `min_bytes` is met, so a spurious wake-up is
harmless. Event-loop thread only (not thread-safe): a future resolved from another thread does not wake the loop,
so once a fetch has waited here (which ties the purgatory to its loop) `notify_append` checks its thread
(broker/loop_owner.py); a purgatory no fetch waited on has no loop yet (ReplicaManager's synchronous unit tests).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from minikafka.broker.loop_owner import assert_on_loop

TopicPartition = tuple[str, int]


class FetchPurgatory:
    """Watchers per topic-partition, woken by appends."""

    def __init__(self) -> None:
        self._watchers: dict[TopicPartition, set[asyncio.Future[None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the first waiting fetch

    async def wait_for_append(self, partitions: Iterable[TopicPartition], timeout_ms: int) -> bool:
        """Wait until one of `partitions` gets an append or `timeout_ms` passes; True if woken by an append."""
        if timeout_ms <= 0:
            return False
        self._loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = self._loop.create_future()
        keys = list(partitions)
        for key in keys:
            self._watchers.setdefault(key, set()).add(future)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(future), timeout_ms / 1000)
            return future.done()
        finally:
            for key in keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(future)
                    if not watchers:
                        del self._watchers[key]

    def notify_append(self, partition: TopicPartition) -> None:
        if self._loop is not None:
            assert_on_loop("FetchPurgatory", self._loop)
        for future in self._watchers.pop(partition, ()):
            if not future.done():
                future.set_result(None)

    @property
    def waiting(self) -> int:
        return len({f for watchers in self._watchers.values() for f in watchers})

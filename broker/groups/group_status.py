"""`CoordinatorStatus`: whether the group coordinator serves group requests now (Kafka's runtime checks before it
hands a request to a group shard: COORDINATOR_NOT_AVAILABLE when not started or shut down,
COORDINATOR_LOAD_IN_PROGRESS while `__consumer_offsets` loads).

Shared by the coordinator and its helpers (`GroupOffsets`, `GroupAdmin`, `ConsumerGroupCoordinator`) instead of a
pointer back to the coordinator. Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

from typing import Protocol

from minikafka.protocol.errors import ErrorCode

__all__ = ["CoordinatorStatus"]


class _Loading(Protocol):
    @property
    def loading(self) -> bool: ...


class CoordinatorStatus:
    """`active` between startup and shutdown; `store.loading` while the store rebuilds its cache."""

    def __init__(self, store: _Loading) -> None:
        self.active = False
        self._store = store

    def validate(self, group_id: str | None, allow_empty_id: bool = False) -> ErrorCode:
        """The error a request for `group_id` gets before it reaches the group, NONE if it may proceed."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._store.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

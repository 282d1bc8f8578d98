"""`Persister`: where share-partition state is read and written, as Apache Kafka 4.3.1's
`org.apache.kafka.server.share.persister.Persister` (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState), and `CoordinatorPersister`, the one this broker uses: the share
coordinator's `__share_group_state` (`ShareStateStore`), each write appended first and replayed into the
coordinator's state only once the append succeeded.

The share-partition manager and the group coordinator's share-group code go through this interface only, so the
share coordinator can move to another broker (a persister sending the RPCs) without either of them changing.
Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from minikafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minikafka.broker.share.share_coordinator_state import ShareGroupOffset, SharePartitionKey
    from minikafka.broker.share.share_state_store import ShareStateStore
    from minikafka.broker.share.share_types import PersisterStateBatch
    from minikafka.storage.clock import Clock

__all__ = ["CoordinatorPersister", "Persister"]


class Persister(Protocol):
    """Share-partition state, read and written. The write methods return the write's error code; a request the
    share coordinator refuses raises `ShareStateError` (Kafka's code and message)."""

    async def load(self) -> None:
        """Load the persisted state (before the first read)."""

    async def ensure_ready(self) -> None:
        """Make sure writes can be served (create the state topic)."""

    def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ShareGroupOffset | None: ...

    def share_partitions(self) -> Sequence[SharePartitionKey]: ...

    def initialize_state(self, group_id: str, topic_id: uuid.UUID, partition: int, *, state_epoch: int,
                         start_offset: int) -> ErrorCode: ...

    def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, *, state_epoch: int, leader_epoch: int,
                    start_offset: int, delivery_complete_count: int,
                    state_batches: list[PersisterStateBatch]) -> ErrorCode: ...

    def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ErrorCode: ...


class CoordinatorPersister:
    """The `Persister` over this broker's share coordinator (`__share_group_state`). See the module docstring."""

    def __init__(self, store: ShareStateStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    async def load(self) -> None:
        await self._store.load_all()

    async def ensure_ready(self) -> None:
        await self._store.ensure_topic()

    def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ShareGroupOffset | None:
        return self._store.state.state(group_id, topic_id, partition)

    def share_partitions(self) -> Sequence[SharePartitionKey]:
        return list(self._store.state.share_partitions())

    def initialize_state(self, group_id: str, topic_id: uuid.UUID, partition: int, *, state_epoch: int,
                         start_offset: int) -> ErrorCode:
        return self._store.write(self._store.state.initialize_state(
            group_id, topic_id, partition, state_epoch=state_epoch, start_offset=start_offset,
            now_ms=self._clock.time_ms()))

    def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, *, state_epoch: int, leader_epoch: int,
                    start_offset: int, delivery_complete_count: int,
                    state_batches: list[PersisterStateBatch]) -> ErrorCode:
        return self._store.write(self._store.state.write_state(
            group_id, topic_id, partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
            start_offset=start_offset, delivery_complete_count=delivery_complete_count, state_batches=state_batches,
            now_ms=self._clock.time_ms()))

    def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ErrorCode:
        return self._store.write(self._store.state.delete_state(group_id, topic_id, partition))

"""The share coordinator's view of `__share_group_state`, as Apache Kafka 4.3.1's `ShareCoordinatorShard` keeps it:
the state of every share partition rebuilt by replaying ShareSnapshot and ShareUpdate records, and the record a
write (WriteShareGroupState), an initialisation (InitializeShareGroupState) or a deletion produces.

A write becomes a ShareUpdate holding only the batches written, until `snapshot_update_records_per_snapshot`
updates (`share.coordinator.snapshot.update.records.per.snapshot`, default 500) have followed the last snapshot;
then it becomes a ShareSnapshot of the whole merged state with the snapshot epoch bumped, so a compacted topic
keeps one snapshot and its few updates per share partition. Records are produced, not applied: the caller appends
them to the log and then `replay`s them, as Kafka's coordinator runtime does, so loading and live writes share one
path. Sans-IO; not thread-safe (one owner, the coordinator's event loop).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from minikafka.broker.share.share_partition import UNINITIALIZED_START_OFFSET, SharePartition
from minikafka.broker.share.share_state_combiner import combine_state_batches
from minikafka.broker.share.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
)
from minikafka.broker.share.share_types import INVALID_REQUEST, PersisterStateBatch

__all__ = [
    "FENCED_LEADER_EPOCH",
    "FENCED_STATE_EPOCH",
    "ShareCoordinatorState",
    "ShareGroupOffset",
    "ShareStateError",
    "load_share_partition",
]

FENCED_LEADER_EPOCH = 74
FENCED_STATE_EPOCH = 124
_NO_TIMESTAMP = -1
_UNINITIALIZED_EPOCH = 0

SharePartitionKey = tuple[str, uuid.UUID, int]
ShareStateRecord = tuple[ShareStateKey, "ShareSnapshotValue | ShareUpdateValue | None"]


class ShareStateError(Exception):
    """A share-state request Kafka refuses; `error_code` is the partition's error in the response."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """The state of one share partition (Kafka's `ShareGroupOffset`)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[PersisterStateBatch, ...]
    create_timestamp: int = _NO_TIMESTAMP
    write_timestamp: int = _NO_TIMESTAMP


class ShareCoordinatorState:
    """Every share partition's state in one `__share_group_state` partition. See the module docstring."""

    def __init__(self, snapshot_update_records_per_snapshot: int = 500) -> None:
        if snapshot_update_records_per_snapshot < 0:
            raise ValueError("share.coordinator.snapshot.update.records.per.snapshot must be >= 0")
        self.snapshot_update_records_per_snapshot = snapshot_update_records_per_snapshot
        self._states: dict[SharePartitionKey, ShareGroupOffset] = {}
        self._leader_epochs: dict[SharePartitionKey, int] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}
        self._update_counts: dict[SharePartitionKey, int] = {}

    def state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ShareGroupOffset | None:
        return self._states.get((group_id, topic_id, partition))

    def share_partitions(self) -> list[SharePartitionKey]:
        return list(self._states)

    def update_count(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
        return self._update_counts.get((group_id, topic_id, partition), 0)

    # ---- replay ---------------------------------------------------------------------------------------------
    def replay(self, key: ShareStateKey, value: ShareSnapshotValue | ShareUpdateValue | None) -> None:
        """Apply one record read from (or just appended to) `__share_group_state`."""
        map_key = (key.group_id, key.topic_id, key.partition)
        if key.record_type == SHARE_SNAPSHOT:
            if value is None:
                for table in (self._states, self._leader_epochs, self._state_epochs, self._update_counts):
                    table.pop(map_key, None)
                return
            if not isinstance(value, ShareSnapshotValue):
                raise ValueError(f"a ShareSnapshot key with a {type(value).__name__}")
            self._raise_epoch(self._leader_epochs, map_key, value.leader_epoch)
            self._raise_epoch(self._state_epochs, map_key, value.state_epoch)
            self._states[map_key] = ShareGroupOffset(
                value.snapshot_epoch,
                value.state_epoch,
                value.leader_epoch,
                value.start_offset,
                value.delivery_complete_count,
                value.state_batches,
                value.create_timestamp,
                value.write_timestamp,
            )
            if self._update_counts.get(map_key, 0) >= self.snapshot_update_records_per_snapshot:
                self._update_counts[map_key] = 0
            return
        if key.record_type != SHARE_UPDATE or not isinstance(value, ShareUpdateValue):
            raise ValueError(f"record type {key.record_type} with value {type(value).__name__}")
        self._raise_epoch(self._leader_epochs, map_key, value.leader_epoch)
        so_far = self._states.get(map_key)
        if so_far is None:
            self._states[map_key] = ShareGroupOffset(
                value.snapshot_epoch,
                _UNINITIALIZED_EPOCH,
                value.leader_epoch,
                value.start_offset,
                value.delivery_complete_count,
                value.state_batches,
            )
        else:
            start = so_far.start_offset if value.start_offset == -1 else value.start_offset
            self._states[map_key] = ShareGroupOffset(
                so_far.snapshot_epoch,
                so_far.state_epoch,
                so_far.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
                start,
                value.delivery_complete_count,
                tuple(combine_state_batches(so_far.state_batches, value.state_batches, start)),
                so_far.create_timestamp,
                so_far.write_timestamp,
            )
        self._update_counts[map_key] = self._update_counts.get(map_key, 0) + 1

    @staticmethod
    def _raise_epoch(table: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int) -> None:
        if table.get(key, epoch) <= epoch:
            table[key] = epoch

    # ---- the records requests produce -----------------------------------------------------------------------
    def write_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        *,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        delivery_complete_count: int,
        state_batches: list[PersisterStateBatch],
        now_ms: int,
    ) -> ShareStateRecord:
        """The record for a WriteShareGroupState partition, or ShareStateError (Kafka's checks and codes)."""
        map_key = (group_id, topic_id, partition)
        if partition < 0:
            raise ShareStateError(INVALID_REQUEST, "The partition id cannot be negative.")
        current = self._states.get(map_key)
        if current is None:
            raise ShareStateError(INVALID_REQUEST, "Write operation on uninitialized share partition not allowed.")
        if leader_epoch != -1 and self._leader_epochs.get(map_key, leader_epoch) > leader_epoch:
            raise ShareStateError(
                FENCED_LEADER_EPOCH, "The leader epoch in the request is older than the recorded one."
            )
        if state_epoch != -1 and self._state_epochs.get(map_key, state_epoch) > state_epoch:
            raise ShareStateError(
                FENCED_STATE_EPOCH,
                "The share coordinator rejected the request because the share-group state epoch did not match.",
            )
        new_leader_epoch = current.leader_epoch if leader_epoch == -1 else leader_epoch
        if self._update_counts.get(map_key, 0) >= self.snapshot_update_records_per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            snapshot = ShareSnapshotValue(
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=current.state_epoch,
                leader_epoch=new_leader_epoch,
                start_offset=start,
                create_timestamp=now_ms,
                write_timestamp=now_ms,
                state_batches=tuple(combine_state_batches(current.state_batches, state_batches, start)),
                delivery_complete_count=delivery_complete_count,
            )
            return ShareStateKey(SHARE_SNAPSHOT, group_id, topic_id, partition), snapshot
        update = ShareUpdateValue(
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=new_leader_epoch,
            start_offset=start_offset,
            state_batches=tuple(combine_state_batches((), state_batches, start_offset)),
            delivery_complete_count=delivery_complete_count,
        )
        return ShareStateKey(SHARE_UPDATE, group_id, topic_id, partition), update

    def initialize_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, *, state_epoch: int, start_offset: int, now_ms: int
    ) -> ShareStateRecord:
        """The fresh snapshot InitializeShareGroupState writes (also how an offset reset/alter starts over)."""
        map_key = (group_id, topic_id, partition)
        if partition < 0:
            raise ShareStateError(INVALID_REQUEST, "The partition id cannot be negative.")
        if state_epoch != -1 and self._state_epochs.get(map_key, state_epoch) > state_epoch:
            raise ShareStateError(
                FENCED_STATE_EPOCH,
                "The share coordinator rejected the request because the share-group state epoch did not match.",
            )
        current = self._states.get(map_key)
        snapshot = ShareSnapshotValue(
            snapshot_epoch=current.snapshot_epoch + 1 if current else 0,
            state_epoch=state_epoch,
            leader_epoch=_UNINITIALIZED_EPOCH,
            start_offset=start_offset,
            create_timestamp=now_ms,
            write_timestamp=now_ms,
            state_batches=(),
            delivery_complete_count=-1 if start_offset == UNINITIALIZED_START_OFFSET else 0,
        )
        return ShareStateKey(SHARE_SNAPSHOT, group_id, topic_id, partition), snapshot

    @staticmethod
    def delete_state(group_id: str, topic_id: uuid.UUID, partition: int) -> ShareStateRecord:
        """DeleteShareGroupState: a tombstone on the partition's ShareSnapshot key."""
        return ShareStateKey(SHARE_SNAPSHOT, group_id, topic_id, partition), None


def load_share_partition(partition: SharePartition, offset: ShareGroupOffset, *, resolved_start_offset: int) -> None:
    """Initialise `partition` from the coordinator's state (ReadShareGroupState). A start offset the coordinator
    reports as uninitialised (-1) is replaced by `resolved_start_offset` (`share.auto.offset.reset`)."""
    start = resolved_start_offset if offset.start_offset == UNINITIALIZED_START_OFFSET else offset.start_offset
    partition.initialize(start, offset.state_epoch, offset.state_batches)

"""`GroupOffsets`: the offset side of the group coordinator — OffsetCommit, TxnOffsetCommit, OffsetFetch and
OffsetDelete — with Kafka's checks and codes (ListGroups, DescribeGroups and DeleteGroups are `GroupAdmin`'s).

Built from what it uses: the group config (`offset.metadata.max.bytes`), the group store, the coordinator's status,
the clock, the `GroupRebalancer` (a member's commit is also a heartbeat) and the `ConsumerGroupCoordinator` (a
consumer group checks member epochs). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.consumer_group_coordinator import ConsumerGroupCoordinator
from minikafka.broker.groups.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata, GroupState, OffsetAndMetadata
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_rebalancer import GroupRebalancer
from minikafka.broker.groups.group_status import CoordinatorStatus
from minikafka.broker.groups.offsets_topic import TxnProducer
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CommitRequest:
    offset: int
    leader_epoch: int
    metadata: str | None


class GroupOffsets:
    """The offset APIs over the coordinator's groups."""

    def __init__(self, config: GroupConfig, store: GroupMetadataManager, status: CoordinatorStatus, clock: Clock,
                 rebalancer: GroupRebalancer, consumer: ConsumerGroupCoordinator) -> None:
        self.config = config
        self.manager = store
        self.status = status
        self.clock = clock
        self.rebalancer = rebalancer
        self.consumer = consumer

    # -- OffsetCommit ------------------------------------------------------------------------------------
    def handle_commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, CommitRequest],
        api_version: int = 9,
    ) -> dict[TopicPartition, ErrorCode]:
        error = self.status.validate(group_id, allow_empty_id=True)
        if error is not ErrorCode.NONE:
            return {tp: error for tp in offsets}
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:  # KIP-848: generation_id_or_member_epoch is the member epoch
            error = self.consumer.validate_offset_commit(consumer_group, member_id, generation_id,
                                                                     api_version)
            if error is not ErrorCode.NONE:
                return {tp: error for tp in offsets}
            return self._store(self._shell(group_id), offsets)
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return {tp: ErrorCode.ILLEGAL_GENERATION for tp in offsets}
            group = self.manager.add_group(GroupMetadata(group_id, state_timestamp_ms=self.clock.time_ms()))
        error = self._validate_commit(group, member_id, group_instance_id, generation_id)
        if error is not ErrorCode.NONE:
            return {tp: error for tp in offsets}
        results = self._store(group, offsets)
        if group.generation_id >= 0 and group.has(member_id):
            self.rebalancer.schedule_heartbeat(group, group.members[member_id])
        return results

    def _shell(self, group_id: str) -> GroupMetadata:
        """The classic cache entry holding a consumer group's committed offsets (Empty, no members)."""
        return self.manager.get_group(group_id) or self.manager.add_group(
            GroupMetadata(group_id, state_timestamp_ms=self.clock.time_ms()))

    def _store(self, group: GroupMetadata, offsets: Mapping[TopicPartition, CommitRequest]
               ) -> dict[TopicPartition, ErrorCode]:
        results: dict[TopicPartition, ErrorCode] = {}
        accepted = self._accept(offsets, results)
        store_error = self.manager.store_offsets(group, accepted)
        for tp in accepted:
            results[tp] = store_error
        return {tp: results[tp] for tp in offsets}

    def _accept(
        self, offsets: Mapping[TopicPartition, CommitRequest], results: dict[TopicPartition, ErrorCode]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The commits to store; those with too much metadata get OFFSET_METADATA_TOO_LARGE in `results`."""
        now_ms = self.clock.time_ms()
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, request in offsets.items():
            metadata = request.metadata or ""
            if len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = OffsetAndMetadata(request.offset, request.leader_epoch, metadata, now_ms)
        return accepted

    # -- TxnOffsetCommit ---------------------------------------------------------------------------------
    def handle_txn_commit_offsets(
        self,
        group_id: str,
        producer: TxnProducer,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, CommitRequest],
    ) -> dict[TopicPartition, ErrorCode]:
        """Kafka's handleTxnCommitOffsets: written now as the producer's transactional batch, committed by
        its COMMIT marker. Members are checked only when the request names one (KIP-447)."""
        error = self.status.validate(group_id)
        if error is not ErrorCode.NONE:
            return {tp: error for tp in offsets}
        group = self.manager.get_group(group_id) or self.manager.add_group(
            GroupMetadata(group_id, state_timestamp_ms=self.clock.time_ms()))
        if group.is_(GroupState.DEAD):
            return {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in offsets}
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None and (generation_id >= 0 or member_id):
            error = self.consumer.validate_offset_commit(
                consumer_group, member_id, generation_id, 9, transactional=True)
            if error is not ErrorCode.NONE:
                error = ErrorCode.ILLEGAL_GENERATION if error is ErrorCode.STALE_MEMBER_EPOCH else error
                return {tp: error for tp in offsets}
        elif generation_id >= 0 or member_id or group_instance_id is not None:
            if group.is_static_member_fenced(member_id, group_instance_id):
                return {tp: ErrorCode.FENCED_INSTANCE_ID for tp in offsets}
            if member_id and not group.has(member_id):
                return {tp: ErrorCode.UNKNOWN_MEMBER_ID for tp in offsets}
            if generation_id != group.generation_id:
                return {tp: ErrorCode.ILLEGAL_GENERATION for tp in offsets}
        results: dict[TopicPartition, ErrorCode] = {}
        accepted = self._accept(offsets, results)
        store_error = self.manager.store_offsets(group, accepted, producer)
        for tp in accepted:
            results[tp] = store_error
        return {tp: results[tp] for tp in offsets}

    def complete_txn_offsets(self, producer_id: int, partition: int, commit: bool) -> None:
        """A transaction marker was written to `__consumer_offsets` partition `partition`."""
        self.manager.complete_txn_offsets(producer_id, partition, commit)

    def unstable_partitions(self, group_id: str, partitions: Iterable[TopicPartition]) -> set[TopicPartition]:
        """Partitions with a transactional commit still pending (OffsetFetch require_stable answers
        UNSTABLE_OFFSET_COMMIT for them)."""
        pending = self.manager.pending_txn_offsets
        return {tp for tp in partitions if pending.has_pending(group_id, tp)}

    @staticmethod
    def _validate_commit(
        group: GroupMetadata, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        if generation_id < 0 and group.is_(GroupState.EMPTY):  # a simple (non-member) commit
            return ErrorCode.NONE
        error = group.member_error(member_id, group_instance_id, generation_id)
        if error is ErrorCode.NONE and group.is_(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return error

    # -- OffsetFetch -------------------------------------------------------------------------------------
    def handle_fetch_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition] | None, member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Committed offsets (None = nothing committed); `partitions=None` means all of the group's. A consumer
        group checks `member_id`/`member_epoch` (OffsetFetch v9+)."""
        error = self.status.validate(group_id, allow_empty_id=True)
        if error is not ErrorCode.NONE:
            return error, {}
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            error = self.consumer.validate_offset_fetch(consumer_group, member_id, member_epoch)
            if error is not ErrorCode.NONE:
                return error, {}
        group = self.manager.get_group(group_id)
        stored = {} if group is None or group.is_(GroupState.DEAD) else group.offsets
        if partitions is None:
            return ErrorCode.NONE, dict(stored)
        return ErrorCode.NONE, {tp: stored.get(tp) for tp in partitions}

    # -- OffsetDelete --------------------------------------------------------------------------------------
    def handle_delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        error = self.status.validate(group_id)
        if error is not ErrorCode.NONE:
            return error, {}
        group = self.manager.get_group(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        results: dict[TopicPartition, ErrorCode] = {}
        deletable: list[TopicPartition] = []
        if group.is_(GroupState.EMPTY):
            deletable = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            for tp in partitions:
                if group.is_subscribed_to(tp[0]):
                    results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    deletable.append(tp)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        store_error = self.manager.delete_offsets(group, deletable)
        for tp in deletable:
            results[tp] = store_error
        return ErrorCode.NONE, {tp: results[tp] for tp in partitions}

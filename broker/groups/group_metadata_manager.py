"""`GroupMetadataManager`: the group cache and its persistence in `__consumer_offsets`.

Owns every `GroupMetadata` by id, writes group metadata and offset commits (and their tombstones) to the
group's partition of `__consumer_offsets`, rebuilds the cache from the topic on startup, and expires
offsets past `offsets.retention.minutes` (KIP-211 rules). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.consumer_group import ConsumerGroup
from minikafka.broker.groups.consumer_group_records import replay as replay_consumer_group_record
from minikafka.broker.groups.coordinator_partitions import CoordinatorPartitions
from minikafka.broker.groups.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from minikafka.broker.groups.group_metadata import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
)
from minikafka.broker.groups.offsets_topic import OFFSETS_TOPIC, KeyValue, OffsetsTopic, TxnProducer, iter_log
from minikafka.broker.groups.pending_txn_offsets import PendingTxnOffsets
from minikafka.broker.groups.share_group import ShareGroup
from minikafka.broker.groups.share_group_records import replay as replay_share_group_record
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import CONTROL_TYPE_COMMIT, parse_control_record_type
from minikafka.storage.clock import Clock

log = logging.getLogger(__name__)

class GroupMetadataManager(CoordinatorPartitions):
    """Group cache + `__consumer_offsets` reads and writes (partitioning, appends and the load loop are
    `CoordinatorPartitions`')."""

    topic_name = OFFSETS_TOPIC
    key_name = "group"
    too_large_errors = frozenset(
        {ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE}
    )
    too_large_error = ErrorCode.INVALID_COMMIT_OFFSET_SIZE

    def __init__(self, config: GroupConfig, topic: OffsetsTopic, clock: Clock) -> None:
        super().__init__(topic, clock, config.offsets_topic_num_partitions, config.offsets_topic_segment_bytes)
        self.config = config
        self.groups: dict[str, GroupMetadata] = {}
        #: KIP-848 consumer groups (their committed offsets stay in `groups`, in a shell without members).
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        #: KIP-932 share groups, served by the ShareCoordinator; their records are replayed here on load.
        self.share_groups: dict[str, ShareGroup] = {}
        self.pending_txn_offsets = PendingTxnOffsets()

    # -- cache -------------------------------------------------------------------------------------------
    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    def put_group(self, group: GroupMetadata) -> None:
        """Cache `group` in place of the classic group of its id (a consumer group downgraded to a classic one)."""
        self.groups[group.group_id] = group

    def is_classic_or_consumer_group(self, group_id: str) -> bool:
        """A classic group (or a consumer group's offsets shell) or a KIP-848 consumer group has this id."""
        return group_id in self.consumer_groups or group_id in self.groups

    def append_records(self, group_id: str, records: list[KeyValue]) -> ErrorCode:
        """Append a group's records (consumer or share group records, in Kafka's layouts) to its
        `__consumer_offsets` partition as one batch; the coordinator's error code on failure. The caller replays
        them into its cache only after NONE (Kafka's coordinators return records, then replay them)."""
        return self._append(group_id, records) if records else ErrorCode.NONE

    # -- writes ------------------------------------------------------------------------------------------
    def store_group(self, group: GroupMetadata, assignments: Mapping[str, bytes]) -> ErrorCode:
        """Write the group's metadata with the given assignments (Kafka's storeGroup)."""
        return self._append(group.group_id, [self.group_metadata_record(group, assignments)])

    @staticmethod
    def group_metadata_record(group: GroupMetadata, assignments: Mapping[str, bytes]) -> KeyValue:
        """The GroupMetadata record of a classic group with these member assignments."""
        members = tuple(
            MemberMetadataValue(
                member.member_id,
                member.group_instance_id,
                member.client_id,
                member.client_host,
                member.rebalance_timeout_ms,
                member.session_timeout_ms,
                member.metadata(group.protocol_name) if group.protocol_name else b"",
                assignments.get(member.member_id, b""),
            )
            for member in group.members.values()
        )
        value = GroupMetadataValue(
            group.protocol_type or "",
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            group.state_timestamp_ms,
            members,
        )
        return encode_group_metadata_key(GroupMetadataKey(group.group_id)), encode_group_metadata_value(value)

    def store_offsets(
        self,
        group: GroupMetadata,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata],
        producer: TxnProducer | None = None,
    ) -> ErrorCode:
        """Write offset commits; a transactional one (with `producer`) stays pending until its marker."""
        if not offsets:
            return ErrorCode.NONE
        records: list[KeyValue] = [
            (
                encode_offset_commit_key(OffsetCommitKey(group.group_id, topic, partition)),
                encode_offset_commit_value(
                    OffsetCommitValue(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms)
                ),
            )
            for (topic, partition), value in offsets.items()
        ]
        error = self._append(group.group_id, records, producer)
        if error is ErrorCode.NONE:
            if producer is None:
                group.offsets.update(offsets)
            else:
                self.pending_txn_offsets.add(producer.producer_id, group.group_id, offsets)
        return error

    def complete_txn_offsets(self, producer_id: int, partition: int, commit: bool) -> None:
        """The producer's marker reached `__consumer_offsets` partition `partition`: its pending offsets of
        the groups there become committed (COMMIT) or are dropped (ABORT)."""
        taken = self.pending_txn_offsets.take(producer_id, lambda group_id: self.partition_for(group_id) == partition)
        if not commit:
            return
        for group_id, offsets in taken.items():
            group = self.groups.get(group_id)
            if group is None:
                group = self.add_group(GroupMetadata(group_id, state_timestamp_ms=self.clock.time_ms()))
            group.offsets.update(offsets)

    def delete_offsets(self, group: GroupMetadata, partitions: Iterable[tuple[str, int]]) -> ErrorCode:
        """Tombstone the given committed offsets (those that exist) and drop them from the cache."""
        present = [tp for tp in partitions if tp in group.offsets]
        if not present:
            return ErrorCode.NONE
        records: list[KeyValue] = [
            (encode_offset_commit_key(OffsetCommitKey(group.group_id, topic, partition)), None)
            for topic, partition in present
        ]
        error = self._append(group.group_id, records)
        if error is ErrorCode.NONE:
            for tp in present:
                del group.offsets[tp]
        return error

    def delete_group(self, group: GroupMetadata) -> ErrorCode:
        """Tombstone every offset and the group metadata; the group becomes Dead and leaves the cache."""
        records: list[KeyValue] = [
            (encode_offset_commit_key(OffsetCommitKey(group.group_id, topic, partition)), None)
            for topic, partition in group.offsets
        ]
        records.append((encode_group_metadata_key(GroupMetadataKey(group.group_id)), None))
        error = self._append(group.group_id, records)
        if error is ErrorCode.NONE:
            group.offsets.clear()
            group.transition_to(GroupState.DEAD, self.clock.time_ms())
            self.groups.pop(group.group_id, None)
        return error

    # -- retention ---------------------------------------------------------------------------------------
    def expired_offsets(self, group: GroupMetadata, now_ms: int) -> list[tuple[str, int]]:
        """KIP-211: a consumer group's offsets expire `retention` after it became Empty (never while a
        member subscribes to the topic); a simple group's, `retention` after their commit."""
        retention_ms = self.config.offsets_retention_ms
        consumer_group = self.consumer_groups.get(group.group_id)
        if consumer_group is not None and consumer_group.members:
            return []  # a consumer group's offsets start expiring once it has no members

        def expired(value: OffsetAndMetadata, base_ms: int) -> bool:
            if value.expire_timestamp_ms >= 0:
                return now_ms >= value.expire_timestamp_ms
            return now_ms >= base_ms + retention_ms

        if group.protocol_type is None or group.protocol_type == "":
            if not group.is_(GroupState.EMPTY):
                return []
            return [tp for tp, value in group.offsets.items() if expired(value, value.commit_timestamp_ms)]
        if group.is_(GroupState.EMPTY):
            base = group.state_timestamp_ms if group.state_timestamp_ms >= 0 else now_ms
            return [tp for tp, value in group.offsets.items() if expired(value, max(base, value.commit_timestamp_ms))]
        if group.is_(GroupState.STABLE) and group.protocol_type == "consumer":
            return [
                tp
                for tp, value in group.offsets.items()
                if not group.is_subscribed_to(tp[0]) and expired(value, value.commit_timestamp_ms)
            ]
        return []

    def cleanup_expired_offsets(self) -> int:
        """Tombstone expired offsets; an Empty group left without offsets is deleted. Returns the count."""
        now_ms = self.clock.time_ms()
        removed = 0
        for group in list(self.groups.values()):
            expired = self.expired_offsets(group, now_ms)
            if expired and self.delete_offsets(group, expired) is ErrorCode.NONE:
                removed += len(expired)
            if group.is_(GroupState.EMPTY) and not group.offsets and not group.members:
                self.delete_group(group)
        return removed

    # -- loading -----------------------------------------------------------------------------------------
    def load_partition(self, partition: int) -> Iterator[None]:
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        metadata: dict[str, GroupMetadataValue | None] = {}
        #: producer id -> group -> offsets of its transaction, until the marker says commit or abort.
        pending: dict[int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        for batch, records in iter_log(self.topic, partition, self.config.offsets_load_buffer_size):
            yield
            if batch.is_control:
                txn_offsets = pending.pop(batch.producer_id, {})
                if records and parse_control_record_type(records[0].key) == CONTROL_TYPE_COMMIT:
                    for group_id, group_offsets in txn_offsets.items():
                        offsets.setdefault(group_id, {}).update(group_offsets)
                continue
            for record in records:
                yield
                if record.key is None:
                    continue
                try:
                    key = decode_key(record.key)
                    if isinstance(key, OffsetCommitKey):
                        if batch.is_transactional:
                            target = pending.setdefault(batch.producer_id, {}).setdefault(key.group, {})
                        else:
                            target = offsets.setdefault(key.group, {})
                        if record.value is None:
                            target.pop((key.topic, key.partition), None)
                        else:
                            commit = decode_offset_commit_value(record.value)
                            target[(key.topic, key.partition)] = OffsetAndMetadata(
                                commit.offset,
                                commit.leader_epoch,
                                commit.metadata,
                                commit.commit_timestamp_ms,
                                commit.expire_timestamp_ms,
                            )
                    elif isinstance(key, GroupMetadataKey):
                        value = None if record.value is None else decode_group_metadata_value(record.value)
                        metadata[key.group] = value
                    elif key is None and not replay_consumer_group_record(
                            self.consumer_groups, record.key, record.value):
                        replay_share_group_record(self.share_groups, record.key, record.value)
                except (ValueError, UnicodeDecodeError):
                    log.warning("skipping an undecodable record in __consumer_offsets-%d", partition)
        for producer_id, txn_offsets in pending.items():
            for group_id, group_offsets in txn_offsets.items():
                self.pending_txn_offsets.add(producer_id, group_id, group_offsets)
        for group_id in set(offsets) | set(metadata):
            yield
            value = metadata.get(group_id)
            group_offsets = offsets.get(group_id, {})
            if value is None and not group_offsets:
                self.groups.pop(group_id, None)
                continue
            self.groups[group_id] = self._group_from(group_id, value, group_offsets)

    def _group_from(
        self,
        group_id: str,
        value: GroupMetadataValue | None,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
    ) -> GroupMetadata:
        now_ms = self.clock.time_ms()
        group = GroupMetadata(group_id, state_timestamp_ms=now_ms, offsets=dict(offsets))
        if value is None:
            return group
        group.protocol_type = value.protocol_type or None
        group.generation_id = value.generation
        group.protocol_name = value.protocol
        group.state_timestamp_ms = value.current_state_timestamp_ms if value.current_state_timestamp_ms >= 0 else now_ms
        for member_value in value.members:
            member = MemberMetadata(
                member_id=member_value.member_id,
                group_instance_id=member_value.group_instance_id,
                client_id=member_value.client_id,
                client_host=member_value.client_host,
                rebalance_timeout_ms=member_value.rebalance_timeout_ms,
                session_timeout_ms=member_value.session_timeout_ms,
                protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", member_value.subscription)],
                assignment=member_value.assignment,
            )
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else next(iter(group.members), None)
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group

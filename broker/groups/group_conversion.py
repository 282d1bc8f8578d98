"""`GroupConversion`: Kafka 4's online migration between classic and consumer groups, as
`group.consumer.migration.policy` allows it (`upgrade`, `downgrade`, `bidirectional`, `disabled`).

Upgrade (Kafka's convertToConsumerGroup): a ConsumerGroupHeartbeat joining a non-empty classic group that uses
the "consumer" embedded protocol turns it into a consumer group. Each classic member becomes a member using the
classic protocol, at the classic generation, in the Stable state, keeping its last assignment as current and
target assignment; the classic group's metadata is tombstoned. The joining member then bumps the group epoch
and the classic members learn of the new assignment through REBALANCE_IN_PROGRESS on their next heartbeat.

Downgrade (Kafka's convertToClassicGroup): when members leave a consumer group and only members using the
classic protocol remain, the group becomes a classic group at the group epoch, each member keeping its target
assignment (serialized with the version of its subscription), and a rebalance starts.

Both write the whole conversion in one append before the cache changes. Built from what it uses: the
`group.consumer.*` config, the classic groups' `group.max.size`, the topic image, the group store, the clock, the
classic groups' `GroupRebalancer` (timers of the classic side), the consumer groups' `MemberTimers` and the
consumer coordinator's session scheduling (a callable). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from minikafka.broker.groups.assignors import TopicInfo
from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    Refused,
)
from minikafka.broker.groups.consumer_group_config import ConsumerGroupConfig
from minikafka.broker.groups.consumer_group_records import (
    RecordKV,
    current_assignment_record,
    group_epoch_record,
    group_tombstones,
    member_metadata_record,
    member_tombstones,
    replay_all,
    target_assignment_epoch_record,
    target_member_record,
)
from minikafka.broker.groups.consumer_group_timers import MemberTimers
from minikafka.broker.groups.consumer_protocol import (
    parse_assignment,
    parse_subscription,
    protocol_version,
    serialize_assignment,
)
from minikafka.broker.groups.coordinator_records import GroupMetadataKey, encode_group_metadata_key
from minikafka.broker.groups.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata, GroupState, MemberMetadata
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_rebalancer import GroupRebalancer
from minikafka.broker.groups.join_sync_messages import JoinGroupResult, SyncGroupResult
from minikafka.broker.groups.topic_image import TopicImage, topic_names_by_id
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock

__all__ = ["GroupConversion"]


class _CustomAssignor(ValueError):
    """A classic assignment carries user data a server-side assignor would lose."""


class GroupConversion:
    """Converts groups between the two types. See the module docstring for what it is built from."""

    def __init__(
        self,
        config: ConsumerGroupConfig,
        classic_config: GroupConfig,
        topics: TopicImage,
        store: GroupMetadataManager,
        clock: Clock,
        rebalancer: GroupRebalancer,
        timers: MemberTimers,
        schedule_session: Callable[[str, ConsumerGroupMember], None],
    ) -> None:
        self.config = config
        self.classic_config = classic_config
        self.topics = topics
        self.store = store
        self.clock = clock
        self.rebalancer = rebalancer
        self.timers = timers
        self.schedule_session = schedule_session

    # -- upgrade -----------------------------------------------------------------------------------------
    def to_consumer_group(self, classic: GroupMetadata, records: list[RecordKV]) -> ConsumerGroup:
        """Kafka's validateOnlineUpgrade + convertToConsumerGroup: append the conversion to `records` and
        return the consumer group they describe (not yet in the cache). Refused with GROUP_ID_NOT_FOUND."""
        group_id = classic.group_id
        prefix = f"Cannot upgrade classic group {group_id} to consumer group because"
        if self.config.migration_policy not in ("upgrade", "bidirectional"):
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} online upgrade is disabled.")
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} the group does not use the consumer embedded "
                          "protocol.")
        if len(classic.members) > self.config.max_size:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} the group size exceeds the consumer group "
                          "maximum size.")
        topics = self.topics.topics()
        try:
            members = [self._member_from(classic, member, topics) for member in classic.members.values()]
        except _CustomAssignor as exc:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} an unsupported custom assignor is in use. "
                          "Please refer to the documentation or switch to a default assignor before "
                          "re-attempting the upgrade.") from exc
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} the embedded consumer protocol is "
                          "malformed.") from exc
        generation = classic.generation_id
        created: list[RecordKV] = [member_metadata_record(group_id, member) for member in members]
        created.append(group_epoch_record(group_id, generation))
        created += [target_member_record(group_id, member.member_id, member.assigned) for member in members]
        created.append(target_assignment_epoch_record(group_id, generation))
        created += [current_assignment_record(group_id, member) for member in members]
        records.append((encode_group_metadata_key(GroupMetadataKey(group_id)), None))
        records.extend(created)
        converted: dict[str, ConsumerGroup] = {}
        replay_all(converted, created)
        return converted[group_id]

    @staticmethod
    def _member_from(classic: GroupMetadata, member: MemberMetadata,
                     topics: Mapping[str, TopicInfo]) -> ConsumerGroupMember:
        """Kafka's ConsumerGroup.fromClassicGroup for one member."""
        assignment = parse_assignment(member.assignment)
        if assignment.user_data:
            raise _CustomAssignor(member.member_id)
        subscription = parse_subscription(member.metadata(classic.protocol_name or ""))
        assigned: dict = {}
        for topic, indexes in assignment.partitions:
            info = topics.get(topic)
            if info is not None:
                assigned[info.topic_id] = assigned.get(info.topic_id, frozenset()) | frozenset(indexes)
        generation = classic.generation_id
        return ConsumerGroupMember(
            member.member_id, instance_id=member.group_instance_id, rack_id=subscription.rack_id,
            client_id=member.client_id, client_host=member.client_host,
            subscribed_topic_names=subscription.topics, rebalance_timeout_ms=member.rebalance_timeout_ms,
            member_epoch=generation, previous_member_epoch=generation, state=MemberState.STABLE, assigned=assigned,
            classic=ClassicMemberMetadata(member.session_timeout_ms, tuple(member.protocols)),
        )

    def upgraded(self, classic: GroupMetadata, group: ConsumerGroup) -> None:
        """After the upgrade was written: classic members waiting in JoinGroup/SyncGroup rejoin, the classic
        entry becomes the Empty shell keeping the committed offsets, each member gets its session timer."""
        self.rebalancer.forget(classic)
        for member in classic.members.values():
            join_callback, member.join_callback = member.join_callback, None
            sync_callback, member.sync_callback = member.sync_callback, None
            if join_callback is not None:
                join_callback(JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            if sync_callback is not None:
                sync_callback(SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        classic.members.clear()
        classic.pending_members.clear()
        classic.static_members.clear()
        classic.state = GroupState.EMPTY
        classic.state_timestamp_ms = self.clock.time_ms()
        classic.protocol_type, classic.protocol_name, classic.generation_id, classic.leader_id = None, None, 0, None
        classic.rebalance_epoch += 1  # a delayed join still scheduled for the classic group does nothing
        for converted in group.members.values():
            self.schedule_session(group.group_id, converted)

    # -- downgrade ---------------------------------------------------------------------------------------
    def can_downgrade(self, group: ConsumerGroup, leaving: Sequence[str]) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMembers."""
        remaining = [member for member_id, member in group.members.items() if member_id not in leaving]
        if not remaining or not all(member.classic is not None for member in remaining):
            return False
        if self.config.migration_policy not in ("downgrade", "bidirectional"):
            return False
        if len(remaining) > self.classic_config.max_size:
            return False
        try:
            for member in remaining:
                assert member.classic is not None
                for _name, metadata in member.classic.supported_protocols:
                    protocol_version(metadata)
        except ValueError:
            return False
        return True

    def downgrade(self, group: ConsumerGroup, leaving: Sequence[str]) -> ErrorCode:
        """Kafka's convertToClassicGroup: the consumer group's records are tombstoned and a classic group at the
        group epoch is written, its members keeping their target assignment; then a rebalance starts."""
        group_id = group.group_id
        records = [record for member_id in group.members for record in member_tombstones(group_id, member_id)]
        records += group_tombstones(group_id)
        consumer_records = list(records)
        classic = GroupMetadata(group_id, state=GroupState.STABLE, state_timestamp_ms=self.clock.time_ms(),
                                protocol_type=CONSUMER_PROTOCOL_TYPE, generation_id=group.group_epoch)
        for member_id, member in group.members.items():
            if member_id in leaving or member.classic is None:
                continue
            classic.add(MemberMetadata(member_id, member.instance_id, member.client_id, member.client_host,
                                       member.rebalance_timeout_ms, member.classic.session_timeout_ms,
                                       CONSUMER_PROTOCOL_TYPE, list(member.classic.supported_protocols)))
        classic.protocol_name = classic.select_protocol()
        names = topic_names_by_id(self.topics)
        for classic_member in classic.members.values():
            target = group.target.get(classic_member.member_id, {})
            by_name = {names[topic_id]: indexes for topic_id, indexes in target.items() if topic_id in names}
            version = protocol_version(classic_member.metadata(classic.protocol_name))
            classic_member.assignment = serialize_assignment(by_name, version)
        records.append(self.store.group_metadata_record(
            classic, {member.member_id: member.assignment for member in classic.members.values()}))
        error = self.store.append_records(group_id, records)
        if error is not ErrorCode.NONE:
            return error
        replay_all(self.store.consumer_groups, consumer_records)
        for member_id in group.members:
            self.timers.cancel_member(group_id, member_id)
        shell = self.store.get_group(group_id)
        if shell is not None:
            classic.offsets = shell.offsets
        self.store.put_group(classic)
        for classic_member in classic.members.values():
            self.rebalancer.schedule_heartbeat(classic, classic_member)
        self.rebalancer.maybe_prepare_rebalance(classic)
        return ErrorCode.NONE

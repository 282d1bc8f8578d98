"""`ClassicProtocolMembers`: JoinGroup, SyncGroup, Heartbeat and LeaveGroup of members that use the classic
protocol inside a KIP-848 consumer group (Kafka 4's classicGroupJoinToConsumerGroup and its siblings).

Such a member is a `ConsumerGroupMember` with `classic` metadata: its JoinGroup subscription (topics, owned
partitions, rack) goes through the same member update, target assignment and reconciliation as a
ConsumerGroupHeartbeat; the JoinGroup answer gives its member epoch as the generation and no leader (the
server-side assignor already assigned), and SyncGroup returns its current assignment in the consumer embedded
protocol. Its heartbeats answer REBALANCE_IN_PROGRESS while it has to rejoin to catch up with the assignment
epoch or to finish a revocation. A member that does not sync, or rejoin, within its rebalance timeout is
fenced. Built from the `group.consumer.*` config, the group store, the topic image, the consumer groups'
`MemberTimers` and `ConsumerMembership` (the member update, sessions and fencing it shares with
ConsumerGroupHeartbeat: the `ConsumerGroupCoordinator`, seen through this narrow protocol). Event-loop thread only;
not thread-safe.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from typing import Protocol

from minikafka.broker.groups.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    OwnedPartitions,
    Refused,
)
from minikafka.broker.groups.consumer_group_config import ConsumerGroupConfig
from minikafka.broker.groups.consumer_group_records import (
    RecordKV,
    member_metadata_record,
    member_tombstones,
    replay_all,
    target_member_record,
)
from minikafka.broker.groups.consumer_group_timers import MemberTimers, TimerKind
from minikafka.broker.groups.consumer_protocol import parse_subscription, protocol_version, serialize_assignment
from minikafka.broker.groups.group_metadata import CONSUMER_PROTOCOL_TYPE
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.join_sync_messages import (
    JoinCallback,
    JoinGroupRequestData,
    JoinGroupResult,
    SyncCallback,
    SyncGroupResult,
)
from minikafka.broker.groups.topic_image import TopicImage, topic_names_by_id
from minikafka.protocol.errors import ErrorCode

__all__ = ["ClassicProtocolMembers", "ConsumerMembership"]


class ConsumerMembership(Protocol):
    """The consumer coordinator's member changes a classic member goes through too."""

    def check_size(self, group: ConsumerGroup, member_id: str) -> None: ...

    def update_member(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                      replaced: str | None, owned: OwnedPartitions, records: list[RecordKV]) -> ConsumerGroupMember: ...

    def schedule_session(self, group_id: str, member: ConsumerGroupMember) -> None: ...

    def fence(self, group: ConsumerGroup, member_id: str) -> ErrorCode: ...

    def fence_members(self, group: ConsumerGroup, member_ids: Sequence[str]) -> ErrorCode: ...


def new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ClassicProtocolMembers:
    """The classic protocol's requests against consumer groups; the groups are the store's, the timers the
    consumer coordinator's `MemberTimers`."""

    def __init__(self, config: ConsumerGroupConfig, store: GroupMetadataManager, topics: TopicImage,
                 timers: MemberTimers, membership: ConsumerMembership) -> None:
        self.config = config
        self.store = store
        self.topics = topics
        self.timers = timers
        self.membership = membership

    # -- JoinGroup ---------------------------------------------------------------------------------------
    def join(self, group: ConsumerGroup, member_id: str, request: JoinGroupRequestData,
             callback: JoinCallback) -> None:
        try:
            callback(self._join(group, member_id, request))
        except Refused as refused:
            callback(JoinGroupResult(refused.error, member_id))

    def _join(self, group: ConsumerGroup, member_id: str, request: JoinGroupRequestData) -> JoinGroupResult:
        group_id = group.group_id
        if self.config.migration_policy == "disabled":
            raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group {group_id} with "
                          "the classic protocol because the group migration is disabled.")
        unknown = member_id == ""
        if unknown:
            member_id = new_member_id()
        self.membership.check_size(group, member_id)
        if not group.supports_classic_protocols(request.protocol_type, [name for name, _ in request.protocols]):
            raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not "
                          "supported.")
        if unknown and request.require_known_member_id and request.group_instance_id is None:
            return JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        records: list[RecordKV] = []
        member, replaced = self._member_for(group, member_id, request.group_instance_id, unknown, records)
        try:
            subscription = parse_subscription(request.protocols[0][1])
        except (ValueError, UnicodeDecodeError) as exc:
            raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "Malformed embedded consumer protocol in "
                          "subscription deserialization.") from exc
        updated = member.replace(
            instance_id=request.group_instance_id if request.group_instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            subscribed_topic_names=subscription.topics, client_id=request.client_id,
            client_host=request.client_host,
            classic=ClassicMemberMetadata(request.session_timeout_ms, tuple(request.protocols)),
        )
        topics = self.topics.topics()
        owned = [(topics[topic].topic_id, indexes) for topic, indexes in subscription.owned_partitions
                 if topic in topics]
        reconciled = self.membership.update_member(group, member, updated, replaced, owned, records)
        error = self.store.append_records(group_id, records)
        if error is not ErrorCode.NONE:
            raise Refused(error, "")
        replay_all(self.store.consumer_groups, records)
        timers = self.timers
        if replaced is not None:
            timers.cancel_member(group_id, replaced)
        timers.cancel(TimerKind.CLASSIC_JOIN, group_id, member_id)
        self.membership.schedule_session(group_id, reconciled)
        timers.schedule(TimerKind.CLASSIC_SYNC, group_id, member_id, request.rebalance_timeout_ms,
                        lambda: self._fence(group_id, member_id))
        assert reconciled.classic is not None
        return JoinGroupResult(ErrorCode.NONE, member_id, reconciled.member_epoch, CONSUMER_PROTOCOL_TYPE,
                               reconciled.classic.protocol_name, "", [])

    def _member_for(self, group: ConsumerGroup, member_id: str, instance_id: str | None, unknown: bool,
                    records: list[RecordKV]) -> tuple[ConsumerGroupMember, str | None]:
        """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic member: a dynamic member
        is created when missing; a static member rejoining without its id replaces the previous one."""
        if instance_id is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id), None
        existing = group.static_member(instance_id)
        if not unknown:
            if existing is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if existing.member_id != member_id:
                raise Refused(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                              f"{instance_id} was fenced by member {existing.member_id}.")
            return existing, None
        if existing is None:
            return ConsumerGroupMember(member_id), None
        replacement = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        records.extend(member_tombstones(group.group_id, existing.member_id))
        records.append(member_metadata_record(group.group_id, replacement))
        records.append(target_member_record(group.group_id, member_id, group.target.get(existing.member_id, {})))
        return replacement, existing.member_id

    # -- SyncGroup ---------------------------------------------------------------------------------------
    def sync(self, group: ConsumerGroup, generation_id: int, member_id: str, protocol_type: str | None,
             protocol_name: str | None, instance_id: str | None, callback: SyncCallback) -> None:
        try:
            member = self._classic_member(group, member_id, instance_id, generation_id)
            assert member.classic is not None
            if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"The protocol type {protocol_type} is not "
                              f"{CONSUMER_PROTOCOL_TYPE}.")
            if protocol_name is not None and protocol_name != member.classic.protocol_name:
                raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"The protocol name {protocol_name} is not "
                              f"{member.classic.protocol_name}.")
            if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
                self._schedule_join_timeout(group.group_id, member)
                raise Refused(ErrorCode.REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group "
                              f"{group.group_id} and member {member_id} should rejoin to catch up.")
        except Refused as refused:
            callback(SyncGroupResult(refused.error))
            return
        self.timers.cancel(TimerKind.CLASSIC_SYNC, group.group_id, member.member_id)
        self.membership.schedule_session(group.group_id, member)
        callback(SyncGroupResult(ErrorCode.NONE, self._assignment(member), protocol_type, protocol_name))

    def _assignment(self, member: ConsumerGroupMember) -> bytes:
        """The member's current assignment in the version of the subscription it joined with."""
        assert member.classic is not None
        names = topic_names_by_id(self.topics)
        partitions = {names[topic_id]: indexes for topic_id, indexes in member.assigned.items() if topic_id in names}
        return serialize_assignment(partitions, protocol_version(member.classic.supported_protocols[0][1]))

    # -- Heartbeat ---------------------------------------------------------------------------------------
    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        try:
            member = self._classic_member(group, member_id, instance_id, generation_id)
        except Refused as refused:
            return refused.error
        self.membership.schedule_session(group.group_id, member)
        if (member.member_epoch < group.assignment_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._schedule_join_timeout(group.group_id, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup --------------------------------------------------------------------------------------
    def leave(self, group: ConsumerGroup, members: Sequence[tuple[str, str | None]]) -> list[ErrorCode]:
        """One error per identity; the members that may leave are fenced together."""
        results: list[ErrorCode] = []
        leaving: list[str] = []
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    member = self._known(group, member_id)
                else:
                    member = self._static(group, member_id, instance_id, allow_no_member_id=True)
                if member.classic is None:
                    raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic "
                                  "protocol.")
            except Refused as refused:
                results.append(refused.error)
                continue
            leaving.append(member.member_id)
            results.append(ErrorCode.NONE)
        if leaving:
            error = self.membership.fence_members(group, leaving)
            if error is not ErrorCode.NONE:
                return [error if code is ErrorCode.NONE else code for code in results]
        return results

    # -- checks and timers -------------------------------------------------------------------------------
    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation_id: int) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember, throwIfMemberDoesNotUseClassicProtocol and
        throwIfGenerationIdUnmatched."""
        member = (self._known(group, member_id) if instance_id is None
                  else self._static(group, member_id, instance_id, allow_no_member_id=False))
        if member.classic is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if generation_id != member.member_epoch:
            raise Refused(ErrorCode.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not equal "
                          f"to the member epoch {member.member_epoch} of member {member_id}.")
        return member

    @staticmethod
    def _known(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                          f"{group.group_id}.")
        return member

    @staticmethod
    def _static(group: ConsumerGroup, member_id: str, instance_id: str,
                allow_no_member_id: bool) -> ConsumerGroupMember:
        member = group.static_member(instance_id)
        if member is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member of "
                          f"group {group.group_id}.")
        if member.member_id != member_id and not (allow_no_member_id and member_id == ""):
            raise Refused(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                          f"was fenced by member {member.member_id}.")
        return member

    def _schedule_join_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        """The member must rejoin within its rebalance timeout (Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent)."""
        member_id = member.member_id
        self.timers.schedule_if_absent(TimerKind.CLASSIC_JOIN, group_id, member_id, member.rebalance_timeout_ms,
                                       lambda: self._fence(group_id, member_id))

    def _fence(self, group_id: str, member_id: str) -> None:
        group = self.store.consumer_groups.get(group_id)
        if group is not None and member_id in group.members:
            self.membership.fence(group, member_id)

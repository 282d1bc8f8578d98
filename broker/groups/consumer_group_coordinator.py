"""`ConsumerGroupCoordinator`: KIP-848 consumer groups next to the classic protocol — ConsumerGroupHeartbeat
(join, reconcile, leave), ConsumerGroupDescribe, member session and revocation timeouts, and the member-epoch
checks of OffsetCommit/OffsetFetch.

Modelled on Apache Kafka 4's GroupMetadataManager.consumerGroupHeartbeat: the request is checked, the
records the change needs are computed (member metadata, partition metadata, group epoch, target assignment,
current member assignment), appended to the group's `__consumer_offsets` partition and only then replayed
into the cache (`consumer_group_records.replay`, the same code that loads them after a restart). Committed
offsets of a consumer group stay in the classic cache (`GroupMetadataManager.groups`, an Empty shell without
members), so OffsetCommit/OffsetFetch, retention and the offsets layout are shared. Members using the classic
protocol inside a consumer group are `ClassicProtocolMembers`'; the online upgrade and downgrade between the
two group types (`group.consumer.migration.policy`) are `GroupConversion`'s. Built from what it uses: its
config, the topic image, the group store, the coordinator's status, the scheduler and clock, the classic side's
config and `GroupRebalancer` (for conversions). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minikafka.broker.groups.assignors import Assignment, MemberSubscription, TopicInfo, assign
from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    FencedMemberEpoch,
    MemberState,
    OwnedPartitions,
    Refused,
    reconcile,
)
from minikafka.broker.groups.consumer_group_classic import ClassicProtocolMembers
from minikafka.broker.groups.consumer_group_config import ConsumerGroupConfig
from minikafka.broker.groups.consumer_group_records import (
    RecordKV,
    current_assignment_record,
    group_epoch_record,
    group_tombstones,
    member_metadata_record,
    member_tombstones,
    partition_metadata_record,
    replay_all,
    target_assignment_epoch_record,
    target_member_record,
)
from minikafka.broker.groups.consumer_group_timers import MemberTimers, TimerKind
from minikafka.broker.groups.coordinator_records import GroupMetadataKey, encode_group_metadata_key
from minikafka.broker.groups.group_conversion import GroupConversion
from minikafka.broker.groups.group_metadata import GroupMetadata
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_rebalancer import GroupRebalancer
from minikafka.broker.groups.group_status import CoordinatorStatus
from minikafka.broker.groups.scheduler import Scheduler
from minikafka.broker.groups.topic_image import TopicImage, topic_names_by_id
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock

__all__ = ["ConsumerGroupCoordinator", "HeartbeatRequestData", "HeartbeatResult", "Refused"]


@dataclass(frozen=True)
class HeartbeatRequestData:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Sequence[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: OwnedPartitions = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1
    #: The topics among the given names the member may DESCRIBE (Kafka resolves a group's regular expressions
    #: with the authorizer and the context of the member whose heartbeat triggered it); None: every topic.
    describable_topics: Callable[[Iterable[str]], set[str]] | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    #: None: not sent (unchanged); otherwise the partitions the member may use now.
    assignment: Assignment | None = None


@dataclass(frozen=True)
class DescribedMember:
    member: ConsumerGroupMember
    target: Assignment


@dataclass(frozen=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ConsumerGroupState.DEAD.value
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list[DescribedMember] = field(default_factory=list)


class ConsumerGroupCoordinator:
    """Owns the consumer groups' timers and the request-side logic; the groups themselves are the
    `GroupMetadataManager`'s `consumer_groups` (rebuilt from the log on load)."""

    def __init__(self, config: ConsumerGroupConfig, topics: TopicImage, store: GroupMetadataManager,
                 status: CoordinatorStatus, scheduler: Scheduler, clock: Clock, classic_config: GroupConfig,
                 rebalancer: GroupRebalancer,
                 group_configs: Callable[[str], Mapping[str, Any]] | None = None) -> None:
        self.config = config
        self.topic_image = topics
        self.manager = store
        self.status = status
        self.timers = MemberTimers(scheduler)
        self.classic = ClassicProtocolMembers(config, store, topics, self.timers, self)
        self.conversion = GroupConversion(config, classic_config, topics, store, clock, rebalancer, self.timers,
                                          self.schedule_session)
        #: group id -> subscribed regex -> the topic names it resolved to (Kafka's ResolvedRegularExpression,
        #: kept in memory: resolved again at every heartbeat of the group's members).
        self.resolved_regexes: dict[str, dict[str, frozenset[str]]] = {}
        #: a group's configs (GROUP config resources) by group id; None = the broker's `group.consumer.*` only
        self.group_configs = group_configs

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's `consumer.session.timeout.ms`, else `group.consumer.session.timeout.ms`."""
        if self.group_configs is None:
            return self.config.session_timeout_ms
        return int(self.group_configs(group_id)["consumer.session.timeout.ms"])

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's `consumer.heartbeat.interval.ms`, else `group.consumer.heartbeat.interval.ms`."""
        if self.group_configs is None:
            return self.config.heartbeat_interval_ms
        return int(self.group_configs(group_id)["consumer.heartbeat.interval.ms"])

    @property
    def groups(self) -> dict[str, ConsumerGroup]:
        return self.manager.consumer_groups

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self.groups

    # -- lifecycle ---------------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        """After loading: every member gets a fresh session (Kafka schedules them on load too)."""
        for group in self.groups.values():
            for member in group.members.values():
                self.schedule_session(group.group_id, member)

    def cancel_all(self) -> None:
        self.timers.cancel_all()

    # -- ConsumerGroupHeartbeat --------------------------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequestData) -> HeartbeatResult:
        try:
            self._validate(request)
            error = self.status.validate(request.group_id)
            if error is not ErrorCode.NONE:
                return HeartbeatResult(error)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request)
            return self._heartbeat(request)
        except Refused as refused:
            return HeartbeatResult(refused.error, str(refused))

    def _validate(self, request: HeartbeatRequestData) -> None:
        def invalid(message: str) -> Refused:
            return Refused(ErrorCode.INVALID_REQUEST, message)

        if not request.group_id:
            raise invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if request.version >= 1 and not request.member_id:
            raise invalid("MemberId can't be empty.")
        if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not request.member_id:
                raise invalid("MemberId can't be empty.")
        elif epoch == JOIN_GROUP_MEMBER_EPOCH:
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.owned is None or len(request.owned) > 0:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if not request.subscribed_topic_names and request.subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise invalid("InstanceId can't be null.")
        else:
            raise invalid("MemberEpoch is invalid.")
        if request.subscribed_topic_regex is not None:
            try:
                re.compile(request.subscribed_topic_regex)
            except re.error as exc:
                raise invalid(f"SubscribedTopicRegex is invalid: {exc}") from exc
        if request.server_assignor is not None and request.server_assignor not in self.config.assignors:
            raise Refused(ErrorCode.UNSUPPORTED_ASSIGNOR,
                           f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
                           f"{', '.join(self.config.assignors)}.")

    def _heartbeat(self, request: HeartbeatRequestData) -> HeartbeatResult:
        group_id = request.group_id
        records: list[RecordKV] = []
        classic = self.manager.get_group(group_id)
        group, upgraded = self._group_for(request, classic, records)
        member_id = request.member_id or str(uuid.uuid4())  # v0: the coordinator names new members
        self.check_size(group, member_id)
        member, replaced = self._member_for(group, member_id, request, records)
        updated = member.replace(
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(tuple(request.subscribed_topic_names) if request.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=(request.subscribed_topic_regex if request.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=request.client_id, client_host=request.client_host, classic=None,
        )
        self._resolve_regexes(group_id, [*(m for mid, m in group.members.items() if mid != member_id), updated],
                              request.describable_topics)
        reconciled = self.update_member(group, member, updated, replaced, request.owned, records)
        error = self.write(group_id, records)
        if error is not ErrorCode.NONE:
            return HeartbeatResult(error)
        if upgraded:
            assert classic is not None
            self.conversion.upgraded(classic, group)
        elif classic is not None and group_id not in self.groups:
            classic.protocol_type, classic.generation_id, classic.protocol_name, classic.leader_id = None, 0, None, None
        replay_all(self.groups, records)
        if replaced is not None:
            self.timers.cancel_member(group_id, replaced)
        self.schedule_session(group_id, reconciled)
        self._maybe_schedule_revocation(group_id, member, reconciled)
        full = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH or (
            request.rebalance_timeout_ms != -1 and request.subscribed_topic_names is not None
            and request.owned is not None)
        changed = dict(reconciled.assigned) != dict(member.assigned)
        return HeartbeatResult(ErrorCode.NONE, None, member_id, reconciled.member_epoch,
                               self.heartbeat_interval_ms(group_id),
                               dict(reconciled.assigned) if full or changed else None)

    def _group_for(self, request: HeartbeatRequestData, classic: GroupMetadata | None,
                   records: list[RecordKV]) -> tuple[ConsumerGroup, bool]:
        """Kafka's getOrMaybeCreateConsumerGroup: (the group, whether it is a classic group being upgraded)."""
        group_id = request.group_id
        group = self.groups.get(group_id)
        if group is not None:
            return group, False
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        if classic is not None and classic.members:
            if not joining:
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            return self.conversion.to_consumer_group(classic, records), True
        if not joining:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if classic is not None and (classic.protocol_type is not None or classic.generation_id > 0):
            # an Empty classic group becomes a consumer group: its classic metadata is tombstoned
            records.append((encode_group_metadata_key(GroupMetadataKey(group_id)), None))
        return ConsumerGroup(group_id), False

    def check_size(self, group: ConsumerGroup, member_id: str) -> None:
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            raise Refused(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity "
                          f"of {self.config.max_size} members.")

    def update_member(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                      replaced: str | None, owned: OwnedPartitions, records: list[RecordKV]) -> ConsumerGroupMember:
        """Kafka's steps 1-3 of a heartbeat or a classic member's JoinGroup: persist the member's metadata, bump
        the group epoch on a subscription change, compute the new target assignment, reconcile the member."""
        group_id = group.group_id
        member_id = updated.member_id
        is_new = member_id not in group.members and replaced is None
        bump = False
        if is_new or updated.metadata_differs(member):
            records.append(member_metadata_record(group_id, updated))
            bump = is_new or not updated.same_subscription(member)
        members = {**group.members, member_id: updated}
        if replaced is not None:
            members.pop(replaced, None)
        group_epoch = group.group_epoch
        metadata = self._subscription_metadata(group_id, members.values())
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group_id, metadata))
            bump = True
        if bump:
            group_epoch += 1
            records.append(group_epoch_record(group_id, group_epoch))
        if group_epoch > group.assignment_epoch:
            targets = self._target_assignment(group, members, metadata, replaced)
            for target_member, target in targets.items():
                if target != group.target.get(target_member):
                    records.append(target_member_record(group_id, target_member, target))
            records.append(target_assignment_epoch_record(group_id, group_epoch))
            target_epoch, target = group_epoch, targets.get(member_id, {})
        else:
            target_epoch = group.assignment_epoch
            target = group.target.get(member_id) or (group.target.get(replaced, {}) if replaced else {})
        try:
            reconciled = reconcile(updated, target_epoch, target, group.current_partition_epoch, owned)
        except FencedMemberEpoch as exc:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from exc
        if is_new or replaced is not None or reconciled.assignment_differs(member):
            records.append(current_assignment_record(group_id, reconciled))
        return reconciled

    def _member_for(self, group: ConsumerGroup, member_id: str, request: HeartbeatRequestData,
                    records: list[RecordKV]) -> tuple[ConsumerGroupMember, str | None]:
        """(the member as it is now, the member id of a static member it replaces)."""
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        if request.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group.")
                return ConsumerGroupMember(member_id), None
            if not joining:
                self._check_epoch(member, request)
            return member, None
        existing = group.static_member(request.instance_id)
        if joining:
            if existing is None or existing.member_id == member_id:
                return existing or group.members.get(member_id) or ConsumerGroupMember(member_id), None
            # Kafka replaces a static member using the classic protocol even if it has not left.
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and existing.classic is None:
                raise Refused(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {existing.member_id} with instance "
                               f"id {request.instance_id} cannot be replaced because it has not left the group.")
            replacement = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            records.extend(member_tombstones(group.group_id, existing.member_id))
            records.append(member_metadata_record(group.group_id, replacement))
            records.append(target_member_record(group.group_id, member_id, group.target.get(existing.member_id, {})))
            return replacement, existing.member_id
        if existing is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                           f"{request.instance_id} was fenced by member {existing.member_id}.")
        self._check_epoch(existing, request)
        return existing, None

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, request: HeartbeatRequestData) -> None:
        """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: an older epoch is accepted only when it is the
        previous one and the member owns nothing outside its assignment (it lost a response)."""
        epoch = request.member_epoch
        if epoch > member.member_epoch:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                           f"({epoch}) than the one known by the group coordinator ({member.member_epoch}).")
        if epoch < member.member_epoch:
            owned = request.owned
            subset = owned is not None and all(
                index in member.assigned.get(topic_id, ()) for topic_id, indexes in owned for index in indexes)
            if epoch != member.previous_member_epoch or not subset:
                raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member "
                               f"epoch ({epoch}) than the one known by the group coordinator "
                               f"({member.member_epoch}).")

    def _resolve_regexes(self, group_id: str, members: Iterable[ConsumerGroupMember],
                         describable: Callable[[Iterable[str]], set[str]] | None) -> None:
        """Kafka's TopicRegexResolver: every regex of the group matched in full against every topic of the
        cluster (internal ones included), then filtered to the topics the heartbeating member may DESCRIBE."""
        regexes = {member.subscribed_topic_regex for member in members if member.subscribed_topic_regex}
        if not regexes:
            self.resolved_regexes.pop(group_id, None)
            return
        names = list(self.topic_image.topics())
        resolved = {regex: {name for name in names if re.fullmatch(regex, name)} for regex in regexes}
        if describable is not None:
            allowed = describable({name for matched in resolved.values() for name in matched})
            resolved = {regex: matched & allowed for regex, matched in resolved.items()}
        self.resolved_regexes[group_id] = {regex: frozenset(matched) for regex, matched in resolved.items()}

    def _subscribed(self, group_id: str, member: ConsumerGroupMember, topics: Mapping[str, TopicInfo]) -> set[str]:
        names = {name for name in member.subscribed_topic_names if name in topics}
        regex = member.subscribed_topic_regex
        if regex:
            resolved = self.resolved_regexes.get(group_id, {}).get(regex)
            if resolved is None:
                # Not resolved since this broker loaded the group: keep the topics the regex was resolved to
                # before (the persisted subscription metadata) until a member's heartbeat resolves it again.
                group = self.groups.get(group_id)
                known = group.subscription_metadata if group is not None else {}
                resolved = frozenset(name for name in known if re.fullmatch(regex, name))
            names |= {name for name in resolved if name in topics}
        return names

    def _subscription_metadata(self, group_id: str, members: Iterable[ConsumerGroupMember]) -> dict[str, TopicInfo]:
        topics = self.topic_image.topics()
        names: set[str] = set()
        for member in members:
            names |= self._subscribed(group_id, member, topics)
        return {name: topics[name] for name in sorted(names)}

    def preferred_assignor(self, members: Iterable[ConsumerGroupMember]) -> str:
        """Kafka: the server assignor most members ask for, else the first of `group.consumer.assignors`."""
        counts = Counter(m.server_assignor for m in members if m.server_assignor)
        return counts.most_common(1)[0][0] if counts else self.config.assignors[0]

    def _target_assignment(self, group: ConsumerGroup, members: Mapping[str, ConsumerGroupMember],
                           metadata: Mapping[str, TopicInfo], replaced: str | None) -> dict[str, Assignment]:
        by_id = {info.topic_id: info for info in metadata.values()}
        subscriptions = {}
        for member_id, member in members.items():
            current = group.target.get(replaced if replaced and member_id not in group.target else member_id, {})
            subscriptions[member_id] = MemberSubscription(
                frozenset(metadata[name].topic_id for name in self._subscribed(group.group_id, member, metadata)),
                current)
        return assign(self.preferred_assignor(members.values()), subscriptions, by_id)

    def write(self, group_id: str, records: list[RecordKV]) -> ErrorCode:
        return self.manager.append_records(group_id, records)

    # -- leaving and fencing -----------------------------------------------------------------------------
    def _leave(self, request: HeartbeatRequestData) -> HeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of the group.")
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if member.member_id != request.member_id:
                raise Refused(ErrorCode.FENCED_INSTANCE_ID, f"Static member {request.member_id} with instance id "
                               f"{request.instance_id} was fenced by member {member.member_id}.")
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # The static member will come back: it keeps its partitions until its session expires.
            left = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
            records = [current_assignment_record(group.group_id, left)]
            error = self.write(group.group_id, records)
            if error is not ErrorCode.NONE:
                return HeartbeatResult(error)
            replay_all(self.groups, records)
            self.timers.cancel(TimerKind.REVOCATION, group.group_id, member.member_id)
        else:
            error = self.fence(group, member.member_id)
            if error is not ErrorCode.NONE:
                return HeartbeatResult(error)
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, request.member_epoch, 0, None)

    def fence(self, group: ConsumerGroup, member_id: str) -> ErrorCode:
        """Remove a member (left, session expired, revocation timed out); the group epoch is bumped."""
        return self.fence_members(group, [member_id])

    def fence_members(self, group: ConsumerGroup, member_ids: Sequence[str]) -> ErrorCode:
        """Kafka's consumerGroupFenceMembers: remove members and bump the group epoch — or, when only members
        using the classic protocol would remain, downgrade the group to a classic group."""
        if self.conversion.can_downgrade(group, member_ids):
            return self.conversion.downgrade(group, member_ids)
        records = [record for member_id in member_ids for record in member_tombstones(group.group_id, member_id)]
        remaining = [member for mid, member in group.members.items() if mid not in member_ids]
        metadata = self._subscription_metadata(group.group_id, remaining)
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group.group_id, metadata))
        records.append(group_epoch_record(group.group_id, group.group_epoch + 1))
        error = self.write(group.group_id, records)
        if error is ErrorCode.NONE:
            replay_all(self.groups, records)
            for member_id in member_ids:
                self.timers.cancel_member(group.group_id, member_id)
        return error

    def delete(self, group: ConsumerGroup) -> ErrorCode:
        """DeleteGroups / expiry of an Empty consumer group: its records are tombstoned."""
        self.resolved_regexes.pop(group.group_id, None)
        records = group_tombstones(group.group_id)
        error = self.write(group.group_id, records)
        if error is ErrorCode.NONE:
            replay_all(self.groups, records)
        return error

    # -- timers ------------------------------------------------------------------------------------------
    def schedule_session(self, group_id: str, member: ConsumerGroupMember) -> None:
        """(Re)start the member's session: a classic member's own session timeout, else the group's."""
        member_id = member.member_id

        def expire() -> None:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                self.fence(group, member_id)

        timeout_ms = (member.classic.session_timeout_ms if member.classic is not None
                      else self.session_timeout_ms(group_id))
        self.timers.schedule(TimerKind.SESSION, group_id, member_id, timeout_ms, expire)

    def _maybe_schedule_revocation(self, group_id: str, before: ConsumerGroupMember,
                                   after: ConsumerGroupMember) -> None:
        if after.state is not MemberState.UNREVOKED_PARTITIONS:
            self.timers.cancel(TimerKind.REVOCATION, group_id, after.member_id)
            return
        if (self.timers.pending(TimerKind.REVOCATION, group_id, after.member_id)
                and before.state is MemberState.UNREVOKED_PARTITIONS):
            return
        epoch = after.member_epoch

        def expire() -> None:
            group = self.groups.get(group_id)
            member = None if group is None else group.members.get(after.member_id)
            if (group is not None and member is not None and member.state is MemberState.UNREVOKED_PARTITIONS
                    and member.member_epoch == epoch):
                self.fence(group, after.member_id)

        timeout_ms = after.rebalance_timeout_ms if after.rebalance_timeout_ms > 0 else self.session_timeout_ms(group_id)
        self.timers.schedule(TimerKind.REVOCATION, group_id, after.member_id, timeout_ms, expire)

    # -- ConsumerGroupDescribe ---------------------------------------------------------------------------
    def describe(self, group_id: str) -> DescribedGroup:
        error = self.status.validate(group_id, allow_empty_id=True)
        if error is not ErrorCode.NONE:
            return DescribedGroup(group_id, error)
        group = self.groups.get(group_id)
        if group is None:
            classic = self.manager.get_group(group_id)
            message = (f"Group {group_id} is not a consumer group." if classic is not None
                       else f"Group {group_id} not found.")
            return DescribedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)
        return DescribedGroup(
            group_id, ErrorCode.NONE, None, group.state().value, group.group_epoch, group.assignment_epoch,
            self.preferred_assignor(group.members.values()),
            [DescribedMember(member, group.target.get(member.member_id, {})) for member in group.members.values()],
        )

    def topic_names(self) -> dict[uuid.UUID, str]:
        return topic_names_by_id(self.topic_image)

    # -- offsets -----------------------------------------------------------------------------------------
    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, version: int,
                               transactional: bool = False) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetCommit; a member using the classic protocol sends its
        generation, which must be its member epoch (ILLEGAL_GENERATION otherwise)."""
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE  # an admin / simple commit while nobody is a member
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is None and not transactional and version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        return self._member_epoch_error(member, member_epoch)

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetFetch: no member id and a negative epoch is an admin's fetch."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return self._member_epoch_error(member, member_epoch)

    @staticmethod
    def _member_epoch_error(member: ConsumerGroupMember, epoch: int) -> ErrorCode:
        if epoch == member.member_epoch:
            return ErrorCode.NONE
        return ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH

    def listed(self) -> list[tuple[str, str]]:
        """(group id, state) of every consumer group."""
        return [(group_id, group.state().value) for group_id, group in self.groups.items()]


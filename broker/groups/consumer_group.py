"""`ConsumerGroup` and `ConsumerGroupMember`: the in-memory state of a KIP-848 consumer group, and `reconcile`,
Kafka's CurrentAssignmentBuilder (how a member moves from its current assignment towards its target).

A group has a group epoch (bumped when a subscription or the subscribed topics change), a target assignment
with its assignment epoch, and members, each with its member epoch, reconciliation state, assigned partitions
and partitions pending revocation. A partition is owned (its "partition epoch" is the owner's member epoch)
while it is assigned to or pending revocation from a member; `reconcile` gives a partition to a new owner only
once it is free, so a partition is never owned twice. State changes only through `consumer_group_records`'
replay (the records Kafka writes to `__consumer_offsets`). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from minikafka.broker.groups.assignors import Assignment, TopicInfo
from minikafka.protocol.errors import ErrorCode

__all__ = [
    "ClassicMemberMetadata",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "FencedMemberEpoch",
    "MemberState",
    "Refused",
    "reconcile",
]

#: Member epochs with a meaning in ConsumerGroupHeartbeat.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

#: (topic id, partitions) as a heartbeat's owned partitions carry them; None = unchanged since the last one.
OwnedPartitions = Sequence[tuple[uuid.UUID, Sequence[int]]] | None


class MemberState(enum.IntEnum):
    """Kafka's MemberState (the int8 of ConsumerGroupCurrentMemberAssignmentValue)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    """Kafka's ConsumerGroup.ConsumerGroupState, by the names ListGroups and ConsumerGroupDescribe show."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class FencedMemberEpoch(Exception):
    """The member must give up all its partitions and rejoin (FENCED_MEMBER_EPOCH)."""


class Refused(Exception):
    """A group request refused with a Kafka error code and message (Kafka's ApiException)."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol inside a consumer group joined with (Kafka's
    ConsumerGroupMemberMetadataValue.ClassicMemberMetadata): its session timeout and its protocols, in the
    JoinGroup's order (name, ConsumerProtocolSubscription)."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol a JoinGroup answer names: the member's first."""
        return self.supported_protocols[0][0]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member: its subscription (ConsumerGroupMemberMetadata) and its current assignment
    (ConsumerGroupCurrentMemberAssignment). Immutable: an update is a new value."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    pending_revocation: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    #: Set while the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat) in the consumer group.
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def replace(self, **changes: object) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        return self.replace(member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def same_subscription(self, other: ConsumerGroupMember) -> bool:
        return (self.subscribed_topic_names, self.subscribed_topic_regex, self.server_assignor, self.rack_id) == (
            other.subscribed_topic_names, other.subscribed_topic_regex, other.server_assignor, other.rack_id)

    def metadata_differs(self, other: ConsumerGroupMember) -> bool:
        """True when the member metadata record would change."""
        return (self.instance_id, self.client_id, self.client_host, self.rebalance_timeout_ms, self.classic) != (
            other.instance_id, other.client_id, other.client_host, other.rebalance_timeout_ms, other.classic
        ) or not self.same_subscription(other)

    def assignment_differs(self, other: ConsumerGroupMember) -> bool:
        """True when the current member assignment record would change."""
        return (self.member_epoch, self.previous_member_epoch, self.state, dict(self.assigned),
                dict(self.pending_revocation)) != (other.member_epoch, other.previous_member_epoch, other.state,
                                                   dict(other.assigned), dict(other.pending_revocation))


@dataclass
class ConsumerGroup:
    """A consumer group's epochs, members, target assignment and subscribed-topic metadata."""

    group_id: str
    #: Kafka 4.x starts a new group at epoch 1, so its first member gets epoch 2 (ModernGroup).
    group_epoch: int = 1
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    #: instance id -> member id of the static members.
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    #: topic name -> its id and partition count when the group epoch was last bumped (PartitionMetadata).
    subscription_metadata: dict[str, TopicInfo] = field(default_factory=dict)
    #: (topic id, partition) -> epoch of the member owning it (assigned or pending revocation).
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)

    # -- state -------------------------------------------------------------------------------------------
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def subscribed_topic_names(self) -> set[str]:
        return {name for member in self.members.values() for name in member.subscribed_topic_names}

    # -- classic members ---------------------------------------------------------------------------------
    def classic_members(self) -> list[ConsumerGroupMember]:
        return [member for member in self.members.values() if member.classic is not None]

    def supports_classic_protocols(self, protocol_type: str | None, names: Sequence[str]) -> bool:
        """Kafka's supportsClassicProtocols: a "consumer" protocol every classic member supports too."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        supported = [{name for name, _ in member.classic.supported_protocols}
                     for member in self.members.values() if member.classic is not None]
        return any(all(name in protocols for protocols in supported) for name in names)

    def all_remaining_use_classic(self, leaving: Sequence[str]) -> bool:
        """Kafka's allMembersUseClassicProtocolExcept: every member but `leaving` uses the classic protocol."""
        return all(member.classic is not None for member_id, member in self.members.items()
                   if member_id not in leaving)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """The member's target holds a partition another member still owns."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, indexes in self.target.get(member.member_id, {}).items():
            assigned = member.assigned.get(topic_id, frozenset())
            if any(index not in assigned and self.current_partition_epoch(topic_id, index) != -1
                   for index in indexes):
                return True
        return False

    # -- updates (replay only) ---------------------------------------------------------------------------
    def put_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, indexes in partitions.items():
                for index in indexes:
                    self.partition_epochs[(topic_id, index)] = member.member_epoch

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def _release(self, member: ConsumerGroupMember) -> None:
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, indexes in partitions.items():
                for index in indexes:
                    if self.partition_epochs.get((topic_id, index)) == member.member_epoch:
                        del self.partition_epochs[(topic_id, index)]


def _owns_any(owned: OwnedPartitions, partitions: Mapping[uuid.UUID, frozenset[int]]) -> bool:
    """Whether the member still owns one of `partitions` (None = it did not say: assume it does)."""
    if owned is None:
        return True
    return any(index in partitions.get(topic_id, ()) for topic_id, indexes in owned for index in indexes)


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: OwnedPartitions,
) -> ConsumerGroupMember:
    """Kafka's CurrentAssignmentBuilder.build: the member's next current assignment."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:
        raise FencedMemberEpoch("The consumer group member is in a unknown state.")
    return _next_assignment(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _next_assignment(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: OwnedPartitions,
) -> ConsumerGroupMember:
    unreleased = False
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    to_assign: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        pending = wanted - kept
        free = frozenset(index for index in pending if partition_epoch(topic_id, index) == -1)
        unreleased = unreleased or free != pending
        if kept:
            assigned[topic_id] = kept
        if current - kept:
            revoking[topic_id] = current - kept
        if free:
            to_assign[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        return member.replace(state=MemberState.UNREVOKED_PARTITIONS, member_epoch=member_epoch,
                              previous_member_epoch=member.member_epoch, assigned=assigned,
                              pending_revocation=revoking)
    for topic_id, indexes in to_assign.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | indexes
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.replace(state=state, member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                          assigned=assigned, pending_revocation={})

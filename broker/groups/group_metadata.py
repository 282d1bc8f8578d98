"""`GroupMetadata`: one classic group's members, generation, protocol and committed offsets.

Kafka's GroupMetadata: the state machine's legal transitions, protocol selection by member votes, the
pending (MEMBER_ID_REQUIRED) members and static-member bookkeeping. The response callbacks of members
waiting for a JoinGroup or SyncGroup answer are kept here too. Not thread-safe: the coordinator owns it
on the event-loop thread.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minikafka.protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


@dataclass(slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    is_new: bool = False
    join_callback: Callable[[Any], None] | None = None
    sync_callback: Callable[[Any], None] | None = None
    heartbeat_deadline_ms: int = 0

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise KeyError("member does not support any candidate protocol")


@dataclass
class GroupMetadata:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    #: members given the new generation that have not sent SyncGroup yet (Kafka's pendingSyncMembers)
    pending_sync_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    new_member_added: bool = False
    #: Bumped whenever a rebalance is scheduled, so a stale delayed-join timer can tell it is obsolete.
    rebalance_epoch: int = 0

    # -- state -------------------------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return GroupState.PREPARING_REBALANCE in _VALID_TRANSITIONS_FROM.get(self.state, ())

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(f"group {self.group_id}: illegal transition {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp_ms = now_ms

    # -- members -----------------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        instance_id = None if member is None else member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """A static member rejoined with a new member id: keep its metadata under the new id."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A known instance id registered under another member id."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def member_error(self, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        """Kafka's checks, in Kafka's order, that a request comes from a current member of this generation."""
        if self.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.is_static_member_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not self.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(member.is_awaiting_join for member in self.members.values())

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [member for member in self.members.values() if not member.is_awaiting_join]

    # -- protocols ---------------------------------------------------------------------------------------
    def _candidate_protocols(self) -> set[str]:
        counts: dict[str, int] = {}
        for member in self.members.values():
            for name in member.protocol_names():
                counts[name] = counts.get(name, 0) + 1
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        candidates = self._candidate_protocols()
        return protocol_type == self.protocol_type and any(name in candidates for name, _ in protocols)

    def select_protocol(self) -> str:
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Ties go to the protocol voted first, as Scala's maxBy over an insertion-ordered map does.
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), or None when that cannot be told."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics.update(parse_subscription_topics(member.metadata(self.protocol_name)))
            except (KeyError, ValueError):
                return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        topics = self.subscribed_topics()
        return topics is None or topic in topics


_VALID_TRANSITIONS_FROM: dict[GroupState, set[GroupState]] = {}
for _target, _sources in _VALID_PREVIOUS.items():
    for _source in _sources:
        _VALID_TRANSITIONS_FROM.setdefault(_source, set()).add(_target)


def parse_subscription_topics(metadata: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription (any version: they always come first after the version)."""
    if len(metadata) < 6:
        raise ValueError("subscription too short")
    position = 2
    count = int.from_bytes(metadata[position : position + 4], "big", signed=True)
    position += 4
    topics = []
    for _ in range(max(count, 0)):
        length = int.from_bytes(metadata[position : position + 2], "big", signed=True)
        position += 2
        if length < 0 or position + length > len(metadata):
            raise ValueError("bad subscription")
        topics.append(metadata[position : position + length].decode())
        position += length
    return topics

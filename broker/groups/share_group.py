"""`ShareGroup`: the membership and assignment of one share group, as Apache Kafka 4.3.1's group coordinator serves
ShareGroupHeartbeat (KIP-932), without I/O.

A heartbeat with member epoch 0 joins (the client picks its member id), -1 leaves, anything else must be the
member's current epoch (or its previous one, whose response may have been lost) or FENCED_MEMBER_EPOCH. The group
epoch goes up when a member joins, leaves or changes its subscription, or when the subscribed topics' partitions
change; the target assignment is then recomputed with the simple assignor and stamped with the group epoch (the
assignment epoch). Share groups have no revocation phase: a member takes its target assignment, and the target
epoch as its member epoch, on its next heartbeat. A member silent for `share.session.timeout.ms` is removed by
`expire_sessions`. The response carries the assignment on a join, on a full request (one that names the
subscription) and whenever the member's partitions changed.

Sans-IO: the caller passes the cluster's topics and the time, persists nothing yet (the group records are
still to wire). Not thread-safe: one owner, the coordinator's event loop.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from minikafka.broker.groups.simple_assignor import simple_assign
from minikafka.protocol.errors import ErrorCode

__all__ = [
    "FENCED_MEMBER_EPOCH",
    "GROUP_MAX_SIZE_REACHED",
    "UNKNOWN_MEMBER_ID",
    "ShareGroup",
    "ShareGroupError",
    "ShareGroupHeartbeatResult",
    "ShareGroupMember",
    "ShareGroupState",
    "StatePartitionMetadata",
]

UNKNOWN_MEMBER_ID = 25
GROUP_MAX_SIZE_REACHED = 81
FENCED_MEMBER_EPOCH = 110
LEAVE_GROUP_MEMBER_EPOCH = -1

#: topic name -> (topic id, partition count): what the caller knows of the cluster.
TopicsImage = Mapping[str, tuple[uuid.UUID, int]]


class ShareGroupError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class ShareGroupState(enum.Enum):
    """`ShareGroupState` as ListGroups/DescribeGroups name it."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assignment: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


#: topic id -> (topic name, partitions): one list of Kafka's ShareGroupStatePartitionMetadata record.
TopicPartitions = Mapping[uuid.UUID, tuple[str, frozenset[int]]]


@dataclass(frozen=True, slots=True)
class StatePartitionMetadata:
    """Kafka's ShareGroupStatePartitionMetadata of one group: the share partitions whose state in
    `__share_group_state` is being initialised, is initialised (only those are served), or is being deleted."""

    initializing: TopicPartitions = field(default_factory=dict)
    initialized: TopicPartitions = field(default_factory=dict)
    deleting: Mapping[uuid.UUID, str] = field(default_factory=dict)

    def is_initialized(self, topic_id: uuid.UUID, partition: int) -> bool:
        entry = self.initialized.get(topic_id)
        return entry is not None and partition in entry[1]


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Mapping[uuid.UUID, frozenset[int]] | None  # None: unchanged, not sent


class ShareGroup:
    """One share group's members, epochs and target assignment. See the module docstring."""

    def __init__(
        self,
        group_id: str,
        *,
        session_timeout_ms: int = 45_000,  # group.share.session.timeout.ms / share.session.timeout.ms
        heartbeat_interval_ms: int = 5_000,  # group.share.heartbeat.interval.ms / share.heartbeat.interval.ms
        max_size: int = 200,  # group.share.max.size
        assignable: Callable[[uuid.UUID, int], bool] = lambda topic_id, partition: True,
    ) -> None:
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_size = max_size
        self.assignable = assignable
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target_assignment: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
        #: the group's ShareGroupStatePartitionMetadata record (None: it has none); the coordinator keeps it
        self.state_partitions: StatePartitionMetadata | None = None
        self._deadlines_ms: dict[str, int] = {}
        self._subscribed_metadata: dict[str, tuple[uuid.UUID, int]] = {}

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def copy_state(self) -> dict[str, Any]:
        """Everything a heartbeat or a session expiry may change, for `restore_state` when its records cannot be
        written (the coordinator writes first and keeps the change only once it is in the log)."""
        return {name: dict(value) if isinstance(value, dict) else value for name, value in vars(self).items()}

    def restore_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, dict(value) if isinstance(value, dict) else value)

    def heartbeat(
        self,
        member_id: str,
        member_epoch: int,
        *,
        subscribed_topic_names: Sequence[str] | None,
        topics: TopicsImage,
        now_ms: int,
        rack_id: str | None = None,
        client_id: str = "",
        client_host: str = "",
    ) -> ShareGroupHeartbeatResult:
        """Serve one ShareGroupHeartbeat; raises ShareGroupError with Kafka's error code and message."""
        self._validate(member_id, member_epoch, subscribed_topic_names, rack_id)
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if member_id not in self.members:
                raise ShareGroupError(
                    UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}."
                )
            self._remove(member_id, topics)
            return ShareGroupHeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH, self.heartbeat_interval_ms, None)
        member = self.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                raise ShareGroupError(
                    UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}."
                )
            if len(self.members) >= self.max_size:
                raise ShareGroupError(
                    GROUP_MAX_SIZE_REACHED,
                    f"The share group has reached its maximum capacity of {self.max_size} members.",
                )
            member = ShareGroupMember(member_id)
        elif member_epoch not in (0, member.member_epoch) and (
            member_epoch > member.member_epoch or member_epoch != member.previous_member_epoch
        ):
            raise ShareGroupError(
                FENCED_MEMBER_EPOCH,
                f"The share group member has a member epoch ({member_epoch}) the group coordinator does not "
                f"expect ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        updated = replace(
            member,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            subscribed_topic_names=(
                tuple(sorted(set(subscribed_topic_names)))
                if subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            client_id=client_id,
            client_host=client_host,
        )
        bump = member_id not in self.members or updated.subscribed_topic_names != member.subscribed_topic_names
        self.members[member_id] = updated
        if bump or self._metadata_changed(topics):
            self.group_epoch += 1
        if self.assignment_epoch < self.group_epoch:
            self._update_target_assignment(topics)
        target = self.target_assignment.get(member_id, {})
        if updated.member_epoch != self.assignment_epoch or dict(updated.assignment) != target:
            updated = replace(
                updated,
                previous_member_epoch=updated.member_epoch,
                member_epoch=self.assignment_epoch,
                assignment=target,
            )
            self.members[member_id] = updated
        self._deadlines_ms[member_id] = now_ms + self.session_timeout_ms
        changed = dict(member.assignment) != dict(updated.assignment)
        send = member_epoch == 0 or subscribed_topic_names is not None or changed
        return ShareGroupHeartbeatResult(
            member_id, updated.member_epoch, self.heartbeat_interval_ms, dict(updated.assignment) if send else None
        )

    def expire_sessions(self, now_ms: int, topics: TopicsImage) -> list[str]:
        """Remove the members whose session timed out; returns their ids."""
        expired = sorted(m for m, deadline in self._deadlines_ms.items() if deadline <= now_ms)
        for member_id in expired:
            self._remove(member_id, topics)
        return expired

    def on_loaded(self, now_ms: int, topics: TopicsImage) -> None:
        """After replaying the group's records: every member gets a fresh session (Kafka reschedules the session
        timeouts on load) and the subscribed topics are taken as they are now."""
        self._deadlines_ms = dict.fromkeys(self.members, now_ms + self.session_timeout_ms)
        self._metadata_changed(topics)

    def next_session_deadline_ms(self) -> int | None:
        return min(self._deadlines_ms.values()) if self._deadlines_ms else None

    def _validate(
        self, member_id: str, member_epoch: int, subscribed: Sequence[str] | None, rack_id: str | None
    ) -> None:
        if not member_id.strip():
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not self.group_id.strip():
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if rack_id is not None and not rack_id.strip():
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if member_epoch == 0:
            if not subscribed:
                raise ShareGroupError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise ShareGroupError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _remove(self, member_id: str, topics: TopicsImage) -> None:
        del self.members[member_id]
        self._deadlines_ms.pop(member_id, None)
        self.target_assignment.pop(member_id, None)
        self.group_epoch += 1
        self._update_target_assignment(topics)

    def _metadata_changed(self, topics: TopicsImage) -> bool:
        subscribed = {name for m in self.members.values() for name in m.subscribed_topic_names}
        metadata = {name: topics[name] for name in sorted(subscribed) if name in topics}
        if metadata == self._subscribed_metadata:
            return False
        self._subscribed_metadata = metadata
        return True

    def _update_target_assignment(self, topics: TopicsImage) -> None:
        self._metadata_changed(topics)
        ids = {name: topic_id for name, (topic_id, _) in self._subscribed_metadata.items()}
        target = simple_assign(
            {m.member_id: {ids[n] for n in m.subscribed_topic_names if n in ids} for m in self.members.values()},
            {topic_id: count for topic_id, count in self._subscribed_metadata.values()},
            {m: {t: set(p) for t, p in a.items()} for m, a in self.target_assignment.items()},
            self.assignable,
        )
        self.target_assignment = {m: {t: frozenset(p) for t, p in a.items() if p} for m, a in target.items()}
        self.assignment_epoch = self.group_epoch

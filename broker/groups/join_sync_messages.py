"""The coordinator's JoinGroup/SyncGroup inputs and answers, independent of the wire version.

`JoinGroupRequestData` is what a JoinGroup handler decodes once and the coordinator passes along;
`JoinGroupResult` and `SyncGroupResult` are what the coordinator hands back through a callback. Immutable
values (the results are plain dataclasses the handler only reads); thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from minikafka.broker.groups.group_metadata import GroupMetadata, MemberMetadata
from minikafka.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class JoinGroupRequestData:
    """One JoinGroup request's member description (all but the group and member ids): the request's
    fields in the JoinGroupRequest schema's order, then what the handler takes from the header and
    the API version."""

    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    client_id: str
    client_host: str
    #: v4+: a member joining without an id first gets MEMBER_ID_REQUIRED (KIP-394).
    require_known_member_id: bool

    def new_member(self, member_id: str) -> MemberMetadata:
        """The member this request describes, under `member_id`."""
        return MemberMetadata(
            member_id=member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            protocol_type=self.protocol_type,
            protocols=self.protocols,
        )


@dataclass
class JoinGroupResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    #: (member_id, group_instance_id, metadata) — only the leader gets them.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)

    @classmethod
    def joined(
        cls, group: GroupMetadata, member_id: str, members: list[tuple[str, str | None, bytes]] | None = None
    ) -> JoinGroupResult:
        """Success for `member_id` in the group's current generation."""
        return cls(
            ErrorCode.NONE,
            member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members or [],
        )

    @classmethod
    def for_member(cls, group: GroupMetadata, member: MemberMetadata) -> JoinGroupResult:
        """Success for `member`; the leader also gets every member's metadata for the chosen protocol."""
        members: list[tuple[str, str | None, bytes]] = []
        if group.is_leader(member.member_id) and group.protocol_name is not None:
            members = [
                (other.member_id, other.group_instance_id, other.metadata(group.protocol_name))
                for other in group.members.values()
            ]
        return cls.joined(group, member.member_id, members)


@dataclass
class SyncGroupResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None

    @classmethod
    def for_member(cls, group: GroupMetadata, member: MemberMetadata) -> SyncGroupResult:
        return cls(ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name)


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]

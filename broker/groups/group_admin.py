"""`GroupAdmin`: the group administration APIs of the group coordinator — ListGroups, DescribeGroups and
DeleteGroups over the classic and the KIP-848 consumer groups — with Kafka's checks and codes (share groups are
added by the handlers from the `ShareCoordinator`).

Built from what it reads: the group store (`GroupMetadataManager`), the coordinator's status check and the
`ConsumerGroupCoordinator` (which lists and deletes consumer groups). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from minikafka.broker.groups.consumer_group_coordinator import ConsumerGroupCoordinator
from minikafka.broker.groups.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupState
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_status import CoordinatorStatus
from minikafka.protocol.errors import ErrorCode

__all__ = ["DEAD_SUMMARY", "GroupAdmin", "GroupSummary", "MemberSummary"]


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


DEAD_SUMMARY = GroupSummary(GroupState.DEAD.value, "", "", [])


class GroupAdmin:
    """ListGroups, DescribeGroups and DeleteGroups over the store's groups."""

    def __init__(
        self, store: GroupMetadataManager, status: CoordinatorStatus, consumer: ConsumerGroupCoordinator
    ) -> None:
        self.manager = store
        self.status = status
        self.consumer = consumer

    # -- ListGroups / DescribeGroups ---------------------------------------------------------------------
    def handle_list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> tuple[ErrorCode, list[tuple[str, str, str, str]]]:
        """(error, [(group_id, protocol_type, state, group type)]): classic groups, then consumer groups."""
        error = self.status.validate("-")
        if error is not ErrorCode.NONE:
            return error, []
        state_filter = {state.lower() for state in states}
        type_filter = {kind.lower() for kind in types}
        listed = []
        for group in self.manager.groups.values():
            if group.is_(GroupState.DEAD):
                continue
            if state_filter and group.state.value.lower() not in state_filter:
                continue
            if type_filter and "classic" not in type_filter:
                continue
            if group.group_id in self.manager.consumer_groups:
                continue  # the offsets shell of a consumer group
            listed.append((group.group_id, group.protocol_type or "", group.state.value, "classic"))
        for group_id, state in self.consumer.listed():
            if (state_filter and state.lower() not in state_filter) or (type_filter and "consumer" not in type_filter):
                continue
            listed.append((group_id, CONSUMER_PROTOCOL_TYPE, state, "consumer"))
        return ErrorCode.NONE, listed

    def handle_describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        error = self.status.validate(group_id, allow_empty_id=True)
        if error is not ErrorCode.NONE:
            return error, DEAD_SUMMARY
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.NONE, DEAD_SUMMARY
        stable = group.is_(GroupState.STABLE)
        members = [
            MemberSummary(
                member.member_id,
                member.group_instance_id,
                member.client_id,
                member.client_host,
                member.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                member.assignment if stable else b"",
            )
            for member in group.members.values()
        ]
        protocol = (group.protocol_name or "") if stable else ""
        return ErrorCode.NONE, GroupSummary(group.state.value, group.protocol_type or "", protocol, members)

    # -- DeleteGroups / OffsetDelete ---------------------------------------------------------------------
    def handle_delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            error = self.status.validate(group_id)
            if error is not ErrorCode.NONE:
                results[group_id] = error
                continue
            consumer_group = self.manager.consumer_groups.get(group_id)
            if consumer_group is not None:
                results[group_id] = self._delete_consumer_group(group_id)
                continue
            group = self.manager.get_group(group_id)
            if group is None or group.is_(GroupState.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_(GroupState.EMPTY):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                results[group_id] = self.manager.delete_group(group)
        return results

    def _delete_consumer_group(self, group_id: str) -> ErrorCode:
        consumer_group = self.manager.consumer_groups[group_id]
        if consumer_group.members:
            return ErrorCode.NON_EMPTY_GROUP
        error = self.consumer.delete(consumer_group)
        shell = self.manager.get_group(group_id)
        if error is ErrorCode.NONE and shell is not None:
            error = self.manager.delete_group(shell)
        return error

"""DescribeGroups (key 15), v0-6: the classic groups' API. Up to v5 an unknown group, and a consumer (KIP-848) or
share (KIP-932) group, is reported as state Dead with NONE; v6 (KIP-1043) answers them GROUP_ID_NOT_FOUND with
Kafka's messages ("Group g not found.", "Group g is not a classic group."). Member metadata and assignments only
while the group is Stable. DESCRIBE on each group; v3+ reports the group's authorized operations (KIP-430) when
asked, as Kafka: only for groups answered NONE."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import GROUP, elsewhere
from minikafka.broker.security.authorize import (
    AclOperation,
    ResourceType,
    authorized_names,
    supported_authorized_operations,
)
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

DEAD_STATE = "Dead"


#: DescribeGroups v6 (KIP-1043) answers a group that is not a live classic group GROUP_ID_NOT_FOUND.
NOT_FOUND_VERSION = 6


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DESCRIBE_GROUPS, event.api_version)
    not_classic = _not_classic_group_ids(ctx) if event.api_version >= NOT_FOUND_VERSION else set()
    group_cls = cls.DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP, request.groups)
    with_operations = event.api_version >= 3 and bool(request.include_authorized_operations)
    groups = []
    for group_id in request.groups:
        if group_id not in describable:
            groups.append(group_cls(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                                    group_state="", protocol_type="", protocol_data="", members=[],
                                    authorized_operations=None))
            continue
        error, summary = ctx.group_coordinator.admin.handle_describe_group(group_id)
        if elsewhere(ctx.coordinators, ctx.node_id, GROUP, group_id):
            error = ErrorCode.NOT_COORDINATOR
        if event.api_version >= NOT_FOUND_VERSION and error == ErrorCode.NONE and (
                group_id in not_classic or summary.state == DEAD_STATE):
            message = f"Group {group_id} is not a classic group." if group_id in not_classic else \
                f"Group {group_id} not found."
            groups.append(group_cls(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=message, group_id=group_id,
                                    group_state=DEAD_STATE, protocol_type="", protocol_data="", members=[],
                                    authorized_operations=None))
            continue
        groups.append(
            group_cls(
                error_code=error,
                group_id=group_id,
                group_state=summary.state,
                protocol_type=summary.protocol_type,
                protocol_data=summary.protocol,
                members=[
                    member_cls(
                        member_id=member.member_id,
                        group_instance_id=member.group_instance_id,
                        client_id=member.client_id,
                        client_host=member.client_host,
                        member_metadata=member.metadata,
                        member_assignment=member.assignment,
                    )
                    for member in summary.members
                ],
                # a set of operation codes; None is encoded as INT_MIN: "not requested"
                authorized_operations=supported_authorized_operations(ctx, session, ResourceType.GROUP, group_id)
                if with_operations and error == ErrorCode.NONE else None,
            )
        )
    return cls(throttle_time_ms=0, groups=groups)


def _not_classic_group_ids(ctx: BrokerContext) -> set[str]:
    """The consumer (KIP-848) and share groups: their ids are not classic groups for DescribeGroups v6."""
    _error, listed = ctx.group_coordinator.admin.handle_list_groups()
    ids = {group_id for group_id, _protocol_type, _state, group_type in listed if group_type != "classic"}
    if ctx.share_coordinator is not None:
        ids.update(ctx.share_coordinator.groups)
    return ids

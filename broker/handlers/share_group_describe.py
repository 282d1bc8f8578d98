"""ShareGroupDescribe (key 77), v1 (KIP-932): share groups with their epochs, the `simple` assignor and every
member's assignment. A group that is not a share group, or no group, answers GROUP_ID_NOT_FOUND as Kafka does.
DESCRIBE on the group; authorized operations (KIP-430) when asked for."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import GROUP, elsewhere
from minikafka.broker.security.authorize import (
    AclOperation,
    ResourceType,
    authorized_names,
    supported_authorized_operations,
    to_32_bit_field,
)
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

_ASSIGNOR = "simple"


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.SHARE_GROUP_DESCRIBE, event.api_version)
    group_cls = cls.DescribedGroup
    member_cls = group_cls.Member
    share = ctx.share_coordinator
    names = {topic_id: name for name, (topic_id, _count) in share.topics_image().items()} if share else {}
    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP, request.group_ids)
    groups = []
    for group_id in request.group_ids:
        group = share.groups.get(group_id) if share is not None else None
        if group_id in describable and elsewhere(ctx.coordinators, ctx.node_id, GROUP, group_id):
            groups.append(group_cls(error_code=ErrorCode.NOT_COORDINATOR, error_message=None, group_id=group_id,
                                    group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=[]))
            continue
        if group_id not in describable or group is None:
            denied = group_id not in describable
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED if denied else ErrorCode.GROUP_ID_NOT_FOUND
            message = None if denied else f"Group {group_id} not found."
            groups.append(group_cls(error_code=error, error_message=message, group_id=group_id, group_state="",
                                    group_epoch=0, assignment_epoch=0, assignor_name="", members=[]))
            continue
        groups.append(group_cls(
            error_code=ErrorCode.NONE, error_message=None, group_id=group_id, group_state=group.state.value,
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch, assignor_name=_ASSIGNOR,
            authorized_operations=to_32_bit_field(
                supported_authorized_operations(ctx, session, ResourceType.GROUP, group_id)
                if request.include_authorized_operations else None),
            members=[
                member_cls(
                    member_id=member.member_id, rack_id=member.rack_id, member_epoch=member.member_epoch,
                    client_id=member.client_id, client_host=member.client_host,
                    subscribed_topic_names=list(member.subscribed_topic_names),
                    assignment=member_cls.Assignment(topic_partitions=[
                        member_cls.Assignment.TopicPartitions(
                            topic_id=topic_id, topic_name=names.get(topic_id, ""), partitions=sorted(indexes))
                        for topic_id, indexes in sorted(member.assignment.items(),
                                                        key=lambda item: names.get(item[0], ""))]),
                )
                for member in group.members.values()
            ],
        ))
    return cls(throttle_time_ms=0, groups=groups)

"""ConsumerGroupDescribe (key 69), v0-1: KIP-848 groups with their epochs, assignor and every member's current
and target assignment (ConsumerGroupCoordinator). A classic or unknown group answers GROUP_ID_NOT_FOUND.
DESCRIBE on the group; v1 adds the member type (0 = classic protocol, 1 = consumer protocol).

As Kafka's handleConsumerGroupDescribe: a group whose members' current or target assignments name a topic the
caller may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED with no members (its topic names, ids and
partitions stay hidden); authorized operations (KIP-430) are reported when asked for."""

from __future__ import annotations

from collections.abc import Mapping
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

CLASSIC_MEMBER_TYPE = 0
CONSUMER_MEMBER_TYPE = 1


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.CONSUMER_GROUP_DESCRIBE, event.api_version)
    group_cls = cls.DescribedGroup
    member_cls = group_cls.Member
    consumer = ctx.group_coordinator.consumer
    names = consumer.topic_names()

    def assignment(partitions: Mapping[Any, frozenset[int]]) -> Any:
        return member_cls.Assignment(topic_partitions=[
            member_cls.Assignment.TopicPartitions(topic_id=topic_id, topic_name=names.get(topic_id, ""),
                                                  partitions=sorted(indexes))
            for topic_id, indexes in sorted(partitions.items(), key=lambda item: names.get(item[0], ""))])

    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP, request.group_ids)
    groups = []
    for group_id in request.group_ids:
        if group_id not in describable:
            groups.append(group_cls(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
                                    group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0,
                                    assignor_name="", members=[]))
            continue
        if elsewhere(ctx.coordinators, ctx.node_id, GROUP, group_id):
            groups.append(group_cls(error_code=ErrorCode.NOT_COORDINATOR, error_message=None,
                                    group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0,
                                    assignor_name="", members=[]))
            continue
        described = consumer.describe(group_id)
        groups.append(group_cls(
            error_code=described.error,
            error_message=described.message,
            group_id=group_id,
            group_state=described.state,
            group_epoch=described.group_epoch,
            assignment_epoch=described.assignment_epoch,
            assignor_name=described.assignor,
            authorized_operations=to_32_bit_field(
                supported_authorized_operations(ctx, session, ResourceType.GROUP, group_id)
                if request.include_authorized_operations and described.error == ErrorCode.NONE else None),
            members=[
                member_cls(
                    member_id=entry.member.member_id,
                    instance_id=entry.member.instance_id,
                    rack_id=entry.member.rack_id,
                    member_epoch=entry.member.member_epoch,
                    client_id=entry.member.client_id,
                    client_host=entry.member.client_host,
                    subscribed_topic_names=list(entry.member.subscribed_topic_names),
                    subscribed_topic_regex=entry.member.subscribed_topic_regex,
                    assignment=assignment(entry.member.assigned),
                    target_assignment=assignment(entry.target),
                    member_type=CONSUMER_MEMBER_TYPE if entry.member.classic is None else CLASSIC_MEMBER_TYPE,
                )
                for entry in described.members
            ],
        ))
    return cls(throttle_time_ms=0, groups=_hide_undescribable_topics(ctx, session, group_cls, groups))


def _hide_undescribable_topics(ctx: BrokerContext, session: Session, group_cls: Any, groups: list[Any]) -> list[Any]:
    """Kafka: "Clients are not allowed to see topics that are not authorized for Describe"."""
    def assigned_names(group: Any) -> set[str]:
        return {tp.topic_name for member in group.members
                for assignment in (member.assignment, member.target_assignment)
                for tp in assignment.topic_partitions}

    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                   (name for group in groups for name in assigned_names(group)))
    return [group if assigned_names(group) <= describable else group_cls(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        error_message="The group has described topic(s) that the client is not authorized to describe.",
        group_id=group.group_id, group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=[])
        for group in groups]

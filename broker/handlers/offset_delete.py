"""OffsetDelete (key 47), v0: delete committed offsets of partitions the group no longer subscribes to."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.offset_commit import split_unknown_partitions
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.OFFSET_DELETE, event.api_version)
    if not authorize(ctx, session, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return cls(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[])
    unknown, known = split_unknown_partitions(
        ctx, request.topics, authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC,
                                              (topic.name for topic in request.topics)))
    error, results = ctx.group_coordinator.offsets.handle_delete_offsets(request.group_id, [tp for tp, _ in known])
    results.update(unknown)
    topic_cls = cls.OffsetDeleteResponseTopic
    partition_cls = topic_cls.OffsetDeleteResponsePartition
    topics = []
    if error is ErrorCode.NONE:
        topics = [
            topic_cls(
                name=topic.name,
                partitions=[
                    partition_cls(
                        partition_index=partition.partition_index,
                        error_code=results.get((topic.name, partition.partition_index), ErrorCode.NONE),
                    )
                    for partition in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    return cls(error_code=error, throttle_time_ms=0, topics=topics)

"""OffsetForLeaderEpoch (key 23), v2-4: a single leader epoch 0, so any epoch >= 0 ends at the log end
offset (kafka-protocol-notes §3.7); an answer of -1/-1 would make Java consumers reset their position."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize_cluster, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, event.api_version)
    topic_cls = cls.OffsetForLeaderTopicResult
    partition_cls = topic_cls.EpochEndOffset
    names = [topic.topic for topic in event.request.topics]
    describable = set(names) if authorize_cluster(ctx, session, AclOperation.CLUSTER_ACTION) else authorized_names(
        ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    topics = []
    for topic in event.request.topics:
        partitions = []
        for partition in topic.partitions:
            if topic.topic not in describable:
                partitions.append(partition_cls(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                partition=partition.partition, leader_epoch=-1, end_offset=-1))
                continue
            try:
                ctx.partitions.require_leader(topic.topic, partition.partition, ctx.node_id,
                                              partition.current_leader_epoch)
                epoch, end_offset = ctx.partitions.end_offset_for_epoch(
                    topic.topic, partition.partition, partition.leader_epoch
                )
                code = ErrorCode.NONE
            except KafkaError as error:
                epoch, end_offset, code = -1, -1, error.error_code
            partitions.append(
                partition_cls(
                    error_code=code, partition=partition.partition, leader_epoch=epoch, end_offset=end_offset
                )
            )
        topics.append(topic_cls(topic=topic.topic, partitions=partitions))
    return cls(throttle_time_ms=0, topics=topics)

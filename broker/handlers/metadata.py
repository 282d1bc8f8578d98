"""Metadata (key 3), v0-12: this node is the only broker, the controller, and every partition's leader
(epoch 0). Unknown topics are created when both the request (v4+) and `auto.create.topics.enable` allow it."""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.admin_manager import INTERNAL_TOPICS
from minikafka.broker.context import BrokerContext
from minikafka.broker.replica_manager import LEADER_EPOCH
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class
from minikafka.storage.log_manager import TopicMetadata


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.METADATA, version)
    topic_cls = cls.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    node = ctx.node_id

    if request.topics is None or (version == 0 and not request.topics):
        names = sorted(ctx.replica_manager.topics())
    else:
        names = [topic.name for topic in request.topics]
    allow_auto_create = (request.allow_auto_topic_creation if version >= 4 else True) and bool(
        ctx.config["auto.create.topics.enable"]
    )

    topics = []
    for name in names:
        metadata, error_code = await _lookup(ctx, name, allow_auto_create)
        if metadata is None:
            topics.append(
                topic_cls(error_code=error_code, name=name, topic_id=uuid.UUID(int=0), is_internal=False, partitions=[])
            )
            continue
        partitions = [
            partition_cls(
                error_code=ErrorCode.NONE,
                partition_index=index,
                leader_id=node,
                leader_epoch=LEADER_EPOCH,
                replica_nodes=[node],
                isr_nodes=[node],
                offline_replicas=[],
            )
            for index in range(metadata.num_partitions)
        ]
        topics.append(
            topic_cls(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=metadata.topic_id,
                is_internal=name in INTERNAL_TOPICS,
                partitions=partitions,
            )
        )
    advertised = ctx.config.advertised
    return cls(
        throttle_time_ms=0,
        brokers=[cls.MetadataResponseBroker(node_id=node, host=advertised.host, port=advertised.port, rack=None)],
        cluster_id=ctx.cluster_id,
        controller_id=node,
        topics=topics,
    )


async def _lookup(ctx: BrokerContext, name: str, allow_auto_create: bool) -> tuple[TopicMetadata | None, ErrorCode]:
    metadata = ctx.replica_manager.topic(name)
    if metadata is not None:
        return metadata, ErrorCode.NONE
    if not allow_auto_create:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    try:
        return await ctx.admin.auto_create_topic(name), ErrorCode.NONE
    except KafkaError as error:
        metadata = ctx.replica_manager.topic(name)  # a concurrent request may have created it
        if metadata is not None:
            return metadata, ErrorCode.NONE
        if error.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION:
            return None, ErrorCode.INVALID_TOPIC_EXCEPTION
        return None, ErrorCode.LEADER_NOT_AVAILABLE

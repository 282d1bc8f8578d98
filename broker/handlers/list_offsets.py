"""ListOffsets (key 2), v1-7: -1 latest, -2 earliest, -3 max timestamp (v7), else the first offset whose
timestamp is at or after the target; (-1, -1) with NONE when there is none."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class

LATEST_TIMESTAMP = -1
READ_COMMITTED = 1


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.LIST_OFFSETS, event.api_version)
    topic_cls = cls.ListOffsetsTopicResponse
    partition_cls = topic_cls.ListOffsetsPartitionResponse
    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                   (topic.name for topic in request.topics))
    topics = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            fields: dict[str, Any] = {"partition_index": partition.partition_index, "error_code": ErrorCode.NONE}
            if topic.name not in describable:
                fields.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, offset=-1, timestamp=-1, leader_epoch=-1)
                partitions.append(partition_cls(**fields))
                continue
            try:
                ctx.partitions.require_leader(topic.name, partition.partition_index, ctx.node_id,
                                              partition.current_leader_epoch)
                if partition.timestamp == LATEST_TIMESTAMP and request.isolation_level == READ_COMMITTED:
                    log = ctx.replica_manager.log_for(topic.name, partition.partition_index)
                    offset, timestamp = log.last_stable_offset, -1
                else:
                    offset, timestamp = ctx.replica_manager.offset_for_timestamp(
                        topic.name, partition.partition_index, partition.timestamp
                    )
                epoch = ctx.partitions.epoch_for_offset(topic.name, partition.partition_index, offset)
                fields.update(offset=offset, timestamp=timestamp, leader_epoch=epoch if offset >= 0 else -1)
            except KafkaError as error:
                fields.update(error_code=error.error_code, offset=-1, timestamp=-1, leader_epoch=-1)
            partitions.append(partition_cls(**fields))
        topics.append(topic_cls(name=topic.name, partitions=partitions))
    return cls(throttle_time_ms=0, topics=topics)

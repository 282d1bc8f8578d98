"""DeleteRecords (key 21), v0-2: move a partition's log start offset forward (-1 = to the high watermark).
An offset above the high watermark is OFFSET_OUT_OF_RANGE; a topic without `delete` in its cleanup.policy
gets POLICY_VIOLATION, as Kafka answers."""

from __future__ import annotations

import logging
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class

log = logging.getLogger(__name__)

async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.DELETE_RECORDS, event.api_version)
    topic_cls = cls.DeleteRecordsTopicResult
    partition_cls = topic_cls.DeleteRecordsPartitionResult
    deletable = authorized_names(ctx, session, AclOperation.DELETE, ResourceType.TOPIC,
                                 (topic.name for topic in event.request.topics))
    topics = []
    for topic in event.request.topics:
        partitions = []
        for partition in topic.partitions:
            fields: dict[str, Any] = {"partition_index": partition.partition_index, "error_code": ErrorCode.NONE}
            if topic.name not in deletable:
                fields.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, low_watermark=-1)
                partitions.append(partition_cls(**fields))
                continue
            try:
                ctx.partitions.require_leader(topic.name, partition.partition_index, ctx.node_id)
                fields["low_watermark"] = ctx.replica_manager.delete_records(
                    topic.name, partition.partition_index, partition.offset
                )
            except KafkaError as error:
                fields.update(error_code=error.error_code, low_watermark=-1)
            except Exception:  # one partition's bug must not fail the others
                log.exception("DeleteRecords on %s-%d failed", topic.name, partition.partition_index)
                fields.update(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, low_watermark=-1)
            partitions.append(partition_cls(**fields))
        topics.append(topic_cls(name=topic.name, partitions=partitions))
    return cls(throttle_time_ms=0, topics=topics)

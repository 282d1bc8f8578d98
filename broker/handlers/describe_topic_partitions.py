"""DescribeTopicPartitions (key 75), v0: KIP-966's paginated topic description, which the Java admin client 4.x
`describeTopics` (`kafka-topics --describe`) prefers to Metadata. Follows Kafka's
DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.describeTopicResponse:

- An empty topic list means every topic (unknown ones cannot occur); otherwise the requested names, deduplicated.
  Either way only names >= the cursor's topic are kept, described in name order.
- At most `response_partition_limit` partitions (clamped to [1, 2000], Kafka's
  `max.request.partition.size.limit` default) per response; the cursor's topic starts at the cursor's
  partition. A topic cut short sets `next_cursor` to its next partition; a topic reached with no budget left
  sets it to that topic's partition 0.
- A requested topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
  illegal name) and uses no budget. A cursor whose topic is not requested, or whose partition is negative,
  fails the request: every requested topic gets INVALID_REQUEST.
- Leader, leader epoch, replicas, ISR, offline replicas and the eligible leader replica lists (KIP-966 ELR and
  last known ELR) are `PartitionStates`'. With no authorizer every
  topic operation is authorized.
"""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.admin_manager import INTERNAL_TOPICS
from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.describe_producers import topic_name_error
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names, authorized_operations
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

#: Kafka's `max.request.partition.size.limit` default: the most partitions one response describes.
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000
#: Kafka's AclOperation codes a TOPIC resource supports (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
#: DESCRIBE_CONFIGS, ALTER_CONFIGS) as the int32 bit field Kafka answers without an authorizer: 3576.
_TOPIC_OPERATIONS = (3, 4, 5, 6, 7, 8, 10, 11)  # AclEntry.supportedOperations(TOPIC)
_ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS, event.api_version)
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    if fetch_all:
        names = {name for name in ctx.replica_manager.topics() if name >= cursor_topic}
    else:
        names = {topic.name for topic in request.topics if topic.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return _request_error(cls, request, ErrorCode.INVALID_REQUEST)
        if "" in names:  # Kafka fails the whole request on an empty name (its resource check throws)
            return _request_error(cls, request, ErrorCode.UNKNOWN_SERVER_ERROR)
    if cursor is not None and cursor.partition_index < 0:
        return _request_error(cls, request, ErrorCode.INVALID_REQUEST)

    # Kafka: topics the session may not describe are left out of a fetch-all and answer TOPIC_AUTHORIZATION_FAILED
    # when named (without disclosing whether they exist).
    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    denied = sorted(names - describable)
    limit = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, request.response_partition_limit), 1)
    topics, next_cursor = _describe(ctx, cls, sorted(describable), cursor, limit, fetch_all)
    for topic in topics:
        allowed = authorized_operations(ctx, session, ResourceType.TOPIC, topic.name, _TOPIC_OPERATIONS)
        topic.topic_authorized_operations = sum(1 << code for code in allowed)  # all of them without an authorizer
    if not fetch_all:
        topic_cls = cls.DescribeTopicPartitionsResponseTopic
        topics += [topic_cls(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=_ZERO_UUID,
                             is_internal=False, partitions=[], topic_authorized_operations=-2147483648)
                   for name in denied]
    return cls(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)


def _describe(ctx: BrokerContext, cls: Any, names: list[str], cursor: Any, limit: int,
              fetch_all: bool) -> tuple[list[Any], Any]:
    """The topics of one page and the cursor of the next (None when this page is the last)."""
    topic_cls = cls.DescribeTopicPartitionsResponseTopic
    partition_cls = topic_cls.DescribeTopicPartitionsResponsePartition
    remaining = limit
    topics: list[Any] = []
    for name in names:
        if remaining == 0:
            return topics, cls.Cursor(topic_name=name, partition_index=0)
        metadata = ctx.replica_manager.topic(name)
        if metadata is None:
            if not fetch_all:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic_name_error(name) is None else (
                    ErrorCode.INVALID_TOPIC_EXCEPTION)
                topics.append(topic_cls(error_code=error, name=name, topic_id=_ZERO_UUID,
                                        is_internal=name in INTERNAL_TOPICS, partitions=[]))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        upper = min(metadata.num_partitions, start + remaining)
        partitions = []
        for index in range(start, upper):
            state = ctx.partitions.get(name, index)
            partitions.append(partition_cls(
                error_code=ErrorCode.NONE, partition_index=index, leader_id=state.leader,
                leader_epoch=state.leader_epoch, replica_nodes=list(state.replicas), isr_nodes=list(state.isr),
                eligible_leader_replicas=list(state.elr), last_known_elr=list(state.last_known_elr),
                offline_replicas=ctx.partitions.offline_replicas(state)))
        topics.append(topic_cls(error_code=ErrorCode.NONE, name=name, topic_id=metadata.topic_id,
                                is_internal=name in INTERNAL_TOPICS, partitions=partitions))
        if upper < metadata.num_partitions:
            return topics, cls.Cursor(topic_name=name, partition_index=upper)
        remaining -= len(partitions)
    return topics, None


def _request_error(cls: Any, request: Any, error_code: ErrorCode) -> Any:
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse: every requested topic, in request order."""
    topic_cls = cls.DescribeTopicPartitionsResponseTopic
    return cls(throttle_time_ms=0, next_cursor=None, topics=[
        topic_cls(error_code=error_code, name=topic.name, topic_id=_ZERO_UUID, is_internal=False, partitions=[],
                  topic_authorized_operations=-2147483648)
        for topic in request.topics
    ])

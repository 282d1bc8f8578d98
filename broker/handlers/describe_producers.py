"""DescribeProducers (key 61), v0: the active producers of each requested partition from its producer state
(`kafka-transactions describe-producers`), as Kafka's KafkaApis.handleDescribeProducersRequest answers.

Errors land on each partition: an illegal topic name gets INVALID_TOPIC_EXCEPTION with Kafka's Topic.validate
message, an unknown topic UNKNOWN_TOPIC_OR_PARTITION with Kafka's default message, and a partition the topic
does not have (or an offline one) its code without a message, while the other partitions are described.
"""

from __future__ import annotations

import re
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class

_UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
_MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.DESCRIBE_PRODUCERS, event.api_version)
    topic_cls = cls.TopicResponse
    partition_cls = topic_cls.PartitionResponse
    state_cls = partition_cls.ProducerState
    topics = []
    for topic in event.request.topics:
        topic_error: tuple[ErrorCode, str | None] | None = None
        invalid_message = topic_name_error(topic.name)
        if invalid_message is not None:
            topic_error = ErrorCode.INVALID_TOPIC_EXCEPTION, invalid_message
        elif not authorize(ctx, session, AclOperation.READ, ResourceType.TOPIC, topic.name):
            topic_error = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
        elif ctx.replica_manager.topic(topic.name) is None:
            topic_error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC_MESSAGE
        partitions = []
        for index in topic.partition_indexes:
            error_code, error_message, states = ErrorCode.NONE, None, []
            if topic_error is not None:
                error_code, error_message = topic_error
            else:
                try:
                    entries = ctx.replica_manager.active_producers(topic.name, index)
                except KafkaError as error:
                    error_code = error.error_code  # Kafka sets only the code here
                else:
                    states = [
                        state_cls(producer_id=entry.producer_id, producer_epoch=entry.producer_epoch,
                                  last_sequence=entry.last_sequence, last_timestamp=entry.last_timestamp_ms,
                                  coordinator_epoch=entry.coordinator_epoch,
                                  current_txn_start_offset=entry.current_txn_first_offset)
                        for entry in entries
                    ]
            partitions.append(partition_cls(partition_index=index, error_code=error_code, error_message=error_message,
                                            active_producers=states))
        topics.append(topic_cls(name=topic.name, partitions=partitions))
    return cls(throttle_time_ms=0, topics=topics)


def topic_name_error(name: str) -> str | None:
    """Kafka's Topic.validate(name) message for an illegal topic name, None for a legal one."""
    prefix = "Topic name is invalid"
    if not name:
        return f"{prefix}: the empty string is not allowed"
    if name in (".", ".."):
        return f"{prefix}: '{name}' is not allowed"
    if len(name) > _MAX_TOPIC_NAME_LENGTH:
        return f"{prefix}: the length of '{name}' is longer than the max allowed length {_MAX_TOPIC_NAME_LENGTH}"
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return f"{prefix}: '{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None

"""CreatePartitions (key 37), v0-3: grow a topic; the new count must exceed the current one."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.CREATE_PARTITIONS, event.api_version)
    alterable = authorized_names(ctx, session, AclOperation.ALTER, ResourceType.TOPIC,
                                 (topic.name for topic in request.topics))
    results = []
    for topic in request.topics:
        code, message = ErrorCode.NONE, None
        if topic.name not in alterable:
            results.append(cls.CreatePartitionsTopicResult(
                name=topic.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                error_message="The topic authorization is failed."))
            continue
        try:
            assignments = [a.broker_ids for a in topic.assignments or ()]
            await ctx.admin.create_partitions(topic.name, topic.count, assignments, request.validate_only)
        except KafkaError as error:
            code, message = error.error_code, error.message or None
        results.append(cls.CreatePartitionsTopicResult(name=topic.name, error_code=code, error_message=message))
    return cls(throttle_time_ms=0, results=results)

"""DeleteTopics (key 20), v1-6 (v6 names topics in `topics`, by name or id)."""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import (
    ErrorCode,
    KafkaError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
    UnknownTopicIdError,
)
from minikafka.protocol.messages import response_class

_ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DELETE_TOPICS, event.api_version)
    result_cls = cls.DeletableTopicResult
    if event.api_version >= 6:
        targets = [(topic.name, topic.topic_id) for topic in request.topics]
    else:
        targets = [(name, _ZERO_UUID) for name in request.topic_names]
    cluster_delete = authorize_cluster(ctx, session, AclOperation.DELETE)
    results = []
    for name, topic_id in targets:
        fields: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_code": ErrorCode.NONE}
        by_id = name is None  # v6: a topic named by its id only
        try:
            if not ctx.config["delete.topic.enable"]:
                raise TopicDeletionDisabledError("Topic deletion is disabled.")
            if name is None:
                name = ctx.admin.topic_name_for_id(topic_id)
                if name is None:
                    raise UnknownTopicIdError(f"Topic id {topic_id} does not exist")
                fields["name"] = name
            if not cluster_delete and not authorize(ctx, session, AclOperation.DELETE, ResourceType.TOPIC, name):
                # Kafka's ControllerApis: a topic named by id hides its name unless the session may describe it.
                if by_id and not authorize(
                        ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                    fields["name"] = None
                raise TopicAuthorizationFailedError("Authorization failed.")
            metadata = ctx.replica_manager.topic(name)
            if metadata is not None:
                fields["topic_id"] = metadata.topic_id
            await ctx.admin.delete_topic(name)
        except KafkaError as error:
            fields.update(error_code=error.error_code, error_message=error.message or None)
        results.append(result_cls(**fields))
    return cls(throttle_time_ms=0, responses=results)

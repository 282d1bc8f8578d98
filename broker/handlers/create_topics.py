"""CreateTopics (key 19), v2-7: per-topic results; v5+ echoes partitions, replication and configs."""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize_cluster, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, InvalidRequestError, KafkaError, TopicAuthorizationFailedError
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.CREATE_TOPICS, version)
    result_cls = cls.CreatableTopicResult
    names = [topic.name for topic in request.topics]
    # CREATE on the cluster, else on each topic; the created topic's configs only with DESCRIBE_CONFIGS (Kafka).
    creatable = set(names) if authorize_cluster(ctx, session, AclOperation.CREATE) else authorized_names(
        ctx, session, AclOperation.CREATE, ResourceType.TOPIC, names)
    config_describable = authorized_names(ctx, session, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names)
    results = []
    for topic in request.topics:
        fields: dict[str, Any] = {"name": topic.name, "topic_id": uuid.UUID(int=0), "error_code": ErrorCode.NONE}
        try:
            if names.count(topic.name) > 1:
                raise InvalidRequestError(f"Create topics request from client contains a duplicate topic {topic.name}")
            if topic.name not in creatable:
                raise TopicAuthorizationFailedError("Authorization failed.")
            configs: dict[str, str] = {}
            for config in topic.configs:
                if config.value is None:
                    raise InvalidRequestError(f"Null value not supported for topic configs: {config.name}")
                configs[config.name] = config.value
            assignments = [a.broker_ids for a in sorted(topic.assignments, key=lambda a: a.partition_index)]
            metadata = await ctx.admin.create_topic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                configs,
                assignments=assignments,
                validate_only=request.validate_only,
            )
            fields["topic_id"] = metadata.topic_id
            if version >= 5 and topic.name not in config_describable:
                # KIP-525 as Kafka's controller: without DESCRIBE_CONFIGS nothing of the topic's shape either
                fields.update(num_partitions=-1, replication_factor=-1, configs=[],
                              topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif version >= 5:
                fields.update(
                    num_partitions=metadata.num_partitions,
                    replication_factor=(len(assignments[0]) if assignments else topic.replication_factor
                                        if topic.replication_factor != -1
                                        else int(ctx.config["default.replication.factor"])),
                    configs=[
                        result_cls.CreatableTopicConfigs(
                            name=entry.name, value=entry.value, read_only=entry.read_only,
                            config_source=entry.source, is_sensitive=entry.is_sensitive,
                        )
                        for entry in ctx.admin.describe_configs_for_overrides(metadata.config_overrides)
                    ],
                )
        except KafkaError as error:
            fields.update(error_code=error.error_code, error_message=error.message or None)
        results.append(result_cls(**fields))
    return cls(throttle_time_ms=0, topics=results)

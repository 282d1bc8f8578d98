"""DescribeConfigs (key 32), v1-4: topic configs (with sources and synonyms), the broker's configs (resource ""
lists the cluster-default dynamic configs only, the node's id every config with dynamic sources, as Kafka) and
group configs (any group name: every group-level key, `broker.group_config_admin`), the broker's loggers
(`broker.broker_loggers`) and client-metrics subscriptions (`broker.client_metrics_configs`)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.broker_loggers import SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG
from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, InvalidRequestError, KafkaError
from minikafka.protocol.messages import response_class
from minikafka.storage.log_config import ConfigEntry

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_CLIENT_METRICS = 16
RESOURCE_GROUP = 32
#: resources authorized on the cluster (Kafka's ConfigHelper / ControllerApis.authorizeAlterResource)
CLUSTER_RESOURCES = (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS)


def entries_for(ctx: BrokerContext, resource_type: int, resource_name: str) -> list[ConfigEntry]:
    if resource_type == RESOURCE_TOPIC:
        return ctx.admin.describe_topic_config(resource_name)
    if resource_type == RESOURCE_BROKER:
        return ctx.admin.describe_broker_config(resource_name)
    if resource_type == RESOURCE_GROUP:
        return ctx.admin.group_configs.describe(resource_name)
    if resource_type == RESOURCE_CLIENT_METRICS:
        return ctx.admin.client_metrics.describe(resource_name)
    if resource_type == RESOURCE_BROKER_LOGGER:
        loggers = ctx.admin.broker_loggers
        loggers.check_name(resource_name, describing=True)
        return [ConfigEntry(name=name, value=level, source=SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG, is_sensitive=False,
                            read_only=False, config_type=0, documentation="")
                for name, level in loggers.loggers().items()]
    raise InvalidRequestError(f"Unsupported resource type {resource_type}")


def config_resource_denied(ctx: BrokerContext, session: Session, resource_type: int, resource_name: str,
                           operation: AclOperation) -> ErrorCode | None:
    """Kafka's checks of a config resource: `operation` (DESCRIBE_CONFIGS/ALTER_CONFIGS) on the topic or the group,
    or on the cluster for a broker, broker-logger or client-metrics resource; the *_AUTHORIZATION_FAILED code when
    refused."""
    if resource_type == RESOURCE_TOPIC and not authorize(ctx, session, operation, ResourceType.TOPIC, resource_name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type == RESOURCE_GROUP and not authorize(ctx, session, operation, ResourceType.GROUP, resource_name):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if resource_type in CLUSTER_RESOURCES and not authorize_cluster(ctx, session, operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.DESCRIBE_CONFIGS, version)
    result_cls = cls.DescribeConfigsResult
    config_cls = result_cls.DescribeConfigsResourceResult
    results = []
    for resource in request.resources:
        fields: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "configs": [],
        }
        denied = config_resource_denied(ctx, session, resource.resource_type, resource.resource_name,
                                        AclOperation.DESCRIBE_CONFIGS)
        if denied is not None:
            fields["error_code"] = denied
            results.append(result_cls(**fields))
            continue
        try:
            wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
            for entry in entries_for(ctx, resource.resource_type, resource.resource_name):
                if wanted is not None and entry.name not in wanted:
                    continue
                synonyms = entry.synonyms if request.include_synonyms else []
                fields["configs"].append(
                    config_cls(
                        name=entry.name,
                        value=entry.value,
                        read_only=entry.read_only,
                        config_source=entry.source,
                        is_sensitive=entry.is_sensitive,
                        synonyms=[
                            config_cls.DescribeConfigsSynonym(name=name, value=value, source=source)
                            for name, value, source in synonyms
                        ],
                        config_type=entry.config_type,
                        documentation=entry.documentation if request.include_documentation else None,
                    )
                )
        except KafkaError as error:
            fields.update(error_code=error.error_code, error_message=error.message or None, configs=[])
        results.append(result_cls(**fields))
    return cls(throttle_time_ms=0, results=results)

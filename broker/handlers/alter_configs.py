"""AlterConfigs (key 33), v0-2: replaces a topic's whole override set, the whole dynamic config set of a
BROKER resource ("" = cluster default, or this node's id; see `broker.dynamic_config`), or a group's configs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.describe_configs import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    config_resource_denied,
)
from minikafka.broker.security.authorize import AclOperation
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, InvalidConfigError, InvalidRequestError, KafkaError
from minikafka.protocol.messages import response_class

NewConfigs = Callable[[BrokerContext, str, Any], dict[str, str]]


def full_overrides(_ctx: BrokerContext, _topic: str, configs: Any) -> dict[str, str]:
    """AlterConfigs semantics: the request's configs are the topic's new override set."""
    overrides: dict[str, str] = {}
    for config in configs:
        if config.value is None:
            raise InvalidConfigError(f"Null value not supported for: {config.name}")
        overrides[config.name] = config.value
    return overrides


def full_group_overrides(_ctx: BrokerContext, _group_id: str, configs: Any) -> dict[str, str]:
    """AlterConfigs semantics for a group or a client-metrics subscription: the request's configs are its new set,
    after Kafka's ConfigAdminManager.preprocess checks (duplicate names, null values)."""
    names = [config.name for config in configs]
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    null_names = [config.name for config in configs if config.value is None]
    if null_names:
        raise InvalidRequestError(f"Null value not supported for : {', '.join(null_names)}")
    return {config.name: config.value for config in configs}


def alter_broker_loggers(ctx: BrokerContext, name: str, configs: Any, validate_only: bool) -> None:
    """Kafka's ConfigAdminManager.preprocess for BROKER_LOGGER: duplicates and nulls, then RuntimeLoggerManager."""
    names = [config.name for config in configs]
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    null_updates = [config.name for config in configs if config.value is None and config.config_operation != 1]
    if null_updates:
        raise InvalidRequestError(f"Null value not supported for : {', '.join(null_updates)}")
    loggers = ctx.admin.broker_loggers
    loggers.check_name(name, describing=False)
    loggers.validate(configs)
    if not validate_only:
        loggers.alter(configs)


def full_broker_layer(_ctx: BrokerContext, _resource_name: str, configs: Any) -> dict[str, str]:
    """AlterConfigs semantics for a broker resource: the request's configs replace its dynamic set."""
    null_names = [config.name for config in configs if config.value is None]
    if null_names:
        raise InvalidRequestError(f"Null value not supported for : {','.join(null_names)}")
    return {config.name: config.value for config in configs}


async def alter_resources(
    ctx: BrokerContext,
    event: RequestReceived,
    session: Session,
    api_key: ApiKey,
    new_overrides: NewConfigs,
    new_broker_layer: NewConfigs,
    new_group_overrides: NewConfigs,
    new_client_metrics: NewConfigs,
) -> Any:
    """Apply `new_overrides` to each topic resource, `new_broker_layer` to each broker resource and
    `new_group_overrides` to each group resource, `new_client_metrics` to each client-metrics subscription, and
    IncrementalAlterConfigs' operations to the broker's loggers; errors land on that resource only."""
    request = event.request
    cls = response_class(api_key, event.api_version)
    responses = []
    for resource in request.resources:
        code, message = ErrorCode.NONE, None
        name = resource.resource_name
        try:
            denied = config_resource_denied(ctx, session, resource.resource_type, name, AclOperation.ALTER_CONFIGS)
            if denied is not None:
                code = denied
            elif resource.resource_type == RESOURCE_TOPIC:
                overrides = new_overrides(ctx, name, resource.configs)
                await ctx.admin.alter_topic_config(name, overrides, request.validate_only)
            elif resource.resource_type == RESOURCE_BROKER:
                layer = new_broker_layer(ctx, name, resource.configs)
                await ctx.admin.alter_broker_config(name, layer, request.validate_only,
                                                    [config.name for config in resource.configs])
            elif resource.resource_type == RESOURCE_GROUP:
                group_overrides = new_group_overrides(ctx, name, resource.configs)
                await ctx.admin.group_configs.alter(name, group_overrides, request.validate_only)
            elif resource.resource_type == RESOURCE_CLIENT_METRICS:
                subscription = new_client_metrics(ctx, name, resource.configs)
                await ctx.admin.client_metrics.alter(name, subscription, request.validate_only)
            elif resource.resource_type == RESOURCE_BROKER_LOGGER and api_key is ApiKey.INCREMENTAL_ALTER_CONFIGS:
                alter_broker_loggers(ctx, name, resource.configs, request.validate_only)
            else:
                # legacy AlterConfigs has no BROKER_LOGGER either (Kafka's ConfigAdminManager.preprocess)
                raise InvalidRequestError(f"Unknown resource type {resource.resource_type}")
        except KafkaError as error:
            code, message = error.error_code, error.message or None
        responses.append(
            cls.AlterConfigsResourceResponse(
                error_code=code, error_message=message,
                resource_type=resource.resource_type, resource_name=name,
            )
        )
    return cls(throttle_time_ms=0, responses=responses)


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    return await alter_resources(ctx, event, session, ApiKey.ALTER_CONFIGS, full_overrides, full_broker_layer,
                                 full_group_overrides, full_group_overrides)

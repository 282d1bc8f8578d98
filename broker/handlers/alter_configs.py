"""AlterConfigs (key 33), v0-2: replaces a topic's whole override set. Broker configs are static here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.context import BrokerContext
from broker.handlers.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC
from protocol.api_keys import ApiKey
from protocol.connection import RequestReceived
from protocol.errors import ErrorCode, InvalidConfigError, InvalidRequestError, KafkaError
from protocol.messages import response_class


def reject_non_topic(resource_type: int) -> None:
    if resource_type == RESOURCE_BROKER:
        raise InvalidRequestError("Dynamic broker configs are not supported; edit server.properties and restart")
    if resource_type != RESOURCE_TOPIC:
        raise InvalidRequestError(f"Unsupported resource type {resource_type}")


def full_overrides(_ctx: BrokerContext, _topic: str, configs: Any) -> dict[str, str]:
    """AlterConfigs semantics: the request's configs are the topic's new override set."""
    overrides: dict[str, str] = {}
    for config in configs:
        if config.value is None:
            raise InvalidConfigError(f"Null value not supported for: {config.name}")
        overrides[config.name] = config.value
    return overrides


async def alter_resources(
    ctx: BrokerContext,
    event: RequestReceived,
    api_key: ApiKey,
    new_overrides: Callable[[BrokerContext, str, Any], dict[str, str]],
) -> Any:
    """Apply `new_overrides` to each topic resource; errors land on that resource only."""
    request = event.request
    cls = response_class(api_key, event.api_version)
    responses = []
    for resource in request.resources:
        code, message = ErrorCode.NONE, None
        try:
            reject_non_topic(resource.resource_type)
            overrides = new_overrides(ctx, resource.resource_name, resource.configs)
            await ctx.admin.alter_topic_config(resource.resource_name, overrides, request.validate_only)
        except KafkaError as error:
            code, message = error.error_code, error.message or None
        responses.append(
            cls.AlterConfigsResourceResponse(
                error_code=code, error_message=message,
                resource_type=resource.resource_type, resource_name=resource.resource_name,
            )
        )
    return cls(throttle_time_ms=0, responses=responses)


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    return await alter_resources(ctx, event, ApiKey.ALTER_CONFIGS, full_overrides)

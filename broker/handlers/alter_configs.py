"""AlterConfigs (key 33), v0-2: replaces a topic's whole override set. Broker configs are static here."""

from __future__ import annotations

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


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    request = event.request
    cls = response_class(ApiKey.ALTER_CONFIGS, event.api_version)
    responses = []
    for resource in request.resources:
        code, message = ErrorCode.NONE, None
        try:
            reject_non_topic(resource.resource_type)
            overrides: dict[str, str] = {}
            for config in resource.configs:
                if config.value is None:
                    raise InvalidConfigError(f"Null value not supported for: {config.name}")
                overrides[config.name] = config.value
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

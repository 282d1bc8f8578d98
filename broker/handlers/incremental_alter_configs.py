"""IncrementalAlterConfigs (key 44), v0-1: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on a
topic's overrides; APPEND/SUBTRACT only for LIST configs, as Kafka requires."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.alter_configs import alter_resources
from protocol.api_keys import ApiKey
from protocol.connection import RequestReceived
from protocol.errors import InvalidConfigError, InvalidRequestError
from storage.config_def import ConfigType
from storage.log_config import TOPIC_CONFIG_DEF, LogConfig

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def apply_operations(ctx: BrokerContext, topic: str, configs: Any) -> dict[str, str]:
    overrides = ctx.admin.topic_overrides(topic)
    names = [config.name for config in configs]
    for config in configs:
        name, operation, value = config.name, config.config_operation, config.value
        if names.count(name) > 1:
            raise InvalidRequestError(f"Error due to duplicate config keys: {name}")
        key = TOPIC_CONFIG_DEF.keys.get(name)
        if key is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if operation == SET:
            if value is None:
                raise InvalidConfigError(f"Null value not supported for: {name}")
            overrides[name] = value
        elif operation == DELETE:
            overrides.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            if key.type is not ConfigType.LIST:
                raise InvalidConfigError(f"Config value append is not allowed for config key: {name}")
            current = overrides.get(name)
            if current is None:
                entry = next(e for e in LogConfig.describe({}, ctx.config.props) if e.name == name)
                current = entry.value or ""
            items = [item for item in current.split(",") if item]
            changes = [item.strip() for item in (value or "").split(",") if item.strip()]
            if operation == APPEND:
                items += [item for item in changes if item not in items]
            else:
                items = [item for item in items if item not in changes]
            overrides[name] = ",".join(items)
        else:
            raise InvalidRequestError(f"Unknown config operation {operation} for {name}")
    return overrides


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    return await alter_resources(ctx, event, ApiKey.INCREMENTAL_ALTER_CONFIGS, apply_operations)

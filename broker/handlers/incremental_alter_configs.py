"""IncrementalAlterConfigs (key 44), v0-1: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on a topic's overrides
on a BROKER resource's dynamic configs, or on a GROUP resource's configs; APPEND/SUBTRACT only for LIST configs, as
Kafka requires."""

from __future__ import annotations

from typing import Any

from minikafka.broker.client_metrics_configs import KEYS as CLIENT_METRICS_KEYS
from minikafka.broker.context import BrokerContext
from minikafka.broker.dynamic_config import config_key
from minikafka.broker.handlers.alter_configs import alter_resources
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.config_def import ConfigType
from minikafka.storage.log_config import TOPIC_CONFIG_DEF, LogConfig

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
                entry = next(e for e in LogConfig.describe({}, ctx.admin.config.props) if e.name == name)
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


def apply_broker_operations(ctx: BrokerContext, resource_name: str, configs: Any) -> dict[str, str]:
    """Kafka's ConfigAdminManager.preprocess + prepareIncrementalConfigs on the resource's dynamic layer; whether
    each name may change dynamically is `AdminManager.alter_broker_config`'s check."""
    names = [config.name for config in configs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InvalidRequestError(f"Error due to duplicate config keys : {','.join(duplicates)}")
    null_updates = [f"{config.name}" for config in configs if config.value is None and config.config_operation
                    != DELETE]
    if null_updates:
        raise InvalidRequestError(f"Null value not supported for : {','.join(null_updates)}")
    layer = ctx.admin.broker_config_layer(resource_name)
    for config in configs:
        name, operation, value = config.name, config.config_operation, config.value
        if operation == SET:
            layer[name] = value
        elif operation == DELETE:
            layer.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            key = config_key(name)
            if key is None:
                raise InvalidConfigError(f"Unknown config name: {name}")
            if key.type is not ConfigType.LIST:
                verb = "append" if operation == APPEND else "subtract"
                raise InvalidRequestError(f"Config value {verb} is not allowed for config key: {name}")
            items = [item for item in layer.get(name, "").split(",") if item]
            changes = [item.strip() for item in (value or "").split(",") if item.strip()]
            if operation == APPEND:
                items += [item for item in changes if item not in items]
            else:
                items = [item for item in items if item not in changes]
            layer[name] = ",".join(items)  # no dynamic key is a LIST: the name check refuses it
        else:
            raise InvalidRequestError(f"Unknown operations type {operation}")
    return layer


def apply_group_operations(ctx: BrokerContext, group_id: str, configs: Any) -> dict[str, str]:
    """Kafka's ConfigAdminManager.preprocess checks, then ConfigurationControlManager.incrementalAlterConfigResource
    on the group's overrides (no group config is a LIST, so APPEND/SUBTRACT are refused as Kafka does)."""
    names = [config.name for config in configs]
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    null_updates = [config.name for config in configs if config.value is None and config.config_operation != DELETE]
    if null_updates:
        raise InvalidRequestError(f"Null value not supported for : {', '.join(null_updates)}")
    overrides = ctx.admin.group_configs.overrides(group_id)
    for config in configs:
        name, operation = config.name, config.config_operation
        if operation == SET:
            overrides[name] = config.value
        elif operation == DELETE:
            overrides.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            verb = "APPEND" if operation == APPEND else "SUBTRACT"
            raise InvalidConfigError(f"Can't {verb} to key {name} because its type is not LIST.")
        else:
            raise InvalidRequestError(f"Unknown operations type {operation}")
    return overrides


def apply_client_metrics_operations(ctx: BrokerContext, name: str, configs: Any) -> dict[str, str]:
    """The incremental operations on a client-metrics subscription (`metrics` and `match` are LISTs)."""
    names = [config.name for config in configs]
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    current = ctx.admin.client_metrics.configs(name)
    for config in configs:
        key, operation = config.name, config.config_operation
        if operation == SET:
            current[key] = config.value
        elif operation == DELETE:
            current.pop(key, None)
        elif operation in (APPEND, SUBTRACT):
            definition = CLIENT_METRICS_KEYS.get(key)
            if definition is None or definition.type is not ConfigType.LIST:
                verb = "APPEND" if operation == APPEND else "SUBTRACT"
                raise InvalidConfigError(f"Can't {verb} to key {key} because its type is not LIST.")
            items = [item for item in current.get(key, "").split(",") if item]
            changes = (config.value or "").split(",")
            items = items + [c for c in changes if c not in items] if operation == APPEND else \
                [item for item in items if item not in changes]
            current[key] = ",".join(items)
        else:
            raise InvalidRequestError(f"Unknown operations type {operation}")
    return current


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    return await alter_resources(ctx, event, session, ApiKey.INCREMENTAL_ALTER_CONFIGS, apply_operations,
                                 apply_broker_operations, apply_group_operations, apply_client_metrics_operations)

"""IncrementalAlterConfigs (key 44), v0-1: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on a topic's overrides,
a BROKER resource's dynamic configs, a GROUP's or a client-metrics subscription's configs.

APPEND and SUBTRACT apply to LIST configs only and start where Kafka's controller starts: the value stored on that
resource, else the key's built-in default (a broker's `log.cleanup.policy` APPEND `compact` is `delete,compact`). No
GROUP key is a LIST, and Kafka 4.3 refuses both on CLIENT_METRICS keys too."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.dynamic_config import config_key
from minikafka.broker.handlers.alter_configs import alter_resources
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.config_def import ConfigKey, ConfigType, format_value
from minikafka.storage.log_config import TOPIC_CONFIG_DEF

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def java_split(value: str) -> list[str]:
    """Java's `value.split(",")`: empty items kept except trailing ones; "" is [""]."""
    if value == "":
        return [""]
    items = value.split(",")
    while items and items[-1] == "":
        items.pop()
    return items


def list_operation(start: str | None, operation: int, value: str) -> str:
    """Kafka's ConfigurationControlManager APPEND/SUBTRACT on a LIST config: from the non-empty items of `start`
    (the resource's stored value, else the key's default), each item of `value` appended unless present, or its
    first occurrence removed. What the result must satisfy is the resource's own validation, run afterwards."""
    items = [item for item in (start or "").split(",") if item]
    for change in java_split(value):
        if operation == APPEND and change not in items:
            items.append(change)
        elif operation == SUBTRACT and change in items:
            items.remove(change)
    return ",".join(items)


def default_text(key: ConfigKey) -> str | None:
    """A key's built-in default as its stored string (Kafka's ConfigDef.convertToString)."""
    return key.default if isinstance(key.default, str) else format_value(key, key.default)


def not_a_list(operation: int, name: str) -> InvalidConfigError:
    """Kafka's controller refusing APPEND/SUBTRACT on a key its resource type does not declare as a LIST."""
    return InvalidConfigError(f"Can't {OPERATION_NAMES[operation]} to key {name} because its type is not LIST.")


def apply_operations(ctx: BrokerContext, topic: str, configs: Any) -> dict[str, str]:
    """The topic's new overrides; APPEND/SUBTRACT start from its override, else the topic config's built-in default
    (not the broker's value: Kafka's controller reads `ConfigDef` defaults, `KafkaConfigSchema.getDefault`)."""
    overrides = ctx.admin.topic_overrides(topic)
    names = [config.name for config in configs]
    for config in configs:
        name, operation, value = config.name, config.config_operation, config.value
        if names.count(name) > 1:
            raise InvalidRequestError(f"Error due to duplicate config keys: {name}")
        key = TOPIC_CONFIG_DEF.keys.get(name)
        if operation in (APPEND, SUBTRACT):
            if value is None:
                raise InvalidRequestError(f"Null value not supported for : {name}")
            if key is None or key.type is not ConfigType.LIST:
                raise not_a_list(operation, name)
            overrides[name] = list_operation(overrides.get(name, default_text(key)), operation, value)
        elif key is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        elif operation == SET:
            if value is None:
                raise InvalidConfigError(f"Null value not supported for: {name}")
            overrides[name] = value
        elif operation == DELETE:
            overrides.pop(name, None)
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
                raise InvalidConfigError(f"Config value {OPERATION_NAMES[operation].lower()} is not allowed for "
                                         f"config key: {name}")
            layer[name] = list_operation(layer.get(name, default_text(key)), operation, value)
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
            raise not_a_list(operation, name)
        else:
            raise InvalidRequestError(f"Unknown operations type {operation}")
    return overrides


def apply_client_metrics_operations(ctx: BrokerContext, name: str, configs: Any) -> dict[str, str]:
    """SET and DELETE on a client-metrics subscription; APPEND and SUBTRACT refused as Kafka 4.3.1 refuses them."""
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
            # `metrics` and `match` are LISTs, but Kafka 4.3's controller schema (KafkaConfigSchema) has no
            # CLIENT_METRICS keys: it refuses both operations on every key
            raise not_a_list(operation, key)
        else:
            raise InvalidRequestError(f"Unknown operations type {operation}")
    return current


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    return await alter_resources(ctx, event, session, ApiKey.INCREMENTAL_ALTER_CONFIGS, apply_operations,
                                 apply_broker_operations, apply_group_operations, apply_client_metrics_operations)

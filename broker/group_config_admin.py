"""`GroupConfigAdmin`: GROUP config resources (KIP-848) for DescribeConfigs, IncrementalAlterConfigs and AlterConfigs.

Describe answers as Kafka's ConfigHelper.createGroupConfigEntry: every key of `GROUP_LEVEL_CONFIGS`, for any group
name (the group need not exist), value = the group's override or the broker's value; source GROUP_CONFIG (8) for
an override, else the source of the broker synonym (dynamic broker 2, dynamic default 3, static 4, default 5);
synonyms in that order. Alterations are validated as Kafka's ControllerConfigurationValidator does for GROUP
(`validate_group_configs` against the broker's current bounds), persisted by `GroupConfigStore`, and read by the
KIP-848 coordinator at each heartbeat (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`); the share
coordinator is told of every change through `listeners` and reads `applied_overrides` (the `share.*` keys).

Event-loop thread; alterations are serialised by `_lock`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from minikafka.broker.dynamic_config import DynamicBrokerConfig
from minikafka.broker.groups.group_config_store import GroupConfigStore
from minikafka.broker.groups.group_level_config import (
    BROKER_DEFAULTS,
    GROUP_LEVEL_CONFIGS,
    GROUP_LEVEL_KEYS,
    broker_defaults,
    validate_group_configs,
)
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.config_def import ConfigType, format_value
from minikafka.storage.log_config import SOURCE_DEFAULT_CONFIG, SOURCE_STATIC_BROKER_CONFIG, ConfigEntry

log = logging.getLogger(__name__)

SOURCE_GROUP_CONFIG = 8


class GroupConfigAdmin:
    """Describes and alters group configs; owns the `GroupConfigStore`."""

    def __init__(self, dynamic: DynamicBrokerConfig) -> None:
        self.dynamic = dynamic
        self.store = GroupConfigStore(dynamic.log_dir)
        self._lock = asyncio.Lock()
        #: called with the group id after its overrides changed (and were persisted)
        self.listeners: list[Callable[[str], None]] = []

    @property
    def broker_props(self) -> Mapping[str, str]:
        return self.dynamic.current.props

    @staticmethod
    def check_name(group_id: str | None) -> str:
        if not group_id:
            raise InvalidRequestError("Group name must not be empty")
        return group_id

    # ------------------------------------------------------------------ describe
    def describe(self, group_id: str) -> list[ConfigEntry]:
        self.check_name(group_id)
        overrides = self.store.overrides(group_id)
        fallback = broker_defaults(self.broker_props)
        entries = []
        for entry in sorted(GROUP_LEVEL_CONFIGS, key=lambda e: e.name):
            key = entry.key
            if entry.broker_synonym is not None:
                synonyms = self._broker_synonyms(entry.broker_synonym)
            else:
                synonyms = [(entry.name, format_value(key, key.default), SOURCE_DEFAULT_CONFIG)]
            value = format_value(key, fallback[entry.name])
            if entry.name in overrides:
                value = overrides[entry.name]
                synonyms.insert(0, (entry.name, value, SOURCE_GROUP_CONFIG))
            entries.append(ConfigEntry(
                name=entry.name, value=value, source=synonyms[0][2], is_sensitive=False, read_only=False,
                config_type=key.type.describe_code, documentation=key.doc, synonyms=synonyms))
        return entries

    def _broker_synonyms(self, name: str) -> list[tuple[str, str | None, int]]:
        """Kafka's configSynonyms for a broker key: the dynamic layers, server.properties, the default."""
        synonyms = self.dynamic.dynamic_synonyms(name)
        static = self.dynamic.static_config.props
        if name in static:
            synonyms.append((name, static[name], SOURCE_STATIC_BROKER_CONFIG))
        synonyms.append((name, str(BROKER_DEFAULTS[name]), SOURCE_DEFAULT_CONFIG))
        return synonyms

    # --------------------------------------------------------------------- alter
    def overrides(self, group_id: str) -> dict[str, str]:
        return self.store.overrides(self.check_name(group_id))

    async def alter(self, group_id: str, new_overrides: Mapping[str, str], validate_only: bool) -> None:
        """Replace the group's overrides after Kafka's checks (INVALID_CONFIG with its messages)."""
        self.check_name(group_id)
        null_names = [name for name, value in new_overrides.items() if value is None]
        if null_names:
            raise InvalidConfigError(f"Null value not supported for group configs: {','.join(null_names)}")
        async with self._lock:
            validate_group_configs(new_overrides, self.broker_props)
            if validate_only:
                return
            data = self.store.document(group_id, new_overrides)
            await asyncio.to_thread(self.store.persist, data)
            self.store.commit(group_id, new_overrides)
        log.info("Updated the configs of group %s: %s", group_id, dict(new_overrides))
        for listener in self.listeners:
            try:
                listener(group_id)
            except Exception:  # a listener's failure must not fail an alteration that is already persisted
                log.exception("Applying the new configs of group %s failed", group_id)

    def effective(self, group_id: str) -> dict[str, Any]:
        """Every group key's value as applied to `group_id` (overrides capped to the broker's bounds)."""
        return self.store.effective(group_id, self.broker_props)

    def applied_overrides(self, group_id: str) -> dict[str, str]:
        """The group's overrides as applied: each capped to the broker's current bounds (Kafka's
        GroupConfig.evaluate), as strings."""
        effective = self.effective(group_id)
        applied = {}
        for name, raw in self.store.overrides(group_id).items():
            text = format_value(GROUP_LEVEL_KEYS[name].key, effective[name]) if name in GROUP_LEVEL_KEYS else None
            applied[name] = raw if text is None else text
        return applied

    def group_ids(self) -> list[str]:
        """The groups that have overrides."""
        return self.store.group_ids()


def is_splittable(name: str) -> bool:
    """Whether APPEND/SUBTRACT may apply to a group config (none is a LIST in Kafka 4.3)."""
    entry = GROUP_LEVEL_KEYS.get(name)
    return entry is not None and entry.key.type is ConfigType.LIST

"""`DynamicBrokerConfig`: broker configs changed at runtime with AlterConfigs / IncrementalAlterConfigs on a BROKER
resource (`kafka-configs --alter --entity-type brokers --entity-default|--entity-name <node.id>`).

Dynamic keys are Kafka's `LogCleaner.ReconfigurableConfigs`: `log.cleaner.threads`, `log.cleaner.dedupe.buffer.size`,
`log.cleaner.io.buffer.load.factor`, `log.cleaner.io.buffer.size`, `message.max.bytes` (also the default of every
topic's `max.message.bytes`, as Kafka's DynamicLogConfig applies it), `log.cleaner.io.max.bytes.per.second` and
`log.cleaner.backoff.ms`. Any other name is refused with Kafka's "Cannot update these configs dynamically".

Kafka keeps dynamic broker configs in its metadata log; minikafka keeps them in the (first) log dir, in Java
properties files written atomically (tmp + fsync + rename, `storage.checkpoint.atomic_write`):

- `dynamic-broker-default-config.properties`: the cluster default (resource name "", `--entity-default`);
- `dynamic-broker-config.properties`: this node's own (resource name = `node.id`, `--entity-name`).

At startup they are applied over `server.properties` and `--override` in Kafka's precedence: per-broker dynamic >
dynamic default > static > built-in default. A persisted key that is no longer dynamic is ignored, and persisted
values that no longer validate against the static config are ignored as a whole, each with a warning (Kafka
also starts with the static config when a dynamic one is invalid).

Not thread-safe: the event-loop thread reads and replaces the layers; `AdminManager` serialises alterations.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path

from minikafka.broker.config import BROKER_CONFIG_DEF, KafkaConfig, load_properties
from minikafka.cleaner.config import CLEANER_CONFIG_DEF, CleanerConfig
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.checkpoint import atomic_write
from minikafka.storage.config_def import ConfigKey
from minikafka.storage.log_config import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_DYNAMIC_TOPIC_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    TOPIC_CONFIG_DEF,
    ConfigEntry,
)

log = logging.getLogger(__name__)

DYNAMIC_DEFAULT_CONFIG_FILE = "dynamic-broker-default-config.properties"
DYNAMIC_BROKER_CONFIG_FILE = "dynamic-broker-config.properties"

#: Kafka's DescribeConfigs ConfigSource ids
SOURCE_DYNAMIC_BROKER_CONFIG = 2
SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3

MESSAGE_MAX_BYTES = "message.max.bytes"
#: Kafka's LogCleaner.ReconfigurableConfigs, in its order
DYNAMIC_CONFIGS = (
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    MESSAGE_MAX_BYTES,
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
)

_HEADER = ("# minikafka dynamic broker configs ({what}), written by AlterConfigs/IncrementalAlterConfigs on a\n"
           "# BROKER resource; applied over server.properties at startup. Edit with kafka-configs, not by hand.\n")


def config_key(name: str) -> ConfigKey | None:
    """The declared key of a broker-level name (`message.max.bytes` is declared as the topic's synonym)."""
    if name == MESSAGE_MAX_BYTES:
        topic_key = TOPIC_CONFIG_DEF.keys["max.message.bytes"]
        return ConfigKey(MESSAGE_MAX_BYTES, topic_key.type, topic_key.default, topic_key.validator, topic_key.doc)
    return CLEANER_CONFIG_DEF.keys.get(name) or BROKER_CONFIG_DEF.keys.get(name)


def cleaner_config_of(props: Mapping[str, str]) -> CleanerConfig:
    """`CleanerConfig.from_props` without its cross-key check, so that a thread count of 0 is reported by
    `LogCleaner.validate_reconfiguration` with Kafka's message rather than as a dedupe-buffer split."""
    parsed = CLEANER_CONFIG_DEF.parse(props)
    return CleanerConfig(**{name.removeprefix("minikafka.").removeprefix("log.cleaner.").replace(".", "_"): value
                            for name, value in parsed.items()})


def _scala_set(names: list[str]) -> str:
    return f"Set({', '.join(names)})"


class DynamicBrokerConfig:
    """Owns the static broker props, the two dynamic layers (cluster default, this node) and their files, and the
    merged `KafkaConfig` the broker runs with (`current`)."""

    def __init__(self, static_config: KafkaConfig) -> None:
        self.static_config = static_config
        self.node_id = static_config.node_id
        self.log_dir = Path(static_config.log_dir)
        self.default_layer = self._read(DYNAMIC_DEFAULT_CONFIG_FILE)
        self.broker_layer = self._read(DYNAMIC_BROKER_CONFIG_FILE)
        self.current = static_config
        if self.default_layer or self.broker_layer:
            try:
                self.current = KafkaConfig(self.merged_props(self.default_layer, self.broker_layer))
            except InvalidConfigError as error:
                log.warning("Ignoring the dynamic broker configs %s and %s in %s: %s", self.default_layer,
                            self.broker_layer, self.log_dir, error.message)
                self.default_layer, self.broker_layer = {}, {}
            else:
                log.info("Applied dynamic broker configs: cluster default %s, node %d %s", self.default_layer,
                         self.node_id, self.broker_layer)

    def _read(self, file_name: str) -> dict[str, str]:
        path = self.log_dir / file_name
        try:
            props = load_properties(path)
        except FileNotFoundError:
            return {}
        except (OSError, InvalidConfigError) as error:
            log.warning("Ignoring unreadable dynamic broker config file %s: %s", path, error)
            return {}
        for name in [n for n in props if n not in DYNAMIC_CONFIGS]:
            log.warning("Ignoring %s in %s: it cannot be updated dynamically", name, path)
            del props[name]
        return props

    # ------------------------------------------------------------------ layers
    def merged_props(self, default_layer: Mapping[str, str], broker_layer: Mapping[str, str]) -> dict[str, str]:
        return {**self.static_config.props, **default_layer, **broker_layer}

    def is_per_broker(self, resource_name: str) -> bool:
        """"" is the cluster default; otherwise the name must be this node's id (Kafka's messages)."""
        if resource_name == "":
            return False
        try:
            node_id = int(resource_name)
        except ValueError:
            raise InvalidRequestError(f"Node id must be an integer, but it is: {resource_name}") from None
        if node_id != self.node_id:
            raise InvalidRequestError(f"Unexpected broker id, expected {self.node_id}, but received {resource_name}")
        return True

    def layer(self, per_broker: bool) -> dict[str, str]:
        return dict(self.broker_layer if per_broker else self.default_layer)

    def check_names_and_types(self, new_layer: Mapping[str, str]) -> None:
        """Kafka's DynamicBrokerConfig.validateConfigs: dynamic names only, each value of its declared type."""
        refused = sorted(name for name in new_layer if name not in DYNAMIC_CONFIGS)
        if refused:
            raise InvalidRequestError(f"Cannot update these configs dynamically: {_scala_set(refused)}")
        for name, raw in new_layer.items():
            try:
                if name == MESSAGE_MAX_BYTES:
                    TOPIC_CONFIG_DEF.validate_value("max.message.bytes", raw)
                else:
                    CLEANER_CONFIG_DEF.validate_value(name, raw)
            except InvalidConfigError as error:
                message = (error.message or "").replace("configuration max.message.bytes:",
                                                        f"configuration {MESSAGE_MAX_BYTES}:")
                raise InvalidRequestError(message) from None

    def merged_for(self, per_broker: bool, new_layer: Mapping[str, str]) -> dict[str, str]:
        """The broker props with one layer replaced by `new_layer` (whose names and types are checked first)."""
        self.check_names_and_types(new_layer)
        if per_broker:
            return self.merged_props(self.default_layer, new_layer)
        return self.merged_props(new_layer, self.broker_layer)

    @staticmethod
    def config_of(props: Mapping[str, str]) -> KafkaConfig:
        """The whole broker config from merged props; InvalidRequestError if a cross-key check fails."""
        try:
            return KafkaConfig(props)
        except InvalidConfigError as error:
            raise InvalidRequestError(f"Invalid dynamic configuration: {error.message}") from None

    def persist(self, per_broker: bool, new_layer: Mapping[str, str]) -> None:
        """Write one layer's file atomically (a worker thread's job: it fsyncs)."""
        file_name = DYNAMIC_BROKER_CONFIG_FILE if per_broker else DYNAMIC_DEFAULT_CONFIG_FILE
        what = f"node {self.node_id}" if per_broker else "cluster default"
        lines = [f"{name}={value}\n" for name, value in sorted(new_layer.items())]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self.log_dir / file_name, (_HEADER.format(what=what) + "".join(lines)).encode())

    def commit(self, per_broker: bool, new_layer: Mapping[str, str], new_config: KafkaConfig) -> None:
        """Make a persisted layer and the config merged with it current."""
        if per_broker:
            self.broker_layer = dict(new_layer)
        else:
            self.default_layer = dict(new_layer)
        self.current = new_config

    # ---------------------------------------------------------------- describe
    def dynamic_synonyms(self, name: str) -> list[tuple[str, str | None, int]]:
        synonyms: list[tuple[str, str | None, int]] = []
        if name in self.broker_layer:
            synonyms.append((name, self.broker_layer[name], SOURCE_DYNAMIC_BROKER_CONFIG))
        if name in self.default_layer:
            synonyms.append((name, self.default_layer[name], SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG))
        return synonyms

    def broker_entry(self, name: str, value: str | None, config_type: int, documentation: str,
                     default: str | None) -> ConfigEntry:
        """A per-broker DescribeConfigs entry: synonyms in Kafka's order (node, cluster default, static, default),
        source and value from the first; read-only unless the name is dynamic."""
        synonyms = self.dynamic_synonyms(name)
        if name in self.static_config.props:
            synonyms.append((name, self.static_config.props[name], SOURCE_STATIC_BROKER_CONFIG))
        synonyms.append((name, default, SOURCE_DEFAULT_CONFIG))
        dynamic = synonyms[0][2] in (SOURCE_DYNAMIC_BROKER_CONFIG, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)
        return ConfigEntry(
            name=name, value=synonyms[0][1] if dynamic else value, source=synonyms[0][2], is_sensitive=False,
            read_only=name not in DYNAMIC_CONFIGS, config_type=config_type, documentation=documentation,
            synonyms=synonyms,
        )

    def default_entries(self) -> list[ConfigEntry]:
        """DescribeConfigs of the resource "": only the cluster-default dynamic configs, as Kafka answers."""
        entries = []
        for name, value in sorted(self.default_layer.items()):
            key = config_key(name)
            entries.append(ConfigEntry(
                name=name, value=value, source=SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG, is_sensitive=False,
                read_only=False, config_type=key.type.describe_code if key else 0,
                documentation=key.doc if key else "",
                synonyms=[(name, value, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)],
            ))
        return entries

    def retag_topic_entry(self, entry: ConfigEntry) -> ConfigEntry:
        """A topic entry whose broker synonym is set dynamically: the dynamic synonyms take the place of the
        static one (which stays after them if server.properties sets it too), and the source follows."""
        synonyms: list[tuple[str, str | None, int]] = []
        for name, value, source in entry.synonyms:
            dynamic = self.dynamic_synonyms(name) if source == SOURCE_STATIC_BROKER_CONFIG else []
            synonyms.extend(dynamic)
            if not dynamic:
                synonyms.append((name, value, source))
            elif name in self.static_config.props:
                synonyms.append((name, self.static_config.props[name], source))
        source = entry.source
        if source == SOURCE_STATIC_BROKER_CONFIG:
            source = next(s for _, _, s in synonyms if s != SOURCE_DYNAMIC_TOPIC_CONFIG)
        return dataclasses.replace(entry, source=source, synonyms=synonyms)

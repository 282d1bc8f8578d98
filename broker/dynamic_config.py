"""`DynamicBrokerConfig`: broker configs changed at runtime with AlterConfigs / IncrementalAlterConfigs on a BROKER
resource (`kafka-configs --alter --entity-type brokers --entity-default|--entity-name <node.id>`).

Dynamic keys are the ones Apache Kafka 4.3 lists as dynamically updatable (`KAFKA_DYNAMIC_CONFIGS`, 99 keys); any
other name is refused with Kafka's "Cannot update these configs dynamically". Each value is checked against its
type (and minikafka's own validator where it defines the key). What happens to an accepted key:

- applied at once (`APPLIED_DYNAMIC_CONFIGS`): Kafka's `LogCleaner.ReconfigurableConfigs` (the cleaner is
  reconfigured) and the broker keys that are topic-config defaults (`message.max.bytes`, `log.retention.ms`,
  `log.segment.bytes`, `compression.type`, ...: every topic without an override picks up the new default, as Kafka's
  DynamicLogConfig does);
- every other key (listeners, connection limits, SSL/SASL settings, thread counts, Kerberos, remote storage, ...) is
  persisted and reported with its dynamic source like Kafka, and takes effect only where minikafka reads it at
  start-up (listeners, connection limits, SSL/SASL); keys minikafka has no use for (Kerberos, thread pools, remote
  storage) are stored and reported only. As in KRaft mode, `listeners` may not change what the broker advertises.

Kafka keeps dynamic broker configs in its metadata log; minikafka keeps them in the (first) log dir, in Java
properties files written atomically (tmp + fsync + rename, `storage.checkpoint.atomic_write`, mode 0600 from the
first byte since passwords may be among them, as they are in clear in Kafka's metadata log; never logged: `redacted`):

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
import re
from collections.abc import Collection, Mapping
from pathlib import Path

from minikafka.broker.config import BROKER_CONFIG_DEF, KafkaConfig, declared_broker_key, load_properties
from minikafka.broker.kafka_broker_keys import KAFKA_BROKER_KEYS, KAFKA_DYNAMIC_CONFIGS, KAFKA_STATIC_CONFIGS
from minikafka.cleaner.config import CLEANER_CONFIG_DEF, CleanerConfig
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.checkpoint import atomic_write
from minikafka.storage.config_def import ConfigKey, ConfigType, parse_value
from minikafka.storage.log_config import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_DYNAMIC_TOPIC_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    TOPIC_CONFIG_DEF,
    TOPIC_TO_BROKER_SYNONYM,
    ConfigEntry,
)

log = logging.getLogger(__name__)

DYNAMIC_DEFAULT_CONFIG_FILE = "dynamic-broker-default-config.properties"
DYNAMIC_BROKER_CONFIG_FILE = "dynamic-broker-config.properties"

#: Kafka's DescribeConfigs ConfigSource ids
SOURCE_DYNAMIC_BROKER_CONFIG = 2
SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3

MESSAGE_MAX_BYTES = "message.max.bytes"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
#: Kafka's LogCleaner.ReconfigurableConfigs, in its order
CLEANER_DYNAMIC_CONFIGS = (
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    MESSAGE_MAX_BYTES,
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
)
#: dynamic broker key -> the topic config whose default it is (Kafka's DynamicLogConfig.ReconfigurableConfigs)
TOPIC_DEFAULT_CONFIGS: dict[str, str] = {
    broker: topic for topic, broker in TOPIC_TO_BROKER_SYNONYM.items() if broker in KAFKA_DYNAMIC_CONFIGS}
#: every key Kafka 4.3 updates dynamically, sorted
DYNAMIC_CONFIGS = tuple(sorted(KAFKA_DYNAMIC_CONFIGS))
#: the dynamic keys this broker applies while it runs
APPLIED_DYNAMIC_CONFIGS = frozenset(CLEANER_DYNAMIC_CONFIGS) | frozenset(TOPIC_DEFAULT_CONFIGS)

_HEADER = ("# minikafka dynamic broker configs ({what}), written by AlterConfigs/IncrementalAlterConfigs on a\n"
           "# BROKER resource; applied over server.properties at startup. Edit with kafka-configs, not by hand.\n")


def config_key(name: str) -> ConfigKey | None:
    """The declared key of a broker-level name: minikafka's own (a topic default is declared as the topic key under
    the broker name), else Kafka's type and default of a dynamic or sensitive key."""
    if name in CLEANER_CONFIG_DEF.keys:
        return CLEANER_CONFIG_DEF.keys[name]
    if name in TOPIC_DEFAULT_CONFIGS:
        topic_key = TOPIC_CONFIG_DEF.keys[TOPIC_DEFAULT_CONFIGS[name]]
        return ConfigKey(name, topic_key.type, topic_key.default, topic_key.validator, topic_key.doc)
    if name in BROKER_CONFIG_DEF.keys:
        return BROKER_CONFIG_DEF.keys[name]
    kafka_key = KAFKA_BROKER_KEYS.get(name)
    if kafka_key is None:
        return None
    return ConfigKey(name, kafka_key.type, kafka_key.default)


#: what a sensitive value is logged as (Kafka's ConfigUtils.configMapToRedactedString)
REDACTED = "(redacted)"


def is_sensitive(name: str) -> bool:
    """Kafka's KafkaConfig.maybeSensitive(configType(name)): a PASSWORD key, or a key whose type is unknown (a
    custom key may hold anything). A per-listener override is typed as its base key, with or without the SASL
    mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config` is `sasl.jaas.config`), as
    DynamicBrokerConfig.brokerConfigSynonyms matches it. Sensitive values are never described nor logged."""
    candidates = [name]
    match = _LISTENER_PREFIX.fullmatch(name)
    if match:
        base = match.group(1)
        candidates += [base, base.partition(".")[2]]
    for candidate in candidates:
        key = KAFKA_BROKER_KEYS.get(candidate)
        if key is not None:
            return key.sensitive
        declared = declared_broker_key(candidate) or config_key(candidate)
        if declared is not None:
            return declared.type is ConfigType.PASSWORD
        if candidate in KAFKA_STATIC_CONFIGS:
            return False
    return True


def redacted(layer: Mapping[str, str]) -> dict[str, str]:
    """`layer` fit for a log line: sensitive values replaced by REDACTED."""
    return {name: REDACTED if is_sensitive(name) else value for name, value in layer.items()}


def cleaner_config_of(props: Mapping[str, str]) -> CleanerConfig:
    """`CleanerConfig.from_props` without its cross-key check, so that a thread count of 0 is reported by
    `LogCleaner.validate_reconfiguration` with Kafka's message rather than as a dedupe-buffer split."""
    parsed = CLEANER_CONFIG_DEF.parse(props)
    return CleanerConfig(**{name.removeprefix("minikafka.").removeprefix("log.cleaner.").replace(".", "_"): value
                            for name, value in parsed.items()})


def _escape(value: str) -> str:
    """A value on one properties line (PEM certificates span lines): Java's backslash escapes."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _unescape(value: str) -> str:
    out, chars = [], iter(value)
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "r": "\r"}.get(nxt, nxt))
        else:
            out.append(char)
    return "".join(out)


def _java_set(names: set[str]) -> str:
    return f"[{', '.join(sorted(names))}]"


#: Kafka's DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS: dynamic only per listener (`listener.name.<l>.<key>`)
DYNAMIC_SECURITY_CONFIGS = frozenset((
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.certificates"))
#: Kafka's PER_BROKER_CONFIGS: security and listener keys and cordoned.log.dirs, refused at the cluster default
PER_BROKER_CONFIGS = DYNAMIC_SECURITY_CONFIGS | frozenset((
    "listeners", "listener.security.protocol.map", "principal.builder.class", "ssl.protocol", "ssl.provider",
    "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation", "ssl.client.auth",
    "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds", "cordoned.log.dirs"))
#: Kafka's DynamicBrokerConfig.brokerConfigSynonyms groups, and the built-in defaults of their members (null ones
#: are not listed as synonyms, as in Kafka)
_SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {}
for _group in (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
               ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
               ("log.retention.ms", "log.retention.minutes", "log.retention.hours")):
    for _name in _group:
        _SYNONYM_GROUPS[_name] = _group
_SYNONYM_GROUPS["log.flush.scheduler.interval.ms"] = ("log.flush.scheduler.interval.ms",)
_GROUP_DEFAULTS: dict[str, str | None] = {
    "log.roll.ms": None, "log.roll.hours": "168", "log.roll.jitter.ms": None, "log.roll.jitter.hours": "0",
    "log.flush.interval.ms": None, "log.flush.scheduler.interval.ms": "9223372036854775807",
    "log.retention.ms": None, "log.retention.minutes": None, "log.retention.hours": "168"}

#: Kafka's DynamicThreadPool.ReconfigurableConfigs
THREAD_POOL_CONFIGS = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                       "background.threads", "num.network.threads")
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(("max.connections", "max.connection.creation.rate", "num.network.threads"))
_LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.(.*)")


def base_name(name: str) -> str:
    """`listener.name.<l>.<key>` -> `<key>` (a per-listener override is typed and checked as its base key)."""
    match = _LISTENER_PREFIX.fullmatch(name)
    return match.group(1) if match else name


def is_static(name: str) -> bool:
    """A broker key that cannot change at runtime: Kafka's non-dynamic KafkaConfig keys, and minikafka's own."""
    if name in DYNAMIC_CONFIGS:
        return False
    return name in KAFKA_STATIC_CONFIGS or name in BROKER_CONFIG_DEF.keys or name in CLEANER_CONFIG_DEF.keys


class DynamicBrokerConfig:
    """Owns the static broker props, the two dynamic layers (cluster default, this node) and their files, and the
    merged `KafkaConfig` the broker runs with (`current`)."""

    def __init__(self, static_config: KafkaConfig) -> None:
        self.static_config = static_config
        self.node_id = static_config.node_id
        self.broker_ids = static_config.broker_ids
        self.log_dir = Path(static_config.log_dir)
        self.default_layer = self._read(DYNAMIC_DEFAULT_CONFIG_FILE)
        self.broker_layer = self._read(DYNAMIC_BROKER_CONFIG_FILE)
        self.current = static_config
        files_ignored = False
        if self.default_layer or self.broker_layer:
            try:
                self.current = KafkaConfig(self.merged_props(self.default_layer, self.broker_layer))
            except InvalidConfigError as error:
                log.warning("Ignoring the dynamic broker configs %s and %s in %s: %s", redacted(self.default_layer),
                            redacted(self.broker_layer), self.log_dir, error.message)
                self.default_layer, self.broker_layer = {}, {}
                files_ignored = True
            else:
                log.info("Applied dynamic broker configs: cluster default %s, node %d %s", redacted(self.default_layer),
                         self.node_id, redacted(self.broker_layer))
        self._generate_elr_safety_configs(persist=not files_ignored)

    def _generate_elr_safety_configs(self, persist: bool) -> None:
        """Kafka 4.3's ConfigurationControlManager.maybeGenerateElrSafetyRecords, which its controller runs when it
        activates with eligible leader replicas on (the default since 4.1): a cluster default `min.insync.replicas`
        (the static value) where there is none, and no broker-level one. Persisted like any dynamic config, so
        DescribeConfigs reports it with source DYNAMIC_DEFAULT_BROKER_CONFIG, on topics too. Not persisted over
        files ignored as invalid (they stay for the operator to fix)."""
        if MIN_INSYNC_REPLICAS not in self.default_layer:
            value = str(TOPIC_CONFIG_DEF.validate_value(
                MIN_INSYNC_REPLICAS, self.static_config.props.get(MIN_INSYNC_REPLICAS, "1")))
            self.default_layer[MIN_INSYNC_REPLICAS] = value
            if persist:
                self.persist(False, self.default_layer)
            log.info("Generating cluster-level %s of %s.", MIN_INSYNC_REPLICAS, value)
        if MIN_INSYNC_REPLICAS in self.broker_layer:
            del self.broker_layer[MIN_INSYNC_REPLICAS]
            if persist:
                self.persist(True, self.broker_layer)
            log.info("Removing broker-level %s for brokers: %d", MIN_INSYNC_REPLICAS, self.node_id)
        self.current = KafkaConfig(self.merged_props(self.default_layer, self.broker_layer))

    def check_elr_min_insync_replicas(self, per_broker: bool, new_layer: Mapping[str, str],
                                      requested: Collection[str]) -> None:
        """Kafka 4.3's controller with ELR on: `min.insync.replicas` is only a cluster-wide setting. A broker
        resource naming it (any operation) is refused, and so is a cluster default without it."""
        if per_broker and MIN_INSYNC_REPLICAS in requested:
            raise InvalidConfigError("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
        if not per_broker and MIN_INSYNC_REPLICAS not in new_layer:
            raise InvalidConfigError("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")

    def _read(self, file_name: str) -> dict[str, str]:
        path = self.log_dir / file_name
        try:
            props = load_properties(path)
        except FileNotFoundError:
            return {}
        except (OSError, InvalidConfigError) as error:
            log.warning("Ignoring unreadable dynamic broker config file %s: %s", path, error)
            return {}
        for name in [n for n in props if is_static(n)]:
            log.warning("Ignoring %s in %s: it cannot be updated dynamically", name, path)
            del props[name]
        return {name: _unescape(value) for name, value in props.items()}

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
        if node_id not in self.broker_ids:  # one per-broker layer, shared by the brokers of this process
            raise InvalidRequestError(f"Unexpected broker id, expected {self.node_id}, but received {resource_name}")
        return True

    def layer(self, per_broker: bool) -> dict[str, str]:
        return dict(self.broker_layer if per_broker else self.default_layer)

    def check_names_and_types(self, new_layer: Mapping[str, str], per_broker: bool = True) -> None:
        """Kafka's DynamicBrokerConfig.validateConfigs: no static key, the listener-only security keys only with a
        listener prefix, each value of its declared type (and minikafka's rule where it has one), and the per-broker
        keys only on a broker id. Names neither Kafka nor minikafka knows are stored, as Kafka does."""
        static = {name for name in new_layer if is_static(name)}
        if static:
            raise InvalidRequestError(f"Cannot update these configs dynamically: {_java_set(static)}")
        unprefixed = {name for name in new_layer if name in DYNAMIC_SECURITY_CONFIGS}
        if unprefixed:
            raise InvalidRequestError("These security configs can be dynamically updated only per-listener using "
                                      f"the listener prefix: {_java_set(unprefixed)}")
        for name, raw in new_layer.items():
            self._check_type(name, raw)
        if not per_broker:
            refused = {name for name in new_layer if name in PER_BROKER_CONFIGS or (
                base_name(name) != name and base_name(name) not in _CLUSTER_LEVEL_LISTENER_CONFIGS)}
            if refused:
                raise InvalidRequestError("Cannot update these configs at default cluster level, broker id must be "
                                          f"specified: {_java_set(refused)}")

    @staticmethod
    def _check_type(name: str, raw: str) -> None:
        base = base_name(name)
        try:
            if base in CLEANER_CONFIG_DEF.keys:
                CLEANER_CONFIG_DEF.validate_value(base, raw)
            elif base in TOPIC_DEFAULT_CONFIGS:
                TOPIC_CONFIG_DEF.validate_value(TOPIC_DEFAULT_CONFIGS[base], raw)
            elif base in BROKER_CONFIG_DEF.keys:
                BROKER_CONFIG_DEF.validate_value(base, raw)
            elif (key := config_key(base)) is not None:
                parse_value(key, raw)
        except InvalidConfigError as error:
            message = error.message or ""
            if base in TOPIC_DEFAULT_CONFIGS:
                topic_name = TOPIC_DEFAULT_CONFIGS[base]
                message = message.replace(f"configuration {topic_name}:", f"configuration {base}:").replace(
                    f"Configuration '{topic_name}'", f"Configuration '{base}'")
            raise InvalidRequestError(message) from None

    def merged_for(self, per_broker: bool, new_layer: Mapping[str, str]) -> dict[str, str]:
        """The broker props with one layer replaced by `new_layer` (whose names and types are checked first)."""
        self.check_names_and_types(new_layer, per_broker)
        if per_broker:
            merged = self.merged_props(self.default_layer, new_layer)
        else:
            merged = self.merged_props(new_layer, self.broker_layer)
        self._check_thread_counts(merged)
        return merged

    def _check_thread_counts(self, merged: Mapping[str, str]) -> None:
        """Kafka's DynamicThreadPool.validateReconfiguration: a thread count changes by at most half or double.
        minikafka has no such pools; the values are stored and reported, so the rule is Kafka's."""
        for name in THREAD_POOL_CONFIGS:
            default = KAFKA_BROKER_KEYS[name].default or "1"
            old, new = int(self.current.props.get(name, default)), int(merged.get(name, default))
            if new == old:
                continue
            rule = ("value should be at least 1" if new <= 0 else
                    f"value should be at least half the current value {old}" if new < old // 2 else
                    f"value should not be greater than double the current value {old}" if new > old * 2 else None)
            if rule is not None:
                raise InvalidRequestError(
                    "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update "
                    f"validation failed for {name}={new}, {rule} for configuration Invalid dynamic configuration")

    def check_listener_registration(self, new_config: KafkaConfig) -> None:
        """Kafka's DynamicListenerConfig.validateReconfiguration in KRaft mode: the advertised listeners a broker
        registered cannot change at runtime."""
        if new_config.advertised_listeners != self.current.advertised_listeners:
            raise InvalidRequestError(
                "Invalid value org.apache.kafka.common.config.ConfigException: Advertised listeners cannot be altered "
                "when using a Raft-based metadata quorum. for configuration Invalid dynamic configuration")

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
        lines = [f"{name}={_escape(value)}\n" for name, value in sorted(new_layer.items())]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.log_dir / file_name
        atomic_write(path, (_HEADER.format(what=what) + "".join(lines)).encode(), mode=0o600)

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
        """A per-broker DescribeConfigs entry as Kafka's ConfigHelper.createBrokerConfigEntry: the synonyms of
        `name`'s group (log.retention.ms/minutes/hours, ...) from the node's layer, the cluster default,
        server.properties and the built-in defaults, dropped up to the first named `name`; source and value from the
        first; read-only unless the name is dynamic; a sensitive key's values null."""
        group = _SYNONYM_GROUPS.get(name, (name,))
        synonyms: list[tuple[str, str | None, int]] = []
        for layer, source in ((self.broker_layer, SOURCE_DYNAMIC_BROKER_CONFIG),
                              (self.default_layer, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
                              (self.static_config.props, SOURCE_STATIC_BROKER_CONFIG)):
            synonyms.extend((synonym, layer[synonym], source) for synonym in group if synonym in layer)
        for synonym in group:  # Kafka's static defaults hold only non-null ones
            built_in = _GROUP_DEFAULTS.get(synonym, default if synonym == name else None)
            if built_in is not None:
                synonyms.append((synonym, built_in, SOURCE_DEFAULT_CONFIG))
        while synonyms and synonyms[0][0] != name:
            synonyms.pop(0)
        source = synonyms[0][2] if synonyms else SOURCE_DEFAULT_CONFIG
        dynamic = source in (SOURCE_DYNAMIC_BROKER_CONFIG, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)
        if name in _GROUP_DEFAULTS and not dynamic:  # Kafka shows the key's own value (log.retention.ms=null)
            value = self.static_config.props.get(name, _GROUP_DEFAULTS[name])
        sensitive = is_sensitive(name)
        if sensitive:
            synonyms = [(synonym, None, source) for synonym, _value, source in synonyms]
        return ConfigEntry(
            name=name, value=None if sensitive else synonyms[0][1] if dynamic else value, source=source,
            is_sensitive=sensitive, read_only=name not in DYNAMIC_CONFIGS, config_type=config_type,
            documentation=documentation, synonyms=synonyms,
        )

    def kafka_key_entries(self, described: set[str]) -> list[ConfigEntry]:
        """Entries for Kafka's dynamic and sensitive broker keys minikafka does not otherwise describe (Kerberos,
        thread pools, SSL/SASL settings, ...): their dynamic, static or Kafka default values, like Kafka."""
        entries = []
        for name, key in sorted(KAFKA_BROKER_KEYS.items()):
            if name in described:
                continue
            value = self.static_config.props.get(name, key.default)
            entries.append(self.broker_entry(name, value, key.type.describe_code, "", key.default))
        # per-listener overrides and names only set dynamically (Kafka lists a config's originals too)
        for name in sorted({*self.default_layer, *self.broker_layer} - described - set(KAFKA_BROKER_KEYS)):
            declared = config_key(base_name(name))
            entries.append(self.broker_entry(name, None, declared.type.describe_code if declared else 0, "", None))
        return entries

    def default_entries(self) -> list[ConfigEntry]:
        """DescribeConfigs of the resource "": only the cluster-default dynamic configs, as Kafka answers."""
        entries = []
        for name, value in sorted(self.default_layer.items()):
            key = config_key(name)
            shown = None if is_sensitive(name) else value
            entries.append(ConfigEntry(
                name=name, value=shown, source=SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG, is_sensitive=is_sensitive(name),
                read_only=False, config_type=key.type.describe_code if key else 0,
                documentation=key.doc if key else "",
                synonyms=[(name, shown, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)],
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

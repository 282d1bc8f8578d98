"""`ConsumerGroupConfig`: the KIP-848 consumer group settings, by Apache Kafka 4's property names and defaults.

`CONSUMER_GROUP_CONFIG_DEF` joins the tables `KafkaConfig` knows; `ConsumerGroupConfig.from_props` parses
them. `group.consumer.assignors` takes Kafka's short names (`uniform`, `range`) or its class names.
Immutable; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, InvalidConfigError, at_least, in_set, list_of

_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
_ASSIGNOR_NAMES = ("uniform", "range", *_ASSIGNOR_CLASSES)

CONSUMER_GROUP_CONFIG_DEF = ConfigDef(
    [
        ConfigKey("group.coordinator.rebalance.protocols", ConfigType.LIST, ["classic", "consumer", "streams"],
                  list_of("classic", "consumer", "share", "streams"),
                  "The list of enabled rebalance protocols."),
        ConfigKey("group.consumer.session.timeout.ms", ConfigType.INT, 45_000, at_least(1),
                  "The timeout to detect client failures when using the consumer group protocol."),
        ConfigKey("group.consumer.min.session.timeout.ms", ConfigType.INT, 45_000, at_least(1),
                  "The minimum allowed session timeout for registered consumers."),
        ConfigKey("group.consumer.max.session.timeout.ms", ConfigType.INT, 60_000, at_least(1),
                  "The maximum allowed session timeout for registered consumers."),
        ConfigKey("group.consumer.heartbeat.interval.ms", ConfigType.INT, 5_000, at_least(1),
                  "The heartbeat interval given to the members of a consumer group."),
        ConfigKey("group.consumer.min.heartbeat.interval.ms", ConfigType.INT, 5_000, at_least(1),
                  "The minimum heartbeat interval for registered consumers."),
        ConfigKey("group.consumer.max.heartbeat.interval.ms", ConfigType.INT, 15_000, at_least(1),
                  "The maximum heartbeat interval for registered consumers."),
        ConfigKey("group.consumer.max.size", ConfigType.INT, 2_147_483_647, at_least(1),
                  "The maximum number of consumers that a single consumer group can accommodate."),
        ConfigKey("group.consumer.assignors", ConfigType.LIST, ["uniform", "range"], list_of(*_ASSIGNOR_NAMES),
                  "The server-side assignors; the first one is the default."),
        ConfigKey("group.consumer.migration.policy", ConfigType.STRING, "bidirectional",
                  in_set("disabled", "upgrade", "downgrade", "bidirectional"),
                  "The policy for converting between classic and consumer groups."),
    ]
)


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """Typed view of CONSUMER_GROUP_CONFIG_DEF."""

    enabled: bool = True
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2_147_483_647
    assignors: tuple[str, ...] = ("uniform", "range")
    migration_policy: str = "bidirectional"

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ConsumerGroupConfig:
        values = CONSUMER_GROUP_CONFIG_DEF.parse(props)
        session_timeout_ms = values["group.consumer.session.timeout.ms"]
        if not (values["group.consumer.min.session.timeout.ms"] <= session_timeout_ms
                <= values["group.consumer.max.session.timeout.ms"]):
            raise InvalidConfigError("group.consumer.session.timeout.ms must be within "
                                     "group.consumer.min/max.session.timeout.ms")
        heartbeat_ms = values["group.consumer.heartbeat.interval.ms"]
        if not (values["group.consumer.min.heartbeat.interval.ms"] <= heartbeat_ms
                <= values["group.consumer.max.heartbeat.interval.ms"]):
            raise InvalidConfigError("group.consumer.heartbeat.interval.ms must be within "
                                     "group.consumer.min/max.heartbeat.interval.ms")
        if heartbeat_ms >= session_timeout_ms:
            raise InvalidConfigError("group.consumer.heartbeat.interval.ms must be less than "
                                     "group.consumer.session.timeout.ms")
        names = values["group.consumer.assignors"]
        assignors = tuple(dict.fromkeys(_ASSIGNOR_CLASSES.get(name, name) for name in names))
        return cls(
            enabled="consumer" in values["group.coordinator.rebalance.protocols"],
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_ms,
            max_size=values["group.consumer.max.size"],
            assignors=assignors or ("uniform", "range"),
            migration_policy=values["group.consumer.migration.policy"],
        )

"""Group configs (KIP-848's GROUP config resource, `kafka-configs --entity-type groups`): Kafka 4.3's `GroupConfig`.

`GROUP_LEVEL_CONFIGS` is the table: each group-level key with its type, default and validator, the broker key it
falls back to (its DescribeConfigs synonym) and the broker keys that bound it. Adding a group type's configs (the
share ones with share groups, say) means adding rows here and reading them where that group type runs; describe,
alter, validation and persistence need nothing more. `GroupLevelConfigs` answers the effective value of a key for a
group given its overrides and the broker's props. Immutable tables; thread-safe.

The broker keys that minikafka itself does not define (`group.share.*`, `group.streams.*`, the assignment
intervals) take Kafka's defaults from `BROKER_DEFAULTS` unless server.properties sets them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import ConfigKey, ConfigType, ConfigValueError, at_least, in_set, parse_value

log = logging.getLogger(__name__)

#: Kafka's defaults for the broker keys group configs fall back to or are bounded by.
BROKER_DEFAULTS: dict[str, Any] = {
    "group.consumer.session.timeout.ms": 45_000,
    "group.consumer.min.session.timeout.ms": 45_000,
    "group.consumer.max.session.timeout.ms": 60_000,
    "group.consumer.heartbeat.interval.ms": 5_000,
    "group.consumer.min.heartbeat.interval.ms": 5_000,
    "group.consumer.max.heartbeat.interval.ms": 15_000,
    "group.consumer.assignment.interval.ms": 1_000,
    "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.max.assignment.interval.ms": 15_000,
    "group.share.session.timeout.ms": 45_000,
    "group.share.min.session.timeout.ms": 45_000,
    "group.share.max.session.timeout.ms": 60_000,
    "group.share.heartbeat.interval.ms": 5_000,
    "group.share.min.heartbeat.interval.ms": 5_000,
    "group.share.max.heartbeat.interval.ms": 15_000,
    "group.share.record.lock.duration.ms": 30_000,
    "group.share.min.record.lock.duration.ms": 15_000,
    "group.share.max.record.lock.duration.ms": 60_000,
    "group.share.delivery.count.limit": 5,
    "group.share.min.delivery.count.limit": 2,
    "group.share.max.delivery.count.limit": 10,
    "group.share.partition.max.record.locks": 2_000,
    "group.share.min.partition.max.record.locks": 100,
    "group.share.max.partition.max.record.locks": 4_000,
    "group.share.assignment.interval.ms": 1_000,
    "group.share.min.assignment.interval.ms": 0,
    "group.share.max.assignment.interval.ms": 15_000,
    "group.streams.session.timeout.ms": 45_000,
    "group.streams.min.session.timeout.ms": 45_000,
    "group.streams.max.session.timeout.ms": 60_000,
    "group.streams.heartbeat.interval.ms": 5_000,
    "group.streams.min.heartbeat.interval.ms": 5_000,
    "group.streams.max.heartbeat.interval.ms": 15_000,
    "group.streams.num.standby.replicas": 0,
    "group.streams.max.standby.replicas": 2,
    "group.streams.initial.rebalance.delay.ms": 3_000,
    "group.streams.assignment.interval.ms": 1_000,
    "group.streams.min.assignment.interval.ms": 0,
    "group.streams.max.assignment.interval.ms": 15_000,
}


def _share_auto_offset_reset(value: Any) -> None:
    """Kafka's ShareGroupAutoOffsetResetStrategy.Validator: earliest, latest or by_duration:<ISO-8601 duration>."""
    text = str(value).lower()
    if text in ("earliest", "latest"):
        return
    if text.startswith("by_duration:") and text[len("by_duration:"):].upper().startswith("P"):
        return
    raise ConfigValueError("Invalid value for share.auto.offset.reset. It should be one of: earliest, latest, "
                           "by_duration:PnDTnHnMn.nS.")


@dataclass(frozen=True)
class GroupLevelKey:
    """One group config: its `key` (type, default when there is no broker synonym, validator), the broker key it
    falls back to, and the broker keys bounding it (`min_key`/`max_key`). `bounded_only_when_set`: Kafka checks
    the bounds of the assignment intervals only when the group sets them."""

    key: ConfigKey
    broker_synonym: str | None = None
    min_key: str | None = None
    max_key: str | None = None
    bounded_only_when_set: bool = False

    @property
    def name(self) -> str:
        return self.key.name


def _int(name: str, synonym: str, minimum: int, doc: str, *, bounds: str | None = None,
         max_only: bool = False, when_set: bool = False) -> GroupLevelKey:
    """An INT group config whose fallback is `synonym`; `bounds` = the broker prefix of its min/max keys."""
    min_key = max_key = None
    if bounds is not None:
        prefix, _, suffix = bounds.partition("*")
        min_key = None if max_only else f"{prefix}min.{suffix}"
        max_key = f"{prefix}max.{suffix}"
    return GroupLevelKey(ConfigKey(name, ConfigType.INT, BROKER_DEFAULTS[synonym], at_least(minimum), doc),
                         synonym, min_key, max_key, when_set)


#: Kafka 4.3's GroupConfig.CONFIG_DEF, in its order (DescribeConfigs lists them sorted by name, as Kafka does).
GROUP_LEVEL_CONFIGS: tuple[GroupLevelKey, ...] = (
    _int("consumer.session.timeout.ms", "group.consumer.session.timeout.ms", 1,
         "The timeout to detect client failures when using the consumer group protocol.",
         bounds="group.consumer.*session.timeout.ms"),
    _int("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", 1,
         "The heartbeat interval given to the members of a consumer group.",
         bounds="group.consumer.*heartbeat.interval.ms"),
    _int("consumer.assignment.interval.ms", "group.consumer.assignment.interval.ms", 0,
         "The minimum interval between consumer group target assignment computations.",
         bounds="group.consumer.*assignment.interval.ms", when_set=True),
    _int("share.session.timeout.ms", "group.share.session.timeout.ms", 1,
         "The timeout to detect client failures when using the share group protocol.",
         bounds="group.share.*session.timeout.ms"),
    _int("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", 1,
         "The heartbeat interval given to the members of a share group.",
         bounds="group.share.*heartbeat.interval.ms"),
    _int("share.record.lock.duration.ms", "group.share.record.lock.duration.ms", 1000,
         "The record acquisition lock duration in milliseconds for share groups.",
         bounds="group.share.*record.lock.duration.ms"),
    _int("share.delivery.count.limit", "group.share.delivery.count.limit", 2,
         "The maximum number of delivery attempts for a record delivered to a share group.",
         bounds="group.share.*delivery.count.limit"),
    _int("share.partition.max.record.locks", "group.share.partition.max.record.locks", 100,
         "Share-group record lock limit per share-partition.",
         bounds="group.share.*partition.max.record.locks"),
    GroupLevelKey(ConfigKey("share.auto.offset.reset", ConfigType.STRING, "latest", _share_auto_offset_reset,
                            "The strategy to initialize the share-partition start offset.")),
    GroupLevelKey(ConfigKey("share.isolation.level", ConfigType.STRING, "read_uncommitted",
                            in_set("read_committed", "read_uncommitted"),
                            "Controls how to read records written transactionally.")),
    GroupLevelKey(ConfigKey("share.renew.acknowledge.enable", ConfigType.BOOLEAN, True, None,
                            "Whether the renew acknowledge type is enabled for the share group.")),
    _int("share.assignment.interval.ms", "group.share.assignment.interval.ms", 0,
         "The minimum interval between share group target assignment computations.",
         bounds="group.share.*assignment.interval.ms", when_set=True),
    _int("streams.session.timeout.ms", "group.streams.session.timeout.ms", 1,
         "The timeout to detect client failures when using the streams group protocol.",
         bounds="group.streams.*session.timeout.ms"),
    _int("streams.heartbeat.interval.ms", "group.streams.heartbeat.interval.ms", 1,
         "The heartbeat interval given to the members of a streams group.",
         bounds="group.streams.*heartbeat.interval.ms"),
    GroupLevelKey(ConfigKey("streams.num.standby.replicas", ConfigType.INT, 0, at_least(0),
                            "The number of standby replicas for each task."),
                  "group.streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
    _int("streams.initial.rebalance.delay.ms", "group.streams.initial.rebalance.delay.ms", 0,
         "The amount of time the group coordinator will wait for more streams clients to join a new group before "
         "performing the first rebalance."),
    _int("streams.assignment.interval.ms", "group.streams.assignment.interval.ms", 0,
         "The minimum interval between streams group target assignment computations.",
         bounds="group.streams.*assignment.interval.ms", when_set=True),
)
GROUP_LEVEL_KEYS: dict[str, GroupLevelKey] = {entry.name: entry for entry in GROUP_LEVEL_CONFIGS}

#: the order in which Kafka's GroupConfig.validateValues checks the broker bounds
_BOUND_CHECK_ORDER = (
    "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "consumer.assignment.interval.ms",
    "share.heartbeat.interval.ms", "share.session.timeout.ms", "share.record.lock.duration.ms",
    "share.delivery.count.limit", "share.partition.max.record.locks", "share.assignment.interval.ms",
    "streams.heartbeat.interval.ms", "streams.session.timeout.ms", "streams.num.standby.replicas",
    "streams.assignment.interval.ms",
)

#: Kafka's "session must exceed heartbeat" checks, after the bounds
_SESSION_OVER_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


def broker_value(broker_props: Mapping[str, str], name: str) -> Any:
    """A broker key's value: server.properties (or a dynamic layer) when set there, else Kafka's default."""
    default = BROKER_DEFAULTS[name]
    raw = broker_props.get(name)
    if raw is None:
        return default
    return parse_value(ConfigKey(name, ConfigType.INT), raw)


def broker_defaults(broker_props: Mapping[str, str]) -> dict[str, Any]:
    """Kafka's `extractGroupConfigMap`: each group key's value before any group override."""
    return {entry.name: broker_value(broker_props, entry.broker_synonym) if entry.broker_synonym else entry.key.default
            for entry in GROUP_LEVEL_CONFIGS}


def effective_configs(overrides: Mapping[str, str], broker_props: Mapping[str, str],
                      group_id: str = "") -> dict[str, Any]:
    """Every group key's value for a group with `overrides`, as Kafka's GroupConfig.evaluate applies them: an
    override outside the broker's current min/max (the bounds may have changed since it was set) is capped to
    them with a warning; one that does not parse falls back to the broker's value."""
    values = broker_defaults(broker_props)
    for name, raw in overrides.items():
        entry = GROUP_LEVEL_KEYS.get(name)
        if entry is None:
            continue
        try:
            value = parse_value(entry.key, raw)
        except InvalidConfigError:
            log.warning("Ignoring group %s's %s=%s: not a valid %s", group_id, name, raw, entry.key.type.name)
            continue
        if entry.min_key is not None and value < (low := broker_value(broker_props, entry.min_key)):
            log.warning("Group %s's %s=%s is below %s; using %s", group_id, name, value, entry.min_key, low)
            value = low
        if entry.max_key is not None and value > (high := broker_value(broker_props, entry.max_key)):
            log.warning("Group %s's %s=%s is above %s; using %s", group_id, name, value, entry.max_key, high)
            value = high
        values[name] = value
    return values


def validate_group_configs(overrides: Mapping[str, str], broker_props: Mapping[str, str]) -> None:
    """Kafka's GroupConfig.validate: known names, parsable values within their own range, within the broker's
    min/max, then session timeouts above heartbeat intervals. InvalidConfigError (INVALID_CONFIG) with Kafka's
    messages."""
    for name in overrides:
        if name not in GROUP_LEVEL_KEYS:
            raise InvalidConfigError(f"Unknown group config name: {name}")
    values = broker_defaults(broker_props)
    for entry in GROUP_LEVEL_CONFIGS:
        raw = overrides.get(entry.name)
        if raw is None:
            continue
        value = parse_value(entry.key, raw)
        if entry.key.validator is not None:
            try:
                entry.key.validator(value)
            except ConfigValueError as error:
                raise InvalidConfigError(f"Invalid value {raw} for configuration {entry.name}: {error}") from None
        values[entry.name] = value
    for entry in (GROUP_LEVEL_KEYS[name] for name in _BOUND_CHECK_ORDER):
        if entry.bounded_only_when_set and entry.name not in overrides:
            continue
        value = values[entry.name]
        if entry.min_key is not None and value < broker_value(broker_props, entry.min_key):
            raise InvalidConfigError(f"{entry.name} must be greater than or equal to {entry.min_key}")
        if entry.max_key is not None and value > broker_value(broker_props, entry.max_key):
            raise InvalidConfigError(f"{entry.name} must be less than or equal to {entry.max_key}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            raise InvalidConfigError(f"{session} must be greater than {heartbeat}")

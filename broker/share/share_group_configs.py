"""The share-group configs by Apache Kafka 4.3.1's names, defaults, ranges and messages: the broker's `group.share.*`
and `share.coordinator.*` settings (`SHARE_GROUP_BROKER_CONFIG_DEF`, typed by `ShareGroupBrokerConfig`), and the
per-group `share.*` configs of a GROUP config resource (`share_group_config_def`, checked against the broker's
bounds by `share_group_config`, as Kafka's GroupConfig.validate does). Immutable; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, ConfigValueError, at_least, between, in_set

if TYPE_CHECKING:
    # the share groups' own types: imported by the functions below, not with the broker config (the start path)
    from minikafka.broker.share.share_types import ShareGroupConfig

__all__ = [
    "SHARE_GROUP_BROKER_CONFIG_DEF",
    "ShareGroupBrokerConfig",
    "ShareGroupSettings",
    "share_group_config",
    "share_group_config_def",
]


def _int(name: str, default: int, validator: Any, doc: str) -> ConfigKey:
    return ConfigKey(name, ConfigType.INT, default, validator, doc)


SHARE_GROUP_BROKER_CONFIG_DEF = ConfigDef(
    [
        _int("group.share.session.timeout.ms", 45_000, at_least(1), "The timeout to detect client failures."),
        _int("group.share.min.session.timeout.ms", 45_000, at_least(1), "The minimum allowed session timeout."),
        _int("group.share.max.session.timeout.ms", 60_000, at_least(1), "The maximum allowed session timeout."),
        _int("group.share.heartbeat.interval.ms", 5_000, at_least(1), "The heartbeat interval given to the members."),
        _int("group.share.min.heartbeat.interval.ms", 5_000, at_least(1), "The minimum heartbeat interval."),
        _int("group.share.max.heartbeat.interval.ms", 15_000, at_least(1), "The maximum heartbeat interval."),
        _int("group.share.max.size", 200, between(1, 1000), "The maximum number of members of one share group."),
        _int("group.share.assignment.interval.ms", 1_000, at_least(0), "The minimum time between assignments."),
        _int("group.share.min.assignment.interval.ms", 0, at_least(0), "The minimum assignment interval."),
        _int("group.share.max.assignment.interval.ms", 15_000, at_least(0), "The maximum assignment interval."),
        _int("group.share.delivery.count.limit", 5, between(2, 10), "Deliveries of a record before it is archived."),
        _int("group.share.min.delivery.count.limit", 2, between(2, 5), "The minimum delivery count limit."),
        _int("group.share.max.delivery.count.limit", 10, between(5, 25), "The maximum delivery count limit."),
        _int(
            "group.share.record.lock.duration.ms",
            30_000,
            between(1000, 3_600_000),
            "How long a member holds acquired records before they are released.",
        ),
        _int("group.share.min.record.lock.duration.ms", 15_000, between(1000, 30_000), "The minimum lock duration."),
        _int(
            "group.share.max.record.lock.duration.ms", 60_000, between(30_000, 3_600_000), "The maximum lock duration."
        ),
        _int(
            "group.share.partition.max.record.locks",
            2000,
            between(100, 10_000),
            "Acquired records a share partition may have in flight.",
        ),
        _int("group.share.min.partition.max.record.locks", 100, between(100, 2000), "The minimum record locks."),
        _int("group.share.max.partition.max.record.locks", 4000, between(2000, 10_000), "The maximum record locks."),
        _int("group.share.max.share.sessions", 2000, at_least(1), "The maximum number of share sessions per broker."),
        _int(
            "share.coordinator.state.topic.num.partitions",
            50,
            at_least(1),
            "The number of partitions of __share_group_state.",
        ),
        _int(
            "share.coordinator.state.topic.replication.factor",
            3,
            at_least(1),
            "The replication factor of __share_group_state with several brokers (a single broker uses 1).",
        ),
        _int(
            "share.coordinator.snapshot.update.records.per.snapshot",
            500,
            at_least(0),
            "The number of ShareUpdate records the share coordinator writes between ShareSnapshot records.",
        ),
    ]
)


@dataclass(frozen=True)
class ShareGroupBrokerConfig:
    """Typed view of SHARE_GROUP_BROKER_CONFIG_DEF; `from_props` applies Kafka's cross-checks."""

    values: Mapping[str, int]

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ShareGroupBrokerConfig:
        values = SHARE_GROUP_BROKER_CONFIG_DEF.parse(props)
        for larger, smaller in (
            ("group.share.max.delivery.count.limit", "group.share.delivery.count.limit"),
            ("group.share.delivery.count.limit", "group.share.min.delivery.count.limit"),
            ("group.share.max.partition.max.record.locks", "group.share.partition.max.record.locks"),
            ("group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks"),
            ("group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms"),
            ("group.share.max.record.lock.duration.ms", "group.share.record.lock.duration.ms"),
            ("group.share.max.share.sessions", "group.share.max.size"),
        ):
            if values[larger] < values[smaller]:
                raise InvalidConfigError(f"{larger} must be greater than or equal to {smaller}")
        return cls(values)

    def __getitem__(self, name: str) -> int:
        return self.values[name]


def _auto_offset_reset(value: Any) -> None:
    from minikafka.broker.share.auto_offset_reset import ShareAutoOffsetReset

    try:
        ShareAutoOffsetReset.parse(value)
    except ValueError:
        raise ConfigValueError(
            f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
        ) from None


def share_group_config_def(broker: ShareGroupBrokerConfig) -> ConfigDef:
    """The `share.*` keys of a GROUP config resource, their defaults taken from the broker's settings."""
    return ConfigDef(
        [
            _int("share.session.timeout.ms", broker["group.share.session.timeout.ms"], at_least(1), ""),
            _int("share.heartbeat.interval.ms", broker["group.share.heartbeat.interval.ms"], at_least(1), ""),
            _int("share.record.lock.duration.ms", broker["group.share.record.lock.duration.ms"], at_least(1000), ""),
            _int("share.delivery.count.limit", broker["group.share.delivery.count.limit"], at_least(2), ""),
            _int(
                "share.partition.max.record.locks", broker["group.share.partition.max.record.locks"], at_least(100), ""
            ),
            ConfigKey(
                "share.auto.offset.reset",
                ConfigType.STRING,
                "latest",
                _auto_offset_reset,
                "The strategy to initialize the share-partition start offset.",
            ),
            ConfigKey(
                "share.isolation.level",
                ConfigType.STRING,
                "read_uncommitted",
                in_set("read_committed", "read_uncommitted"),
                "How to read records written transactionally.",
            ),
            ConfigKey(
                "share.renew.acknowledge.enable",
                ConfigType.BOOLEAN,
                True,
                None,
                "Whether the renew acknowledge type is enabled for the share group.",
            ),
            _int("share.assignment.interval.ms", broker["group.share.assignment.interval.ms"], at_least(0), ""),
        ]
    )


@dataclass(frozen=True)
class ShareGroupSettings:
    """One share group's effective settings: the SharePartition knobs and the membership timers."""

    partition: ShareGroupConfig
    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_interval_ms: int


_BOUNDS = (
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    (
        "share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    (
        "share.partition.max.record.locks",
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
    ),
)


def share_group_config(overrides: Mapping[str, str], broker: ShareGroupBrokerConfig) -> ShareGroupSettings:
    """Parse a group's `share.*` overrides and check them against the broker's bounds (Kafka's GroupConfig.validate:
    InvalidConfigError "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit").
    Keys that are not `share.*` configs are refused."""
    from minikafka.broker.share.auto_offset_reset import ShareAutoOffsetReset
    from minikafka.broker.share.share_types import IsolationLevel, ShareGroupConfig

    definition = share_group_config_def(broker)
    values = definition.parse(overrides, allow_unknown=False)
    for name, minimum, maximum in _BOUNDS:
        if values[name] < broker[minimum]:
            raise InvalidConfigError(f"{name} must be greater than or equal to {minimum}")
        if values[name] > broker[maximum]:
            raise InvalidConfigError(f"{name} must be less than or equal to {maximum}")
    if "share.assignment.interval.ms" in overrides:
        interval = values["share.assignment.interval.ms"]
        if interval < broker["group.share.min.assignment.interval.ms"]:
            raise InvalidConfigError(
                "share.assignment.interval.ms must be greater than or equal to group.share.min.assignment.interval.ms"
            )
        if interval > broker["group.share.max.assignment.interval.ms"]:
            raise InvalidConfigError(
                "share.assignment.interval.ms must be less than or equal to group.share.max.assignment.interval.ms"
            )
    partition = ShareGroupConfig(
        record_lock_duration_ms=values["share.record.lock.duration.ms"],
        delivery_count_limit=values["share.delivery.count.limit"],
        partition_max_record_locks=values["share.partition.max.record.locks"],
        renew_acknowledge_enable=values["share.renew.acknowledge.enable"],
        isolation_level=IsolationLevel(values["share.isolation.level"]),
        auto_offset_reset=ShareAutoOffsetReset.parse(values["share.auto.offset.reset"]),
    )
    return ShareGroupSettings(
        partition,
        session_timeout_ms=values["share.session.timeout.ms"],
        heartbeat_interval_ms=values["share.heartbeat.interval.ms"],
        assignment_interval_ms=values["share.assignment.interval.ms"],
    )

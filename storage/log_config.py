"""Topic-level log configuration: every Kafka 4.x topic config, its broker synonym, default and validator.

`LogConfig.from_props(overrides, broker_props)` resolves each key as topic override > broker synonym (with
Kafka's minutes/hours fallbacks) > Kafka default, then applies the cross-field rule of spec §1.4.
`LogConfig.describe()` produces DescribeConfigs entries with Kafka's source and type codes.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import (
    LONG_MAX,
    ConfigDef,
    ConfigKey,
    ConfigType,
    at_least,
    between,
    format_value,
    in_set,
    list_of,
    parse_value,
)
from minikafka.storage.topic_config_synonyms import TOPIC_TO_BROKER_SYNONYM

T = ConfigType
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIG_DEF = ConfigDef(
    [
        ConfigKey("cleanup.policy", T.LIST, ("delete",), list_of("compact", "delete"),
                  "The retention policy to use on log segments: delete and/or compact."),
        ConfigKey("compression.type", T.STRING, "producer", in_set(*_COMPRESSION_TYPES),
                  "Final compression type for a given topic."),
        ConfigKey("compression.gzip.level", T.INT, -1, None, "The compression level to use if gzip is used."),
        ConfigKey("compression.lz4.level", T.INT, 9, between(1, 17), "The compression level for lz4."),
        ConfigKey("compression.zstd.level", T.INT, 3, between(-131072, 22), "The zstd compression level."),
        ConfigKey("delete.retention.ms", T.LONG, 86_400_000, at_least(0),
                  "How long delete tombstone markers are retained for log compacted topics."),
        ConfigKey("file.delete.delay.ms", T.LONG, 60_000, at_least(0),
                  "The time to wait before deleting a file from the filesystem."),
        ConfigKey("flush.messages", T.LONG, LONG_MAX, at_least(1),
                  "Messages accumulated on a log partition before they are fsynced."),
        ConfigKey("flush.ms", T.LONG, LONG_MAX, at_least(0), "Maximum time between fsyncs of the log."),
        ConfigKey("follower.replication.throttled.replicas", T.LIST, (), None,
                  "Replicas for which log replication should be throttled on the follower side."),
        ConfigKey("index.interval.bytes", T.INT, 4096, at_least(0),
                  "How frequently Kafka adds an index entry to its offset index."),
        ConfigKey("leader.replication.throttled.replicas", T.LIST, (), None,
                  "Replicas for which log replication should be throttled on the leader side."),
        ConfigKey("local.retention.bytes", T.LONG, -2, at_least(-2),
                  "Max size of local log segments before deletion (tiered storage)."),
        ConfigKey("local.retention.ms", T.LONG, -2, at_least(-2),
                  "Time to retain local log segments before deletion (tiered storage)."),
        ConfigKey("max.compaction.lag.ms", T.LONG, LONG_MAX, at_least(1),
                  "The maximum time a message will remain ineligible for compaction in the log."),
        ConfigKey("max.message.bytes", T.INT, 1_048_588, at_least(0),
                  "The largest record batch size allowed by Kafka (after compression if enabled)."),
        ConfigKey("message.timestamp.after.max.ms", T.LONG, LONG_MAX, at_least(0),
                  "Allowable timestamp difference between a later message timestamp and the broker's time."),
        ConfigKey("message.timestamp.before.max.ms", T.LONG, LONG_MAX, at_least(0),
                  "Allowable timestamp difference between broker time and an earlier message timestamp."),
        ConfigKey("message.timestamp.type", T.STRING, "CreateTime", in_set("CreateTime", "LogAppendTime"),
                  "Whether the timestamp in the message is message create time or log append time."),
        ConfigKey("min.cleanable.dirty.ratio", T.DOUBLE, 0.5, between(0, 1),
                  "How frequently the log compactor will attempt to clean the log."),
        ConfigKey("min.compaction.lag.ms", T.LONG, 0, at_least(0),
                  "The minimum time a message will remain uncompacted in the log."),
        ConfigKey("min.insync.replicas", T.INT, 1, at_least(1),
                  "Minimum number of replicas that must acknowledge a write with acks=all."),
        ConfigKey("preallocate", T.BOOLEAN, False, None, "Preallocate the file on disk for a new segment."),
        ConfigKey("remote.log.copy.disable", T.BOOLEAN, False, None, "Disable copying to remote storage."),
        ConfigKey("remote.log.delete.on.disable", T.BOOLEAN, False, None,
                  "Delete remote data when tiered storage is disabled."),
        ConfigKey("remote.storage.enable", T.BOOLEAN, False, None, "Enable tiered storage for the topic."),
        ConfigKey("retention.bytes", T.LONG, -1, None,
                  "The maximum size a partition can grow to before old segments are discarded."),
        ConfigKey("retention.ms", T.LONG, 604_800_000, at_least(-1),
                  "The maximum time a log is retained before old segments are discarded."),
        ConfigKey("segment.bytes", T.INT, 1_073_741_824, at_least(14), "The segment file size for the log."),
        ConfigKey("segment.index.bytes", T.INT, 10_485_760, at_least(4),
                  "The size of the index that maps offsets to file positions."),
        ConfigKey("segment.jitter.ms", T.LONG, 0, at_least(0),
                  "The maximum random jitter subtracted from the scheduled segment roll time."),
        ConfigKey("segment.ms", T.LONG, 604_800_000, at_least(1),
                  "The period of time after which Kafka will force the log to roll."),
        ConfigKey("unclean.leader.election.enable", T.BOOLEAN, False, None,
                  "Enable replicas not in the ISR to be elected as leader as a last resort."),
    ]
)


# All broker synonyms in priority order with the factor that converts the broker unit to the topic unit.
BROKER_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    topic: ((broker, 1),) for topic, broker in TOPIC_TO_BROKER_SYNONYM.items()
}
BROKER_SYNONYMS["retention.ms"] = (
    ("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000))
BROKER_SYNONYMS["segment.ms"] = (("log.roll.ms", 1), ("log.roll.hours", 3_600_000))
BROKER_SYNONYMS["segment.jitter.ms"] = (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000))
BROKER_SYNONYMS["flush.ms"] = (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1))

SOURCE_DYNAMIC_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5


@dataclass
class ConfigEntry:
    """One DescribeConfigs result entry (Kafka's source and config_type codes)."""

    name: str
    value: str | None
    source: int
    is_sensitive: bool
    read_only: bool
    config_type: int
    documentation: str
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)


def _attr(name: str) -> str:
    return name.replace(".", "_")


def _broker_value(topic_key: ConfigKey, broker_props: Mapping[str, str]) -> tuple[str, str, Any] | None:
    """(broker key, raw broker value, value in the topic's unit) of the first broker synonym that is set."""
    for broker_name, factor in BROKER_SYNONYMS.get(topic_key.name, ()):
        raw = broker_props.get(broker_name)
        if raw is None:
            continue
        try:
            value = parse_value(topic_key, raw)
        except InvalidConfigError as error:
            raise InvalidConfigError(error.message.replace(f"configuration {topic_key.name}:",
                                                           f"configuration {broker_name}:")) from None
        if factor != 1:
            value = value * factor
        if topic_key.name == "retention.ms" and value < 0:
            value = -1  # the broker treats any negative retention as unlimited
        return broker_name, raw, value
    return None


@dataclass(frozen=True)
class LogConfig:
    """Resolved configuration of one topic's partitions; immutable and therefore thread-safe."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = 86_400_000
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    index_interval_bytes: int = 4096
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_storage_enable: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    segment_bytes: int = 1_073_741_824
    segment_index_bytes: int = 10_485_760
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False

    # ----------------------------------------------------------------- derived
    # Cached (in the instance's __dict__, which a frozen dataclass allows): every Produce asks, and the generator
    # over the policy list was ~2% of the broker's produce CPU.
    @cached_property
    def compact(self) -> bool:
        return "compact" in (p.lower() for p in self.cleanup_policy)

    @cached_property
    def delete(self) -> bool:
        return "delete" in (p.lower() for p in self.cleanup_policy)

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @cached_property
    def max_segment_ms(self) -> int:
        """Roll interval: min(segment.ms, max.compaction.lag.ms) for compacted topics (KIP-354)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    def random_segment_jitter_ms(self) -> int:
        """Kafka's randomSegmentJitter: drawn once per segment from [0, min(segment.jitter.ms, maxSegmentMs))."""
        bound = min(self.segment_jitter_ms, self.max_segment_ms)
        return random.randrange(bound) if bound > 0 else 0

    def get(self, name: str) -> Any:
        """The value of a topic config by its Kafka name."""
        return getattr(self, _attr(name))

    # ----------------------------------------------------------- constructors
    @classmethod
    def from_props(cls, overrides: Mapping[str, str], broker_props: Mapping[str, str] | None = None,
                   *, allow_unknown: bool = False) -> LogConfig:
        """Topic override > broker synonym > Kafka default; raises InvalidConfigError."""
        broker_props = broker_props or {}
        values: dict[str, Any] = {}
        for name, key in TOPIC_CONFIG_DEF.keys.items():
            if name in overrides:
                values[_attr(name)] = TOPIC_CONFIG_DEF.validate_value(name, overrides[name])
                continue
            from_broker = _broker_value(key, broker_props)
            if from_broker is not None:
                TOPIC_CONFIG_DEF._check(key, from_broker[2], from_broker[1], reported_name=from_broker[0])
                values[_attr(name)] = from_broker[2]
            else:
                values[_attr(name)] = key.default
        if not allow_unknown:
            for name in overrides:
                if name not in TOPIC_CONFIG_DEF:
                    raise InvalidConfigError(f"Unknown topic config name: {name}")
        config = cls(**values)
        config._validate_cross_field()
        return config

    def _validate_cross_field(self) -> None:
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms}) > "
                f"max.compaction.lag.ms ({self.max_compaction_lag_ms})"
            )
        if self.remote_storage_enable and self.compact:
            raise InvalidConfigError(
                "Remote log storage only supports topics with cleanup.policy=delete")

    @classmethod
    def validate_overrides(
        cls, overrides: Mapping[str, str], broker_props: Mapping[str, str] | None = None
    ) -> None:
        """Raise InvalidConfigError for an unknown key, a bad value or a cross-field conflict."""
        cls.from_props(overrides, broker_props or {})

    def with_overrides(self, **changes: Any) -> LogConfig:
        """A copy with attributes replaced (tests and the cleaner)."""
        return dataclasses.replace(self, **changes)

    @staticmethod
    def describe(
        overrides: Mapping[str, str], broker_props: Mapping[str, str] | None = None
    ) -> list[ConfigEntry]:
        """DescribeConfigs entries for every topic config, with synonyms in Kafka's precedence order."""
        broker_props = broker_props or {}
        entries: list[ConfigEntry] = []
        for name, key in TOPIC_CONFIG_DEF.keys.items():
            synonyms: list[tuple[str, str | None, int]] = []
            override = overrides.get(name)
            if override is not None and key.type is T.LIST:
                # as Kafka parses it: items trimmed, a ValidList's duplicates dropped
                override = format_value(key, TOPIC_CONFIG_DEF.validate_value(name, override))
            if override is not None:
                synonyms.append((name, override, SOURCE_DYNAMIC_TOPIC_CONFIG))
            for broker_name, _factor in BROKER_SYNONYMS.get(name, ()):
                if broker_name in broker_props:
                    synonyms.append((broker_name, broker_props[broker_name], SOURCE_STATIC_BROKER_CONFIG))
            if name in TOPIC_TO_BROKER_SYNONYM:  # Kafka lists a default only under a broker synonym
                synonyms.append((TOPIC_TO_BROKER_SYNONYM[name], format_value(key, key.default), SOURCE_DEFAULT_CONFIG))
            if override is not None:
                value: str | None = override.strip()
                source = SOURCE_DYNAMIC_TOPIC_CONFIG
            else:
                from_broker = _broker_value(key, broker_props)
                if from_broker is not None:
                    value, source = format_value(key, from_broker[2]), SOURCE_STATIC_BROKER_CONFIG
                else:
                    value, source = format_value(key, key.default), SOURCE_DEFAULT_CONFIG
            sensitive = key.type is ConfigType.PASSWORD
            entries.append(ConfigEntry(
                name=name, value=None if sensitive else value, source=source, is_sensitive=sensitive,
                read_only=False, config_type=key.type.describe_code, documentation=key.doc, synonyms=synonyms,
            ))
        return entries

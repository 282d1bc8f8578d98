"""`GroupConfig`: the group coordinator's broker settings, by Apache Kafka's property names and defaults.

`GROUP_CONFIG_DEF` is the table `KafkaConfig` consults for these keys; `GroupConfig.from_props` parses and
validates them. Immutable; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least, between

GROUP_CONFIG_DEF = ConfigDef(
    [
        ConfigKey(
            "group.min.session.timeout.ms",
            ConfigType.INT,
            6_000,
            None,
            "The minimum allowed session timeout for registered consumers.",
        ),
        ConfigKey(
            "group.max.session.timeout.ms",
            ConfigType.INT,
            1_800_000,
            None,
            "The maximum allowed session timeout for registered consumers.",
        ),
        ConfigKey(
            "group.max.size",
            ConfigType.INT,
            2_147_483_647,
            at_least(1),
            "The maximum number of consumers that a single consumer group can accommodate.",
        ),
        ConfigKey(
            "group.initial.rebalance.delay.ms",
            ConfigType.INT,
            3_000,
            None,
            "How long the coordinator waits for more members to join a new group before the first rebalance.",
        ),
        ConfigKey(
            "offsets.topic.num.partitions",
            ConfigType.INT,
            50,
            at_least(1),
            "The number of partitions for the offset commit topic.",
        ),
        ConfigKey(
            "offsets.topic.replication.factor",
            ConfigType.SHORT,
            3,
            at_least(1),
            "The replication factor of __consumer_offsets with several brokers (a single broker uses 1).",
        ),
        ConfigKey(
            "offsets.topic.segment.bytes",
            ConfigType.INT,
            104_857_600,
            at_least(1),
            "The offsets topic segment bytes.",
        ),
        ConfigKey(
            "offsets.topic.compression.codec",
            ConfigType.INT,
            0,
            between(0, 4),
            "Compression codec for the offsets topic.",
        ),
        ConfigKey(
            "offsets.load.buffer.size",
            ConfigType.INT,
            5_242_880,
            at_least(1),
            "Batch size for reading from the offsets segments when loading offsets into the cache.",
        ),
        ConfigKey(
            "offsets.retention.minutes",
            ConfigType.INT,
            10_080,
            at_least(1),
            "For subscribed consumers, committed offsets are deleted after the group loses all its "
            "consumers and this retention period passes; for standalone consumers, after the last commit.",
        ),
        ConfigKey(
            "offsets.retention.check.interval.ms",
            ConfigType.LONG,
            600_000,
            at_least(1),
            "Frequency at which to check for stale offsets.",
        ),
        ConfigKey(
            "offset.metadata.max.bytes",
            ConfigType.INT,
            4_096,
            None,
            "The maximum size for a metadata entry associated with an offset commit.",
        ),
        ConfigKey(
            "offsets.commit.timeout.ms",
            ConfigType.INT,
            5_000,
            at_least(1),
            "Offset commits are delayed until all replicas receive the commit or this timeout is reached.",
        ),
        ConfigKey(
            "offsets.commit.required.acks",
            ConfigType.SHORT,
            -1,
            None,
            "The required acks before the commit can be accepted.",
        ),
    ]
)


@dataclass(frozen=True)
class GroupConfig:
    """Typed view of GROUP_CONFIG_DEF."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2_147_483_647
    initial_rebalance_delay_ms: int = 3_000
    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 104_857_600
    offsets_load_buffer_size: int = 5_242_880
    offsets_retention_ms: int = 10_080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    offsets_commit_timeout_ms: int = 5_000

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> GroupConfig:
        values = GROUP_CONFIG_DEF.parse(props)
        return cls(
            min_session_timeout_ms=values["group.min.session.timeout.ms"],
            max_session_timeout_ms=values["group.max.session.timeout.ms"],
            max_size=values["group.max.size"],
            initial_rebalance_delay_ms=values["group.initial.rebalance.delay.ms"],
            offsets_topic_num_partitions=values["offsets.topic.num.partitions"],
            offsets_topic_segment_bytes=values["offsets.topic.segment.bytes"],
            offsets_load_buffer_size=values["offsets.load.buffer.size"],
            offsets_retention_ms=values["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=values["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=values["offset.metadata.max.bytes"],
            offsets_commit_timeout_ms=values["offsets.commit.timeout.ms"],
        )

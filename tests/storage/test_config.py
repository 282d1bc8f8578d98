"""ConfigDef parsing/validation messages and LogConfig resolution/describe."""

from __future__ import annotations

import pytest

from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least, between, in_set, list_of
from minikafka.storage.log_config import TOPIC_CONFIG_DEF, TOPIC_TO_BROKER_SYNONYM, LogConfig

EXPECTED_TOPIC_KEYS = {
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "index.interval.bytes", "max.compaction.lag.ms", "max.message.bytes",
    "message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms",
    "segment.ms", "unclean.leader.election.enable", "remote.storage.enable",
}


def test_defaults_match_kafka() -> None:
    config = LogConfig.from_props({})
    assert set(TOPIC_CONFIG_DEF.names()) >= EXPECTED_TOPIC_KEYS
    assert config.cleanup_policy == ("delete",) and not config.compact and config.delete
    assert config.segment_bytes == 1_073_741_824 and config.segment_ms == 604_800_000
    assert config.max_message_bytes == 1_048_588 and config.retention_bytes == -1
    assert config.max_compaction_lag_ms == 2**63 - 1 and config.min_cleanable_dirty_ratio == 0.5
    assert config.delete_retention_ms == 86_400_000 and config.index_interval_bytes == 4096
    assert config == LogConfig()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"segment.bytes": "-5"}, "Invalid value -5 for configuration segment.bytes: Value must be at least 14"),
        ({"segment.bytes": "abc"}, "Invalid value abc for configuration segment.bytes: Not a number of type INT"),
        ({"segment.bytes": "3000000000"}, "Not a number of type INT"),
        ({"cleanup.policy": "compact,bogus"},
         "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"),
        ({"cleanup.policy": "delete,,compact"}, "Configuration 'cleanup.policy' values must not be empty."),
        ({"cleanup.policy": "delete,"}, "Configuration 'cleanup.policy' values must not be empty."),
        ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio: Value must be no more than 1"),
        ({"max.compaction.lag.ms": "0"}, "max.compaction.lag.ms: Value must be at least 1"),
        ({"preallocate": "yes"}, "Expected value to be either true or false"),
        ({"message.timestamp.type": "Now"}, "String must be one of: CreateTime, LogAppendTime"),
        ({"compression.type": "brotli"}, "compression.type"),
        ({"min.compaction.lag.ms": "200", "max.compaction.lag.ms": "100"},
         "conflict topic config setting min.compaction.lag.ms (200) > max.compaction.lag.ms (100)"),
        ({"unknown.key": "1"}, "unknown.key"),
    ],
)
def test_validation_messages(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as excinfo:
        LogConfig.validate_overrides(overrides)
    assert message in str(excinfo.value)


def test_parsing_rules() -> None:
    config = LogConfig.from_props({"cleanup.policy": " delete , compact ", "preallocate": "TRUE",
                                   "min.cleanable.dirty.ratio": "0.1"})
    assert config.cleanup_policy == ("delete", "compact") and config.compact and config.delete
    assert config.preallocate is True and config.min_cleanable_dirty_ratio == 0.1
    assert LogConfig.from_props({"cleanup.policy": ""}).cleanup_policy == ()
    # Kafka 4.3 drops a ValidList's duplicate items before validating
    assert LogConfig.from_props({"cleanup.policy": "compact, delete,compact"}).cleanup_policy == ("compact", "delete")


def test_describe_shows_a_list_override_as_parsed() -> None:
    entries = {e.name: e for e in LogConfig.describe({"cleanup.policy": "delete,compact, delete"})}
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source) == ("delete,compact", 1)
    assert policy.synonyms == [("cleanup.policy", "delete,compact", 1), ("log.cleanup.policy", "delete", 5)]
    # a topic config without a broker synonym lists no DEFAULT_CONFIG synonym, as Kafka
    assert entries["leader.replication.throttled.replicas"].synonyms == []


def test_broker_synonyms_and_fallbacks() -> None:
    assert TOPIC_TO_BROKER_SYNONYM["segment.bytes"] == "log.segment.bytes"
    assert TOPIC_TO_BROKER_SYNONYM["cleanup.policy"] == "log.cleanup.policy"
    broker = {"log.retention.hours": "2", "log.segment.bytes": "5000", "log.cleanup.policy": "compact"}
    config = LogConfig.from_props({}, broker)
    assert config.retention_ms == 7_200_000 and config.segment_bytes == 5000 and config.compact
    assert LogConfig.from_props({}, {"log.retention.minutes": "3", "log.retention.hours": "1"}).retention_ms == 180_000
    assert LogConfig.from_props({}, {"log.retention.ms": "-7"}).retention_ms == -1
    assert LogConfig.from_props({"segment.bytes": "1000"}, broker).segment_bytes == 1000  # topic wins
    assert LogConfig.from_props({}, {"log.roll.hours": "1"}).segment_ms == 3_600_000


def test_max_segment_ms_for_compacted_topics() -> None:
    assert LogConfig.from_props({"segment.ms": "5000", "max.compaction.lag.ms": "100"}).max_segment_ms == 5000
    compacted = LogConfig.from_props({"cleanup.policy": "compact", "segment.ms": "5000",
                                      "max.compaction.lag.ms": "100"})
    assert compacted.max_segment_ms == 100


def test_describe_sources_and_synonyms() -> None:
    entries = {e.name: e for e in LogConfig.describe({"segment.bytes": "2000"}, {"log.retention.hours": "1"})}
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source, segment.config_type) == ("2000", 1, 3)
    assert segment.synonyms[0] == ("segment.bytes", "2000", 1)
    assert segment.synonyms[-1] == ("log.segment.bytes", "1073741824", 5)
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.config_type) == ("3600000", 4, 5)
    assert ("log.retention.hours", "1", 4) in retention.synonyms
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source, policy.config_type) == ("delete", 5, 7)
    assert entries["preallocate"].value == "false" and entries["preallocate"].config_type == 1
    assert entries["min.cleanable.dirty.ratio"].config_type == 6
    assert not any(e.read_only or e.is_sensitive for e in entries.values())


def test_config_def_generic() -> None:
    table = ConfigDef([
        ConfigKey("a.int", ConfigType.INT, 5, at_least(0)),
        ConfigKey("b.double", ConfigType.DOUBLE, 0.5, between(0, 1)),
        ConfigKey("c.list", ConfigType.LIST, ("x",), list_of("x", "y")),
        ConfigKey("d.string", ConfigType.STRING, "p", in_set("p", "q")),
        ConfigKey("e.password", ConfigType.PASSWORD, None),
        ConfigKey("f.long", ConfigType.LONG, 1),
    ])
    parsed = table.parse({"a.int": " 7 ", "c.list": "y,x", "f.long": "9223372036854775807", "zzz": "1"})
    assert parsed == {"a.int": 7, "b.double": 0.5, "c.list": ("y", "x"), "d.string": "p",
                      "e.password": None, "f.long": 2**63 - 1}
    with pytest.raises(InvalidConfigError, match="Unknown configuration zzz"):
        table.parse({"zzz": "1"}, allow_unknown=False)
    with pytest.raises(InvalidConfigError, match=r"Invalid value -1 for configuration a\.int: Value must be at least"):
        table.parse({"a.int": "-1"})
    with pytest.raises(InvalidConfigError, match="Not a number of type LONG"):
        table.parse({"f.long": "9223372036854775808"})
    with pytest.raises(InvalidConfigError, match="Missing required configuration"):
        ConfigDef([ConfigKey("req", ConfigType.INT)]).parse({})

"""confluent-kafka AdminClient against the broker: topics, partitions, describe/alter/incrementally alter configs,
INVALID_CONFIG with Kafka's message, and topic configs that survive a restart."""

from __future__ import annotations

import re
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)
TIMEOUT_S = 30


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=TIMEOUT_S)
    error: KafkaError = raised.value.args[0]
    return error


def _topic_configs(admin: AdminClient, topic: str) -> dict[str, Any]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries: dict[str, Any] = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
    return entries


def _partition_count(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic=topic, timeout=TIMEOUT_S).topics[topic].partitions)


def _create(admin: AdminClient, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])
    futures[topic].result(timeout=TIMEOUT_S)


def test_create_and_delete_topics(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _create(admin, "created", 2)
    assert _partition_count(admin, "created") == 2

    error = _error_of(admin.create_topics([NewTopic("created", 2, 1)])["created"])
    assert error.code() == KafkaError.TOPIC_ALREADY_EXISTS
    error = _error_of(admin.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"])
    assert error.code() == KafkaError.TOPIC_EXCEPTION  # INVALID_TOPIC_EXCEPTION (17)

    admin.delete_topics(["created"])["created"].result(timeout=TIMEOUT_S)
    assert "created" not in admin.list_topics(timeout=TIMEOUT_S).topics
    error = _error_of(admin.delete_topics(["created"])["created"])
    assert error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert not any(path.name.startswith("created-") and not path.name.endswith("-delete")
                   for path in broker.data_dir.iterdir()), "partition directories left behind"


def test_create_partitions_grows_and_rejects_shrinking(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _create(admin, "growing", 2)
    admin.create_partitions([NewPartitions("growing", 5)])["growing"].result(timeout=TIMEOUT_S)
    assert _partition_count(admin, "growing") == 5
    error = _error_of(admin.create_partitions([NewPartitions("growing", 3)])["growing"])
    assert error.code() == KafkaError.INVALID_PARTITIONS
    assert _partition_count(admin, "growing") == 5


def test_describe_topic_and_broker_configs(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _create(admin, "described", 1, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"})
    entries = _topic_configs(admin, "described")
    assert entries["cleanup.policy"].value == "compact"
    assert entries["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["min.compaction.lag.ms"].value == "60000"
    assert entries["retention.ms"].value == "604800000"
    assert entries["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    for name in ("segment.bytes", "max.message.bytes", "min.cleanable.dirty.ratio", "max.compaction.lag.ms",
                 "delete.retention.ms", "segment.ms"):
        assert name in entries, f"{name} not described"

    broker_id = admin.list_topics(timeout=TIMEOUT_S).controller_id
    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    broker_entries = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
    assert broker_entries["auto.create.topics.enable"].value == "true"
    assert "log.retention.hours" in broker_entries or "log.retention.ms" in broker_entries


def test_alter_configs_replaces_the_topic_config_set(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _create(admin, "altered", 1, {"cleanup.policy": "compact"})
    resource = ConfigResource(ResourceType.TOPIC, "altered", set_config={"retention.ms": "3600000"})
    with pytest.warns(DeprecationWarning, match="alter_configs has been deprecated"):  # the legacy API on purpose
        futures = admin.alter_configs([resource])
    futures[resource].result(timeout=TIMEOUT_S)
    entries = _topic_configs(admin, "altered")
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].value == "delete", "legacy AlterConfigs must replace the whole set"


def test_incremental_alter_configs_set_and_delete(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _create(admin, "incremental", 1, {"cleanup.policy": "compact"})
    resource = ConfigResource(ResourceType.TOPIC, "incremental", incremental_configs=[
        ConfigEntry("min.cleanable.dirty.ratio", "0.1", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    admin.incremental_alter_configs([resource])[resource].result(timeout=TIMEOUT_S)
    entries = _topic_configs(admin, "incremental")
    assert entries["min.cleanable.dirty.ratio"].value == "0.1"
    assert entries["cleanup.policy"].value == "delete", "DELETE did not revert to the default"


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("min.cleanable.dirty.ratio", "2.0", r"no more than 1|at most 1|between|\[0"),
        ("segment.bytes", "-5", r"at least 14"),
        ("cleanup.policy", "shred", r"delete|compact|one of|valid"),
    ],
)
def test_invalid_config_value_is_rejected_with_invalid_config_naming_key_value_and_rule(
    broker: BrokerProcess, name: str, value: str, rule: str
) -> None:
    admin = _admin(broker)
    _create(admin, "strict", 1)
    resource = ConfigResource(ResourceType.TOPIC, "strict", incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    error = _error_of(admin.incremental_alter_configs([resource])[resource])
    assert error.code() == KafkaError.INVALID_CONFIG
    message = error.str()
    assert name in message and value in message and re.search(rule, message), message
    assert name not in _topic_configs(admin, "strict") or _topic_configs(admin, "strict")[name].value != value

    error = _error_of(admin.create_topics([NewTopic("strict-new", 1, 1, config={name: value})])["strict-new"])
    assert error.code() == KafkaError.INVALID_CONFIG
    assert name in error.str()
    assert "strict-new" not in admin.list_topics(timeout=TIMEOUT_S).topics


def test_max_compaction_lag_below_min_lag_is_invalid_config(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    error = _error_of(admin.create_topics([NewTopic("lags", 1, 1, config={
        "min.compaction.lag.ms": "60000", "max.compaction.lag.ms": "1000"})])["lags"])
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "compaction.lag.ms" in error.str()


def test_topic_configs_and_partitions_survive_a_restart(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _create(admin, "durable", 3, {"cleanup.policy": "compact", "segment.bytes": "1048576"})
    resource = ConfigResource(ResourceType.TOPIC, "durable", incremental_configs=[
        ConfigEntry("max.compaction.lag.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=TIMEOUT_S)
    admin.create_partitions([NewPartitions("durable", 4)])["durable"].result(timeout=TIMEOUT_S)

    broker.restart()
    admin = _admin(broker)
    entries = _topic_configs(admin, "durable")
    assert entries["cleanup.policy"].value == "compact"
    assert entries["segment.bytes"].value == "1048576"
    assert entries["max.compaction.lag.ms"].value == "7200000"
    assert _partition_count(admin, "durable") == 4

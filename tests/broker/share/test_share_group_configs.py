"""Share-group configs with Kafka 4.3.1's names, defaults, ranges and messages (GroupConfigTest/ShareGroupConfigTest
cases): the broker's group.share.* settings and a group's share.* overrides checked against them."""

from __future__ import annotations

import re

import pytest

from minikafka.broker.share.share_group_configs import ShareGroupBrokerConfig, share_group_config
from minikafka.broker.share.share_types import IsolationLevel
from minikafka.protocol.errors import InvalidConfigError

BROKER = ShareGroupBrokerConfig.from_props({})


def test_defaults_are_kafkas() -> None:
    settings = share_group_config({}, BROKER)
    assert (settings.session_timeout_ms, settings.heartbeat_interval_ms, settings.assignment_interval_ms) == (
        45_000,
        5_000,
        1_000,
    )
    config = settings.partition
    assert (config.record_lock_duration_ms, config.delivery_count_limit, config.partition_max_record_locks) == (
        30_000,
        5,
        2000,
    )
    assert (config.auto_offset_reset.strategy, config.isolation_level, config.renew_acknowledge_enable) == (
        "latest",
        IsolationLevel.READ_UNCOMMITTED,
        True,
    )
    assert BROKER["group.share.max.size"] == 200 and BROKER["group.share.max.share.sessions"] == 2000
    assert BROKER["share.coordinator.snapshot.update.records.per.snapshot"] == 500


def test_group_overrides() -> None:
    settings = share_group_config(
        {
            "share.auto.offset.reset": "by_duration:PT10M",
            "share.isolation.level": "read_committed",
            "share.delivery.count.limit": "3",
            "share.record.lock.duration.ms": "15000",
        },
        BROKER,
    )
    assert settings.partition.auto_offset_reset.duration_ms == 600_000
    assert settings.partition.isolation_level is IsolationLevel.READ_COMMITTED
    assert (settings.partition.delivery_count_limit, settings.partition.record_lock_duration_ms) == (3, 15_000)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"share.delivery.count.limit": "11"},
            "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit",
        ),
        ({"share.delivery.count.limit": "1"}, "Invalid value 1 for configuration share.delivery.count.limit"),
        (
            {"share.record.lock.duration.ms": "14999"},
            "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms",
        ),
        (
            {"share.record.lock.duration.ms": "60001"},
            "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms",
        ),
        (
            {"share.partition.max.record.locks": "4001"},
            "share.partition.max.record.locks must be less than or equal to group.share.max.partition.max.record.locks",
        ),
        (
            {"share.session.timeout.ms": "44999"},
            "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms",
        ),
        (
            {"share.heartbeat.interval.ms": "15001"},
            "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms",
        ),
        (
            {"share.assignment.interval.ms": "15001"},
            "share.assignment.interval.ms must be less than or equal to group.share.max.assignment.interval.ms",
        ),
        ({"share.auto.offset.reset": "none"}, "The value must be either 'earliest', 'latest' or of the format"),
        ({"share.isolation.level": "READ_COMMITTED"}, "Invalid value READ_COMMITTED for configuration share.isolation"),
        ({"share.renew.acknowledge.enable": "yes"}, "Expected value to be either true or false"),
        ({"consumer.session.timeout.ms": "45000"}, "Unknown configuration consumer.session.timeout.ms"),
    ],
)
def test_bad_group_overrides_are_refused(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        share_group_config(overrides, BROKER)


def test_broker_cross_checks() -> None:
    with pytest.raises(
        InvalidConfigError,
        match=re.escape("group.share.max.share.sessions must be greater than or equal to group.share.max.size"),
    ):
        ShareGroupBrokerConfig.from_props({"group.share.max.share.sessions": "100"})
    with pytest.raises(
        InvalidConfigError, match=re.escape("Invalid value 11 for configuration group.share.delivery.count.limit")
    ):
        ShareGroupBrokerConfig.from_props({"group.share.delivery.count.limit": "11"})
    wider = ShareGroupBrokerConfig.from_props({"group.share.max.delivery.count.limit": "20"})
    assert share_group_config({"share.delivery.count.limit": "20"}, wider).partition.delivery_count_limit == 20

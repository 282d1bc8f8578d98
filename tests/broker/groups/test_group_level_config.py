"""Group configs (Kafka 4.3's GroupConfig): validation against the broker's bounds, the effective values applied to
a group, and the store's file across a reload. Kafka's describe/alter answers themselves are compared side by side
in tests/interop/test_group_configs_cli.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.groups.group_config_store import GroupConfigStore
from minikafka.broker.groups.group_level_config import (
    _BOUND_CHECK_ORDER,
    GROUP_LEVEL_CONFIGS,
    effective_configs,
    validate_group_configs,
)
from minikafka.protocol.errors import InvalidConfigError


def test_every_bounded_key_is_checked() -> None:
    bounded = {entry.name for entry in GROUP_LEVEL_CONFIGS if entry.min_key or entry.max_key}
    assert bounded == set(_BOUND_CHECK_ORDER)


@pytest.mark.parametrize(("overrides", "broker", "message"), [
    ({"consumer.session.timeout.ms": "50000"}, {"group.consumer.max.session.timeout.ms": "48000"},
     "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
    ({"consumer.heartbeat.interval.ms": "46000"}, {"group.consumer.max.heartbeat.interval.ms": "60000"},
     "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
    ({"share.record.lock.duration.ms": "500"}, {}, "Invalid value 500 for configuration "
     "share.record.lock.duration.ms: Value must be at least 1000"),
    ({"consumer.assignment.interval.ms": "16000"}, {},
     "consumer.assignment.interval.ms must be less than or equal to group.consumer.max.assignment.interval.ms"),
])
def test_validation_follows_kafka(overrides: dict[str, str], broker: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"^{message}$"):
        validate_group_configs(overrides, broker)


def test_a_broker_bound_lowered_later_caps_the_value_applied() -> None:
    overrides = {"consumer.session.timeout.ms": "55000", "consumer.heartbeat.interval.ms": "6000"}
    validate_group_configs(overrides, {})
    assert effective_configs(overrides, {})["consumer.session.timeout.ms"] == 55000
    lowered = effective_configs(overrides, {"group.consumer.max.session.timeout.ms": "50000"})
    assert (lowered["consumer.session.timeout.ms"], lowered["consumer.heartbeat.interval.ms"]) == (50000, 6000)
    assert effective_configs({}, {"group.consumer.heartbeat.interval.ms": "7000"})[
        "consumer.heartbeat.interval.ms"] == 7000


def test_the_store_survives_a_reload_and_drops_a_group_with_no_overrides(tmp_path: Path) -> None:
    store = GroupConfigStore(tmp_path)
    for group, overrides in (("g1", {"consumer.session.timeout.ms": "50000"}), ("g2", {"share.isolation.level":
                                                                                       "read_committed"})):
        store.persist(store.document(group, overrides))
        store.commit(group, overrides)
    store.persist(store.document("g2", {}))
    store.commit("g2", {})
    reloaded = GroupConfigStore(tmp_path)
    assert reloaded.group_ids() == ["g1"]
    assert reloaded.overrides("g1") == {"consumer.session.timeout.ms": "50000"}

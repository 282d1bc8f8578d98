"""A share group's GROUP config resource reaches its share partitions (issue 23): IncrementalAlterConfigs of
`share.auto.offset.reset=earliest` on group G, then a member of G receives the records produced before it joined;
the configs stored in `group-configs.json` apply after a restart too, capped to bounds the broker has lowered
meanwhile (Kafka's GroupConfig.evaluate); Kafka's refusals answer INVALID_CONFIG."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import IncrementalAlterConfigsRequest

from minikafka.protocol.errors import ErrorCode
from tests.broker.share.test_share_wire import acquired, join, produce_records, share_fetch, topic_id
from tests.broker.test_fetch_wire import create_topic
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

RESOURCE_GROUP, SET = 32, 0


def alter_group(client: WireClient, group: str, configs: dict[str, str]) -> tuple[int, str | None]:
    response = client.request(IncrementalAlterConfigsRequest[1](
        resources=[(RESOURCE_GROUP, group, [(name, SET, value) for name, value in configs.items()])],
        validate_only=False))
    [result] = response.responses
    return result.error_code, result.error_message


def test_share_auto_offset_reset_earliest_set_with_incremental_alter_configs(broker_factory: Any) -> None:
    broker: BrokerProcess = broker_factory()
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "early")
        tid = topic_id(client, "early")
        produce_records(client, "early", 3)  # before any member joins
        assert alter_group(client, "g-early", {"share.auto.offset.reset": "earliest"}) == (ErrorCode.NONE, None)
        assert alter_group(client, "g-restart", {"share.auto.offset.reset": "earliest",
                                                 "share.record.lock.duration.ms": "60000"})[0] == ErrorCode.NONE
        assert alter_group(client, "g-bad", {"share.delivery.count.limit": "11"}) == (
            ErrorCode.INVALID_CONFIG,
            "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit")
        join(client, "g-early", "m1", "early")
        assert acquired(share_fetch(client, "g-early", "m1", 0, tid, max_wait_ms=2000)) == [(0, 2, 1)]
        # a group without the override starts at the end (latest, Kafka's default)
        join(client, "g-latest", "m1", "early")
        assert acquired(share_fetch(client, "g-latest", "m1", 0, tid, max_wait_ms=200)) == []
    broker.stop()
    broker = broker_factory({"group.share.max.record.lock.duration.ms": "40000"})  # the same data dir
    with WireClient(broker.bootstrap) as client:
        join(client, "g-restart", "m1", "early")
        fetched = share_fetch(client, "g-restart", "m1", 0, tid, max_wait_ms=2000)
        assert acquired(fetched) == [(0, 2, 1)]
        assert fetched.acquisition_lock_timeout_ms == 40_000  # 60000 capped to the new maximum

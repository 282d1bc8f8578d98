"""The cluster-wide `min.insync.replicas` of Kafka 4.3 with eligible leader replicas on (KIP-966; issue 39's config
piece), side by side with Apache Kafka 4.3.1: its controller writes a cluster-default `min.insync.replicas` (the static
value) when it activates, so DescribeConfigs reports it with source DYNAMIC_DEFAULT_BROKER_CONFIG on the cluster
default, on the broker and on every topic; a broker-level value is refused, and so is removing the cluster one;
changing the cluster one is every topic's new default. confluent-kafka-python's own integration test
`test_incremental_alter_configs` counts on that entry."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.admin import AlterConfigsRequest

from tests.broker_process import BrokerProcess
from tests.interop.config_side import (
    DELETE,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SET,
    ConfigSide,
    module_minikafka,
    side_by_side,
)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

MIN_ISR = "min.insync.replicas"


minikafka = pytest.fixture(scope="module", name="minikafka")(module_minikafka)


def legacy_alter_default(side: ConfigSide, configs: dict[str, str]) -> tuple[Any, ...]:
    """AlterConfigs v2 on the cluster default: the request's configs replace its whole dynamic set."""
    response = side.client.request(AlterConfigsRequest[2](
        resources=[(RESOURCE_BROKER, "", list(configs.items()))], validate_only=False))
    [answer] = response.responses
    side.settle()
    return answer.error_code, answer.error_message


def scenario(side: ConfigSide, topic: str) -> list[tuple[str, Any]]:
    side.create_topic(topic)
    observed: list[tuple[str, Any]] = []

    def describe(label: str) -> None:
        for resource_type, name, shown in ((RESOURCE_BROKER, "", "cluster default"), (RESOURCE_BROKER, "1", "broker"),
                                           (RESOURCE_TOPIC, topic, "topic")):
            observed.append((f"{label}: {shown}", side.describe(resource_type, name, MIN_ISR)))

    describe("at start")
    observed.append(("broker SET 2", side.alter(RESOURCE_BROKER, "1", MIN_ISR, SET, "2")))
    observed.append(("broker DELETE", side.alter(RESOURCE_BROKER, "1", MIN_ISR, DELETE, None)))
    observed.append(("cluster DELETE", side.alter(RESOURCE_BROKER, "", MIN_ISR, DELETE, None)))
    observed.append(("cluster replaced without it", legacy_alter_default(side, {"log.cleaner.backoff.ms": "20000"})))
    observed.append(("cluster SET 0", side.alter(RESOURCE_BROKER, "", MIN_ISR, SET, "0")))
    describe("after the refusals")
    try:
        observed.append(("cluster SET 2", side.alter(RESOURCE_BROKER, "", MIN_ISR, SET, "2")))
        describe("at 2")
    finally:
        observed.append(("cluster SET 1", side.alter(RESOURCE_BROKER, "", MIN_ISR, SET, "1")))
    describe("at 1 again")
    return observed


def test_the_cluster_wide_min_insync_replicas_as_kafka_reports_and_guards_it(
    apache_kafka: object, minikafka: BrokerProcess
) -> None:
    topic = f"elr-{uuid.uuid4().hex[:8]}"
    on_kafka, on_minikafka = side_by_side(apache_kafka, minikafka, lambda side: scenario(side, topic))
    assert on_minikafka == on_kafka
    described = dict(on_kafka)
    assert described["at start: topic"] == ("1", 3, [(MIN_ISR, "1", 3), (MIN_ISR, "1", 5)])
    assert described["broker SET 2"] == (40, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    assert described["cluster DELETE"] == (
        40, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    assert described["at 2: topic"][:2] == ("2", 3)


def test_the_cluster_wide_min_insync_replicas_survives_a_restart(minikafka: BrokerProcess) -> None:
    side = ConfigSide(minikafka.bootstrap, f"sentinel-{uuid.uuid4().hex[:8]}")
    try:
        assert side.alter(RESOURCE_BROKER, "", MIN_ISR, SET, "3") == (0, None)
    finally:
        side.close()
    minikafka.restart()
    side = ConfigSide(minikafka.bootstrap, f"sentinel-{uuid.uuid4().hex[:8]}")
    try:
        assert side.describe(RESOURCE_BROKER, "", MIN_ISR)[:2] == ("3", 3)
        assert side.alter(RESOURCE_BROKER, "", MIN_ISR, SET, "1") == (0, None)
    finally:
        side.close()

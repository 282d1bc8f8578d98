"""The Java client (kafka-clients) across a group coordinator's move on three brokers: a consumer commits in a group,
the broker leading the group's `__consumer_offsets` partition (its coordinator) is stopped, and a new consumer of
the group finds the next leader as coordinator and starts every partition exactly at its committed offset."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from minikafka.testing import MiniKafka
from tests.interop.java_client import run_java_client
from tests.interop.test_groups_interop import (
    JAVA_COMMITTED_RECORDS,
    JAVA_MAX_PER_PARTITION,
    JAVA_PARTITIONS,
    JAVA_RECORDS,
    check_java_resume,
)
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 6}, brokers=3) as broker:
        yield broker


def coordinator_of(kafka: MiniKafka, group: str, via: int) -> int:
    with WireClient(kafka.bootstrap_servers.split(",")[via - 1]) as client:
        found = client.request_until_ready(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
    assert found.coordinators[0].error_code == 0, found
    return int(found.coordinators[0].node_id)


@pytest.mark.usefixtures("java_client")
def test_a_java_consumer_resumes_at_its_committed_offsets_after_the_coordinator_stops(kafka: MiniKafka) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"java-move-{suffix}", f"java-group-{suffix}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, JAVA_PARTITIONS, 3)])[topic].result(10)  # survives a broker's stop
    observed: dict[str, Any] = {
        "produced": run_java_client(kafka.bootstrap_servers, topic, JAVA_RECORDS, mode="produce",
                                    partitions=JAVA_PARTITIONS),
        "first": run_java_client(kafka.bootstrap_servers, topic, JAVA_COMMITTED_RECORDS, mode="consume-commit",
                                 group=group, max_per_partition=JAVA_MAX_PER_PARTITION),
    }
    stopped = coordinator_of(kafka, group, via=1)
    kafka.faults.stop_broker(stopped)
    try:
        running = next(broker for broker in (1, 2, 3) if broker != stopped)
        assert coordinator_of(kafka, group, via=running) != stopped
        observed["resumed"] = run_java_client(kafka.bootstrap_servers, topic, JAVA_RECORDS - JAVA_COMMITTED_RECORDS,
                                              mode="consume", group=group)
    finally:
        kafka.faults.start_broker(stopped)
    check_java_resume(observed)

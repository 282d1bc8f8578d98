"""`ConfigSide`: one broker under test, side by side, for the config interop tests: IncrementalAlterConfigs,
DescribeConfigs and CreateTopics over one raw connection (`WireClient`, kafka-python's message classes), and a
barrier that waits until the changes made so far are applied (Kafka applies them when its metadata log reaches the
broker; minikafka at once)."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from kafka.protocol.admin import CreateTopicsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP = 2, 4, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
SETTLE_TIMEOUT_S = 15.0
_sentinel_values = itertools.count(3_600_000)
T = TypeVar("T")


def module_minikafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A config test module's minikafka (one partition of __consumer_offsets: quick to start); a module makes it
    its `minikafka` fixture with `pytest.fixture(scope="module", name="minikafka")(module_minikafka)`."""
    broker = BrokerProcess(tmp_path_factory.mktemp("minikafka"), {"offsets.topic.num.partitions": "1"})
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


class ConfigSide:
    """One broker under test through one connection: alter, describe, create a topic, wait for a change to apply."""

    def __init__(self, bootstrap: str, sentinel: str) -> None:
        self.client = WireClient(bootstrap, timeout_s=30.0)
        self.sentinel = sentinel
        self.create_topic(sentinel)

    def close(self) -> None:
        self.client.close()

    def create_topic(self, name: str) -> None:
        topic = CreateTopicsRequest.CreatableTopic
        response = self.client.request(CreateTopicsRequest[7](
            topics=[topic(name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=30_000, validate_only=False))
        assert response.topics[0].error_code == 0, response
        if name != self.sentinel:
            self.settle()

    def alter(self, resource_type: int, resource: str, key: str, operation: int, value: str | None) -> tuple[Any, ...]:
        response = self.client.request(IncrementalAlterConfigsRequest[1](
            resources=[(resource_type, resource, [(key, operation, value)])], validate_only=False))
        [answer] = response.responses
        self.settle()
        return answer.error_code, answer.error_message

    def describe_all(self, resource_type: int, resource: str) -> Any:
        """DescribeConfigs v4 (with synonyms) of one resource: its result."""
        response = self.client.request(DescribeConfigsRequest[4](
            resources=[(resource_type, resource, None)], include_synonyms=True, include_documentation=False))
        [result] = response.results
        return result

    def describe(self, resource_type: int, resource: str, key: str) -> tuple[Any, ...]:
        """(value, source, synonyms) of one key, (None, None, []) if not described, or the resource's error."""
        result = self.describe_all(resource_type, resource)
        if result.error_code:
            return result.error_code, result.error_message
        for entry in result.configs:
            if entry.name == key:
                return entry.value, entry.config_source, [(s.name, s.value, s.source) for s in entry.synonyms]
        return None, None, []

    def settle(self) -> None:
        """Set the sentinel topic's retention.ms to a new number and wait until it is described: every change
        made before it is applied then too."""
        value = str(next(_sentinel_values))
        response = self.client.request(IncrementalAlterConfigsRequest[1](
            resources=[(RESOURCE_TOPIC, self.sentinel, [("retention.ms", SET, value)])], validate_only=False))
        assert response.responses[0].error_code == 0, response
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while self.describe(RESOURCE_TOPIC, self.sentinel, "retention.ms")[0] != value:
            assert time.monotonic() < deadline, f"retention.ms={value} of {self.sentinel} never applied"
            time.sleep(0.05)


def side_by_side(apache_kafka: Any, minikafka: BrokerProcess, run: Callable[[ConfigSide], T]) -> tuple[T, T]:
    """`run` against Apache Kafka, then against minikafka, each through its own `ConfigSide` (one sentinel topic
    name for both); what each returned."""
    sentinel = f"sentinel-{uuid.uuid4().hex[:8]}"
    results = []
    for bootstrap in (apache_kafka.bootstrap, minikafka.bootstrap):
        side = ConfigSide(bootstrap, sentinel)
        try:
            results.append(run(side))
        finally:
            side.close()
    return results[0], results[1]

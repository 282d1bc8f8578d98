"""Brokers for the KIP-848 scenarios with Java members: Apache Kafka and minikafka with the same short
consumer-group session (3 s) and heartbeat (0.5 s), so a SIGKILLed member's partitions move within seconds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apache_kafka import ApacheKafka, KafkaHarnessError, ensure_kafka_jars
from tests.broker_process import BrokerProcess

SESSION_TIMEOUT_MS = 3000
FAST_CONSUMER_GROUPS = {
    "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
}
#: Classic members of the mixed-group scenarios: quick heartbeats, the broker's minimum session timeout.
FAST_CLASSIC_MEMBER = {"heartbeat.interval.ms": "500", "session.timeout.ms": "6000"}


def fast_apache_kafka(work_dir: Path) -> Iterator[ApacheKafka]:
    """An Apache Kafka node with FAST_CONSUMER_GROUPS (a generator for a fixture); skips without Java/jars."""
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    kafka = ApacheKafka(work_dir, properties=FAST_CONSUMER_GROUPS, lib_dir=lib_dir)
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


def fast_minikafka(data_dir: Path) -> BrokerProcess:
    """A minikafka broker (not started) with FAST_CONSUMER_GROUPS, three `__consumer_offsets` partitions and no
    initial rebalance delay (as bench/apache_kafka.py configures Apache Kafka)."""
    return BrokerProcess(data_dir, {**FAST_CONSUMER_GROUPS, "offsets.topic.num.partitions": "3",
                                    "group.initial.rebalance.delay.ms": "0"})

"""Pure parts of several brokers: `KafkaConfig.for_broker` (broker k's ids and ports) and `place_replicas`
(Kafka 4.3's StripedReplicaPlacer for one rack)."""

from __future__ import annotations

import random

import pytest

from minikafka.broker.config import KafkaConfig
from minikafka.broker.replica_placer import place_replicas
from minikafka.protocol.errors import InvalidConfigError, InvalidReplicationFactorError


def test_broker_k_listens_and_advertises_on_each_port_plus_k_minus_1() -> None:
    config = KafkaConfig({"node.id": "5", "minikafka.brokers": "3",
                          "listeners": "PLAINTEXT://0.0.0.0:9092,INTERNAL://127.0.0.1:0",
                          "advertised.listeners": "PLAINTEXT://kafka.example:19092,INTERNAL://127.0.0.1:0",
                          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"})
    assert config.broker_ids == [5, 6, 7]
    third = config.for_broker(7)
    assert third.node_id == 7 and config.node_id == 5
    assert [(endpoint.listener_name, endpoint.port) for endpoint in third.listeners] == [
        ("PLAINTEXT", 9094), ("INTERNAL", 0)]  # a port 0 stays 0: the broker gets a free one
    assert third.advertised_endpoint("PLAINTEXT").port == 19094
    assert config.for_broker(5).listeners == config.listeners


def test_a_broker_beyond_the_last_port_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="broker 3 would listen on port 65536"):
        KafkaConfig({"minikafka.brokers": "3", "listeners": "PLAINTEXT://127.0.0.1:65534"})


def test_leaders_take_turns_and_every_partition_has_distinct_replicas() -> None:
    placements = place_replicas(12, 3, [1, 2, 3], [], random.Random(7))
    assert all(sorted(replicas) == [1, 2, 3] for replicas in placements)
    first_replicas = [replicas[0] for replicas in placements]
    assert sorted(first_replicas) == [1] * 4 + [2] * 4 + [3] * 4
    assert all(len(set(first_replicas[i:i + 3])) == 3 for i in range(0, 12, 3))  # a turn per round of brokers


def test_a_stopped_broker_never_leads_a_new_partition_but_may_follow() -> None:
    placements = place_replicas(6, 2, [1, 3], [2], random.Random(1))
    assert all(replicas[0] in (1, 3) and len(set(replicas)) == 2 for replicas in placements)
    assert place_replicas(1, 3, [1, 3], [2], random.Random(1))[0][2] == 2


def test_replication_factors_kafka_refuses() -> None:
    with pytest.raises(InvalidReplicationFactorError,
                       match="The target replication factor of 4 cannot be reached because only 3 broker"):
        place_replicas(1, 4, [1, 2, 3], [])
    with pytest.raises(InvalidReplicationFactorError, match="must be positive"):
        place_replicas(1, 0, [1, 2, 3], [])

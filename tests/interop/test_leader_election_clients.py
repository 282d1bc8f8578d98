"""ElectLeaders through real clients against three brokers in one process: Apache Kafka's own
`kafka-leader-election.sh` (org.apache.kafka.tools.LeaderElectionCommand) and confluent-kafka's
`AdminClient.elect_leaders`, each moving a partition back to its preferred leader and reporting the partitions that
need no election or cannot have one."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka
from tests.kafka_jars import find_main_class, java_command


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniKafka]:
    with MiniKafka({"auto.leader.rebalance.enable": "false"}, data_dir=tmp_path_factory.mktemp("elect") / "data",
                   brokers=3) as broker:
        yield broker


def create(kafka: MiniKafka, topic: str, assignment: list[list[int]]) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    new_topic = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new_topic])[topic].result(timeout=30)
    return admin


def leaders(admin: AdminClient, topic: str) -> dict[int, int]:
    described = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return {index: part.leader for index, part in described.items()}


def leader_election(lib_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    main = find_main_class(lib_dir, "org.apache.kafka.tools.LeaderElectionCommand")
    return subprocess.run(java_command(lib_dir, main, list(args), heap="256m"), capture_output=True, text=True,
                          timeout=120)


def test_kafka_leader_election_tool_elects_the_preferred_replica(kafka: MiniKafka, kafka_lib_dir: Path) -> None:
    admin = create(kafka, "tool", [[1, 2, 3], [2, 3, 1]])
    kafka.faults.elect_leader("tool", 0, 3)
    assert leaders(admin, "tool") == {0: 3, 1: 2}
    done = leader_election(kafka_lib_dir, "--bootstrap-server", kafka.bootstrap_servers,
                           "--election-type", "preferred", "--topic", "tool", "--partition", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Successfully completed leader election (PREFERRED) for partitions tool-0" in done.stdout
    assert leaders(admin, "tool") == {0: 1, 1: 2}

    again = leader_election(kafka_lib_dir, "--bootstrap-server", kafka.bootstrap_servers,
                            "--election-type", "preferred", "--topic", "tool", "--partition", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Valid replica already elected for partitions tool-1" in again.stdout

    kafka.faults.stop_broker(1)
    try:
        refused = leader_election(kafka_lib_dir, "--bootstrap-server", kafka.bootstrap_servers.split(",")[1],
                                  "--election-type", "preferred", "--topic", "tool", "--partition", "0")
    finally:
        kafka.faults.start_broker(1)
    assert refused.returncode != 0
    assert "PreferredLeaderNotAvailableException: The preferred leader was not available." in refused.stdout


def test_confluent_kafka_elect_leaders(kafka: MiniKafka) -> None:
    admin = create(kafka, "librdkafka", [[2, 1], [3, 1]])
    kafka.faults.elect_leader("librdkafka", 1, 1)
    partitions = [TopicPartition("librdkafka", 0), TopicPartition("librdkafka", 1), TopicPartition("absent", 0)]
    outcome = admin.elect_leaders(ElectionType.PREFERRED, partitions).result(timeout=30)
    errors = {(tp.topic, tp.partition): None if error is None else error.code()
              for tp, error in outcome.items()}
    assert errors == {("librdkafka", 0): KafkaError.ELECTION_NOT_NEEDED, ("librdkafka", 1): None,
                      ("absent", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}
    assert leaders(admin, "librdkafka") == {0: 2, 1: 3}
    unclean = admin.elect_leaders(ElectionType.UNCLEAN, partitions[:1]).result(timeout=30)
    assert [error.code() for error in unclean.values()] == [KafkaError.ELECTION_NOT_NEEDED]

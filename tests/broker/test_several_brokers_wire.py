"""Several brokers in one process (`minikafka.brokers=3`), on the wire: each broker on its own port, Metadata and
DescribeCluster list them, a broker that does not lead a partition answers NOT_LEADER_OR_FOLLOWER for it in Produce,
Fetch, ListOffsets, OffsetsForLeaderEpoch and DeleteRecords while the other partitions of the request succeed,
OffsetsForLeaderEpoch answers from the epoch history, and the partition state survives a restart."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin.cluster import DescribeClusterRequest
from kafka.protocol.admin.topics import CreateTopicsRequest, DeleteRecordsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.records import Record, build_batch
from minikafka.testing import FaultError, MiniKafka
from tests.wire_client import WireClient

NONE, NOT_LEADER_OR_FOLLOWER, INVALID_REPLICATION_FACTOR, FENCED_LEADER_EPOCH = 0, 6, 38, 74
TOPIC = "routed"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniKafka]:
    with MiniKafka(data_dir=tmp_path_factory.mktemp("three") / "data", brokers=3) as broker:
        yield broker


def address(kafka: MiniKafka, broker_id: int) -> str:
    return kafka.bootstrap_servers.split(",")[broker_id - 1]


def create_topic(client: WireClient, name: str, assignments: list[list[int]] | None = None, partitions: int = 1,
                 replication_factor: int = -1, configs: dict[str, str] | None = None) -> int:
    topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest[7](topics=[topic(
        name=name, num_partitions=-1 if assignments else partitions,
        replication_factor=-1 if assignments else replication_factor,
        assignments=[topic.CreatableReplicaAssignment(partition_index=index, broker_ids=replicas)
                     for index, replicas in enumerate(assignments or [])],
        configs=[topic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
        timeout_ms=10_000, validate_only=False)
    return int(client.request(request).topics[0].error_code)


def metadata(client: WireClient, topic: str) -> Any:
    return client.request(MetadataRequest[12](topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
                                              allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))


def partitions_of(response: Any) -> dict[int, Any]:
    return {part.partition_index: part for part in response.topics[0].partitions}


def one_record_batch() -> bytes:
    return build_batch([Record(offset=0, timestamp=1_700_000_000_000, key=b"k", value=b"v")], base_offset=0)


def produce(client: WireClient, topic: str, partitions: list[int], acks: int = -1) -> dict[int, int]:
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest[9](transactional_id=None, acks=acks, timeout_ms=10_000, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=index, records=one_record_batch())
                                    for index in partitions])])
    return {part.index: part.error_code for part in client.request(request).responses[0].partition_responses}


def fetch(client: WireClient, topic: str, partitions: list[int], version: int = 12) -> dict[int, int]:
    topic_cls = FetchRequest.FetchTopic
    request = FetchRequest[version](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1_000_000, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[topic_cls(topic=topic, partitions=[topic_cls.FetchPartition(
            partition=index, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=100_000) for index in partitions])], forgotten_topics_data=[], rack_id="")
    return {part.partition_index: part.error_code for part in client.request(request).responses[0].partitions}


def list_offsets(client: WireClient, topic: str, partitions: list[int]) -> dict[int, int]:
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest[7](replica_id=-1, isolation_level=0, topics=[topic_cls(name=topic, partitions=[
        topic_cls.ListOffsetsPartition(partition_index=index, current_leader_epoch=-1, timestamp=-1)
        for index in partitions])])
    return {part.partition_index: part.error_code for part in client.request(request).topics[0].partitions}


def offsets_for_leader_epoch(client: WireClient, topic: str, partitions: list[int], leader_epoch: int = 0,
                             current_leader_epoch: int = -1) -> dict[int, tuple[int, int, int]]:
    topic_cls = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    request = OffsetForLeaderEpochRequest[4](replica_id=-1, topics=[topic_cls(topic=topic, partitions=[
        topic_cls.OffsetForLeaderPartition(partition=index, current_leader_epoch=current_leader_epoch,
                                           leader_epoch=leader_epoch) for index in partitions])])
    return {part.partition: (part.error_code, part.leader_epoch, part.end_offset)
            for part in client.request(request).topics[0].partitions}


def delete_records(client: WireClient, topic: str, partitions: list[int]) -> dict[int, int]:
    topic_cls = DeleteRecordsRequest.DeleteRecordsTopic
    request = DeleteRecordsRequest[2](topics=[topic_cls(name=topic, partitions=[
        topic_cls.DeleteRecordsPartition(partition_index=index, offset=0) for index in partitions])],
        timeout_ms=10_000)
    return {part.partition_index: part.error_code for part in client.request(request).topics[0].partitions}


def test_each_broker_listens_on_its_port_and_every_one_lists_all_three(kafka: MiniKafka) -> None:
    ports = [int(server.rsplit(":", 1)[1]) for server in kafka.bootstrap_servers.split(",")]
    assert ports == [kafka.port, kafka.port + 1, kafka.port + 2]
    for broker_id in (1, 2, 3):
        with WireClient(address(kafka, broker_id)) as client:
            answer = client.request(MetadataRequest[12](topics=[], allow_auto_topic_creation=False,
                                                        include_topic_authorized_operations=False))
            assert sorted((b.node_id, b.port) for b in answer.brokers) == [(1, ports[0]), (2, ports[1]),
                                                                          (3, ports[2])]
            assert answer.controller_id == 1
            cluster = client.request(DescribeClusterRequest[1](include_cluster_authorized_operations=False,
                                                                endpoint_type=1))
            assert sorted(b.broker_id for b in cluster.brokers) == [1, 2, 3]


def test_replication_factor_up_to_the_broker_count(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "rf4", partitions=1, replication_factor=4) == INVALID_REPLICATION_FACTOR
        assert create_topic(client, "rf3", partitions=6, replication_factor=3) == NONE
        parts = partitions_of(metadata(client, "rf3"))
    assert all(sorted(part.replica_nodes) == [1, 2, 3] and sorted(part.isr_nodes) == [1, 2, 3]
               and part.leader_id == part.replica_nodes[0] and part.leader_epoch == 0 for part in parts.values())
    # Kafka's striped placement: the first replicas (the leaders) take turns over the brokers
    assert sorted(part.leader_id for part in parts.values()) == [1, 1, 2, 2, 3, 3]


def test_a_broker_that_does_not_lead_a_partition_answers_not_leader_or_follower(kafka: MiniKafka) -> None:
    # partition 0 on broker 2 only, partition 1 on broker 1 only: broker 1 leads 1 and is no replica of 0
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, TOPIC, assignments=[[2], [1]]) == NONE
        assert produce(client, TOPIC, [0, 1]) == {0: NOT_LEADER_OR_FOLLOWER, 1: NONE}
        assert fetch(client, TOPIC, [0, 1]) == {0: NOT_LEADER_OR_FOLLOWER, 1: NONE}
        assert list_offsets(client, TOPIC, [0, 1]) == {0: NOT_LEADER_OR_FOLLOWER, 1: NONE}
        epochs = offsets_for_leader_epoch(client, TOPIC, [0, 1])
        assert (epochs[0][0], epochs[1]) == (NOT_LEADER_OR_FOLLOWER, (NONE, 0, 1))
        assert delete_records(client, TOPIC, [0, 1]) == {0: NOT_LEADER_OR_FOLLOWER, 1: NONE}
    with WireClient(address(kafka, 2)) as client:  # and the other way round on broker 2
        assert produce(client, TOPIC, [0, 1]) == {0: NONE, 1: NOT_LEADER_OR_FOLLOWER}


def test_a_follower_serves_consumer_fetches_from_v11_only(kafka: MiniKafka) -> None:
    """KIP-392: a Fetch with client metadata (v11+) is served by a follower replica; before, only the leader."""
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "followed", assignments=[[2, 1]]) == NONE
        assert fetch(client, "followed", [0], version=11) == {0: NONE}
        assert fetch(client, "followed", [0], version=10) == {0: NOT_LEADER_OR_FOLLOWER}
    with WireClient(address(kafka, 3)) as client:  # not a replica at all
        assert fetch(client, "followed", [0], version=12) == {0: NOT_LEADER_OR_FOLLOWER}


def test_elections_move_the_leader_and_offsets_for_leader_epoch_reads_the_history(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as one, WireClient(address(kafka, 2)) as two:
        assert create_topic(one, "elected", assignments=[[1, 2, 3]]) == NONE
        assert produce(one, "elected", [0]) == {0: NONE}  # offset 0 in epoch 0
        kafka.faults.elect_leader("elected", 0, 2)
        assert produce(one, "elected", [0]) == {0: NOT_LEADER_OR_FOLLOWER}
        assert produce(two, "elected", [0]) == {0: NONE}  # offset 1 in epoch 1
        assert produce(two, "elected", [0]) == {0: NONE}  # offset 2
        kafka.faults.elect_leader("elected", 0, 1)  # epoch 2 starts at offset 3
        part = partitions_of(metadata(one, "elected"))[0]
        assert (part.leader_id, part.leader_epoch) == (1, 2)
        assert offsets_for_leader_epoch(one, "elected", [0], leader_epoch=0) == {0: (NONE, 0, 1)}
        assert offsets_for_leader_epoch(one, "elected", [0], leader_epoch=1) == {0: (NONE, 1, 3)}
        assert offsets_for_leader_epoch(one, "elected", [0], leader_epoch=2) == {0: (NONE, 2, 3)}
        assert offsets_for_leader_epoch(one, "elected", [0], leader_epoch=5) == {0: (NONE, -1, -1)}
        assert offsets_for_leader_epoch(one, "elected", [0], current_leader_epoch=1)[0][0] == FENCED_LEADER_EPOCH


def test_bad_cluster_faults_are_refused_with_one_line(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "refusals", assignments=[[1, 2]]) == NONE
    refusals = {
        "unknown broker 7: the brokers are 1, 2, 3": lambda: kafka.faults.stop_broker(7),
        "unknown partition refusals-4": lambda: kafka.faults.elect_leader("refusals", 4, 1),
        "unknown partition nowhere-0": lambda: kafka.faults.elect_leader("nowhere", 0, 1),
        "broker 3 is not a replica of refusals-0": lambda: kafka.faults.elect_leader("refusals", 0, 3),
        "broker 2 is already running": lambda: kafka.faults.start_broker(2),
    }
    for reason, call in refusals.items():
        with pytest.raises(FaultError, match=reason) as refused:
            call()
        assert "\n" not in str(refused.value)


def test_the_last_running_broker_cannot_be_stopped(tmp_path: Path) -> None:
    with MiniKafka(data_dir=tmp_path / "data", brokers=2) as kafka:
        kafka.faults.stop_broker(1)
        with WireClient(address(kafka, 2)) as client:  # the controller named is a running broker
            answer = client.request(MetadataRequest[12](topics=[], allow_auto_topic_creation=False,
                                                        include_topic_authorized_operations=False))
            assert ([b.node_id for b in answer.brokers], answer.controller_id) == ([2], 2)
        with pytest.raises(FaultError, match="broker 2 is the last running broker"):
            kafka.faults.stop_broker(2)
        with pytest.raises(FaultError, match="broker 1 is already stopped"):
            kafka.faults.stop_broker(1)
        host, port = address(kafka, 1).rsplit(":", 1)
        with socket.socket() as squatter:  # another process took broker 1's port while it was stopped
            squatter.bind((host, int(port)))
            squatter.listen()
            with pytest.raises(FaultError, match=f"broker 1 cannot listen again: listeners=PLAINTEXT://.*:{port}: "
                                                 "cannot listen there") as refused:
                kafka.faults.start_broker(1)
            assert "\n" not in str(refused.value)
        kafka.faults.start_broker(1)
        with WireClient(address(kafka, 1)) as client:  # listening again on the same port
            answer = client.request(MetadataRequest[12](topics=[], allow_auto_topic_creation=False,
                                                        include_topic_authorized_operations=False))
            assert sorted(b.node_id for b in answer.brokers) == [1, 2]


def test_partition_state_survives_a_restart(tmp_path: Path) -> None:
    with MiniKafka(data_dir=tmp_path / "data", brokers=3) as kafka:
        with WireClient(address(kafka, 1)) as client:
            assert create_topic(client, "kept", partitions=3, replication_factor=2) == NONE
        kafka.faults.elect_leader("kept", 0, partitions_of_kept(kafka)[0][1][1])
        before = partitions_of_kept(kafka)
        kafka.restart()
        assert partitions_of_kept(kafka) == before
        assert before[0][2] == 1  # the election's epoch was kept


def partitions_of_kept(kafka: MiniKafka) -> dict[int, tuple[int, list[int], int]]:
    with WireClient(address(kafka, 1)) as client:
        return {index: (part.leader_id, list(part.replica_nodes), part.leader_epoch)
                for index, part in partitions_of(metadata(client, "kept")).items()}


def minikafka_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikafka.broker", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_command_line_and_the_admin_port_elect_stop_and_start(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "commanded", assignments=[[1, 2]]) == NONE
    elected = minikafka_command("faults", "elect-leader", "commanded", "0", "2", "--admin-url", kafka.admin_url)
    assert elected.returncode == 0, elected.stderr
    stopped = minikafka_command("faults", "stop-broker", "2", "--admin-url", kafka.admin_url)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["stopped_brokers"] == [2]
    with pytest.raises(OSError):  # a stopped broker's port refuses connections
        WireClient(address(kafka, 2), timeout_s=2).close()
    with WireClient(address(kafka, 1)) as client:
        part = partitions_of(metadata(client, "commanded"))[0]
        assert (part.leader_id, list(part.isr_nodes), list(part.offline_replicas), part.leader_epoch) == (
            1, [1], [2], 2)
    refused = minikafka_command("faults", "stop-broker", "9", "--admin-url", kafka.admin_url)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "minikafka faults stop-broker: unknown broker 9: the brokers are 1, 2, 3"]
    request = urllib.request.Request(f"{kafka.admin_url}/admin/faults/start-broker?id=2", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["stopped_brokers"] == []
    missing = urllib.request.Request(f"{kafka.admin_url}/admin/faults/elect-leader?topic=commanded&id=1", data=b"",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(missing, timeout=10)
    assert bad.value.code == 400
    assert json.loads(bad.value.read()) == {"error": "missing parameter partition"}


def test_a_partition_whose_only_in_sync_replica_stops_has_no_leader_until_it_starts(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "lonely", assignments=[[3]]) == NONE
        kafka.faults.stop_broker(3)
        try:
            part = partitions_of(metadata(client, "lonely"))[0]
            # LEADER_NOT_AVAILABLE; an empty ISR, broker 3 eligible (KIP-966, as Apache Kafka 4.3.1 answers)
            assert (part.error_code, part.leader_id, part.leader_epoch, list(part.isr_nodes),
                    list(part.offline_replicas)) == (5, -1, 1, [], [3])
            assert produce(client, "lonely", [0]) == {0: NOT_LEADER_OR_FOLLOWER}
        finally:
            kafka.faults.start_broker(3)
        part = partitions_of(metadata(client, "lonely"))[0]
        assert (part.error_code, part.leader_id, part.leader_epoch, list(part.isr_nodes)) == (NONE, 3, 2, [3])
    with WireClient(address(kafka, 3)) as client:
        assert produce(client, "lonely", [0]) == {0: NONE}


def test_request_faults_apply_to_the_broker_they_name(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as one, WireClient(address(kafka, 2)) as two:
        assert create_topic(one, "faulted", assignments=[[1, 2]]) == NONE
        kafka.faults.elect_leader("faulted", 0, 1)
        kafka.faults.push_request_errors("ListOffsets", "KAFKA_STORAGE_ERROR", broker=2)
        try:
            assert list_offsets(one, "faulted", [0]) == {0: NONE}  # broker 1 is not faulted
            assert list_offsets(two, "faulted", [0]) == {0: 56}  # the pushed error, before the leader check
            assert list_offsets(two, "faulted", [0]) == {0: 56}  # a stale-metadata error: until the client looks
            two.request(MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False))
            assert list_offsets(two, "faulted", [0]) == {0: NOT_LEADER_OR_FOLLOWER}  # used up: served again
        finally:
            kafka.faults.clear_faults()

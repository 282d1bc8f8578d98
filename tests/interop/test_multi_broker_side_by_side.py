"""Three brokers side by side: a three-node Apache Kafka 4.3.1 KRaft cluster (tests/apache_kafka_cluster.py) and
`MiniKafka(brokers=3)`, asked the same raw requests: Metadata and DescribeTopicPartitions after a broker stops and
after it is back, the error codes of partition requests sent to a broker that does not lead the partition and
of group requests sent to a broker that is not the group's coordinator, ElectLeaders' answers, KIP-966's
eligible leader replicas as a partition's brokers stop and start, and what clients observe after an unclean
election (ListOffsets, OffsetForLeaderEpoch, librdkafka and Java consumers that had read records it lost).

Topics are created with an explicit replica assignment, so the preferred leaders (the first replica) and every
election are the same on both sides. Kafka's JVMs take 15-30 s to start here: the module is marked `slow`.
"""

from __future__ import annotations

import json
import select
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka.protocol.admin import DeleteRecordsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest, DescribeTopicPartitionsRequest
from kafka.protocol.consumer import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from minikafka.protocol.schemas import ElectLeadersRequest
from minikafka.testing import MiniKafka
from tests.apache_kafka_cluster import ApacheKafkaCluster
from tests.broker.test_fetch_wire import batch_of, fetch, produce
from tests.interop.java_client import JAR, LIB_DIR
from tests.kafka_jars import KafkaHarnessError, ensure_kafka_jars
from tests.wire_client import WireClient

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
DEADLINE_S = 60.0
#: partition -> replicas (the first is the preferred leader); topic "spread" has three replicas per partition,
#: topic "pair" two, so that broker 1 is not a replica of its partition 0
ASSIGNMENTS = {"spread": [[1, 2, 3], [2, 3, 1], [3, 1, 2]], "pair": [[2, 3]]}


class Cluster(Protocol):
    """One side: three brokers with ids 1, 2, 3."""

    def address(self, broker_id: int) -> str: ...

    def stop_broker(self, broker_id: int) -> None: ...

    def start_broker(self, broker_id: int) -> None: ...


class ApacheSide:
    def __init__(self, cluster: ApacheKafkaCluster) -> None:
        self.cluster = cluster

    def address(self, broker_id: int) -> str:
        return self.cluster.nodes[broker_id].bootstrap

    def stop_broker(self, broker_id: int) -> None:
        self.cluster.stop_node(broker_id)

    def start_broker(self, broker_id: int) -> None:
        self.cluster.start_node(broker_id)


class MiniKafkaSide:
    def __init__(self, kafka: MiniKafka) -> None:
        self.kafka = kafka
        with WireClient(kafka.bootstrap_servers.split(",")[0]) as client:
            brokers = client.request(metadata_request([])).brokers
        self.addresses = {broker.node_id: f"{broker.host}:{broker.port}" for broker in brokers}

    def address(self, broker_id: int) -> str:
        return self.addresses[broker_id]

    def stop_broker(self, broker_id: int) -> None:
        self.kafka.faults.stop_broker(broker_id)

    def start_broker(self, broker_id: int) -> None:
        self.kafka.faults.start_broker(broker_id)


@pytest.fixture(scope="module")
def apache_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheSide]:
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    with ApacheKafkaCluster(tmp_path_factory.mktemp("kafka-cluster"), 3, lib_dir=lib_dir) as cluster:
        yield ApacheSide(cluster)


@pytest.fixture(scope="module")
def minikafka_cluster() -> Iterator[MiniKafkaSide]:
    with MiniKafka({"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0}, brokers=3) as kafka:
        yield MiniKafkaSide(kafka)


@pytest.fixture(params=["apache", "minikafka"])
def cluster(request: pytest.FixtureRequest) -> Cluster:
    side: Cluster = request.getfixturevalue(f"{request.param}_cluster")
    return side


def metadata_request(topics: list[str] | None) -> Any:
    return MetadataRequest[12](
        topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=name) for name in topics],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def create_topics(cluster: Cluster, suffix: str) -> dict[str, str]:
    """The topics of ASSIGNMENTS, named with `suffix`; returns base name -> topic name."""
    names = {base: f"{base}-{suffix}" for base in ASSIGNMENTS}
    topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest[7](topics=[
        topic(name=names[base], num_partitions=-1, replication_factor=-1, configs=[], assignments=[
            topic.CreatableReplicaAssignment(partition_index=index, broker_ids=replicas)
            for index, replicas in enumerate(assignment)])
        for base, assignment in ASSIGNMENTS.items()], timeout_ms=30_000, validate_only=False)
    with WireClient(cluster.address(1)) as client:
        answers = {t.name: t.error_code for t in client.request(request).topics}
    assert answers == {name: 0 for name in names.values()}
    wait_until(lambda: all(leaders(cluster, via, name) for name in names.values() for via in (1, 2, 3)),
               "every broker sees a leader for every partition")
    return names


def leaders(cluster: Cluster, via: int, topic: str) -> dict[int, int] | None:
    """partition -> leader id as broker `via` sees it; None while any partition has none or the topic is unknown."""
    with WireClient(cluster.address(via)) as client:
        answer = client.request(metadata_request([topic])).topics[0]
    found = {p.partition_index: p.leader_id for p in answer.partitions}
    return found if answer.error_code == 0 and found and -1 not in found.values() else None


def wait_until(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"not within {DEADLINE_S:.0f} s: {what}")


def partition_states(cluster: Cluster, via: int, topic: str) -> dict[str, Any]:
    """What Metadata v12 and DescribeTopicPartitions v0 say of `topic` through broker `via`: the brokers, and per
    partition (leader, leader epoch, replicas, ISR, offline replicas) from each."""
    with WireClient(cluster.address(via)) as client:
        metadata = client.request(metadata_request([topic]))
        described = client.request(DescribeTopicPartitionsRequest[0](
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)], response_partition_limit=2000,
            cursor=None)).topics[0]
    partitions = metadata.topics[0].partitions
    return {
        "brokers": sorted(broker.node_id for broker in metadata.brokers),
        "metadata": {p.partition_index: (p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes,
                                         sorted(p.isr_nodes), sorted(p.offline_replicas)) for p in partitions},
        "described": {p.partition_index: (p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes,
                                          sorted(p.isr_nodes), sorted(p.offline_replicas)) for p in
                      described.partitions},
    }


def test_metadata_and_describe_topic_partitions_after_a_broker_stops_and_returns(cluster: Cluster) -> None:
    names = create_topics(cluster, uuid.uuid4().hex[:6])
    spread = names["spread"]
    before = partition_states(cluster, 1, spread)
    epochs = {index: state[2] for index, state in before["metadata"].items()}
    assert before["brokers"] == [1, 2, 3]
    assert {index: state[1:2] + state[3:] for index, state in before["metadata"].items()} == {
        0: (1, [1, 2, 3], [1, 2, 3], []), 1: (2, [2, 3, 1], [1, 2, 3], []), 2: (3, [3, 1, 2], [1, 2, 3], [])}
    assert before["described"] == before["metadata"]

    cluster.stop_broker(2)
    try:
        stopped = wait_until(lambda: (lambda s: s if s["brokers"] == [1, 3] and all(
            2 not in state[4] for state in s["metadata"].values()) else None)(partition_states(cluster, 1, spread)),
            "broker 2 out of the brokers and of every ISR")
        # The partition broker 2 led moves to the next replica in the ISR (3), its leader epoch rises by one;
        # broker 2 stays a replica and is reported offline; the others keep leader and epoch.
        assert {index: (state[0], state[1], state[2] - epochs[index], state[3], state[4], state[5])
                for index, state in stopped["metadata"].items()} == {
            0: (0, 1, 0, [1, 2, 3], [1, 3], [2]), 1: (0, 3, 1, [2, 3, 1], [1, 3], [2]),
            2: (0, 3, 0, [3, 1, 2], [1, 3], [2])}
        assert stopped["described"] == stopped["metadata"]
        pair = partition_states(cluster, 3, names["pair"])
        assert pair["metadata"][0][1] == 3 and pair["metadata"][0][4:] == ([3], [2])
    finally:
        cluster.start_broker(2)
    back = wait_until(lambda: (lambda s: s if s["brokers"] == [1, 2, 3] and all(
        state[4] == [1, 2, 3] for state in s["metadata"].values()) else None)(partition_states(cluster, 1, spread)),
        "broker 2 back in every ISR")
    # Back in the ISR but not leader again until the preferred-leader election (auto.leader.rebalance.enable runs
    # every leader.imbalance.check.interval.seconds, 300 s by default).
    assert {index: state[1] for index, state in back["metadata"].items()} == {0: 1, 1: 3, 2: 3}
    assert all(not state[5] for state in back["metadata"].values())


def error_codes_from_a_non_leader(cluster: Cluster, topic: str, partition: int, via: int) -> dict[str, int]:
    """The error code of each of the five partition APIs for (`topic`, `partition`) sent to broker `via`."""
    codes: dict[str, int] = {}
    with WireClient(cluster.address(via)) as client:
        produced: Any = produce(client, topic, partition, batch_of(1))
        codes["Produce"] = produced.error_code
        for version in (10, 12):  # v11 added rack_id: a consumer may fetch from a follower (KIP-392)
            answer: Any = fetch(client, [(topic, partition, 0)], version=version)
            codes[f"Fetch v{version}"] = answer.responses[0].partitions[0].error_code
        offsets = ListOffsetsRequest.ListOffsetsTopic
        codes["ListOffsets"] = client.request(ListOffsetsRequest[7](replica_id=-1, isolation_level=0, topics=[offsets(
            name=topic, partitions=[offsets.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                                  timestamp=-1)])])).topics[0].partitions[0].error_code
        epochs = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
        codes["OffsetForLeaderEpoch"] = client.request(OffsetForLeaderEpochRequest[4](replica_id=-1, topics=[epochs(
            topic=topic, partitions=[epochs.OffsetForLeaderPartition(partition=partition, current_leader_epoch=-1,
                                                                     leader_epoch=0)])])).topics[0].partitions[0].error_code
        deletes = DeleteRecordsRequest.DeleteRecordsTopic
        codes["DeleteRecords"] = client.request(DeleteRecordsRequest[2](topics=[deletes(
            name=topic, partitions=[deletes.DeleteRecordsPartition(partition_index=partition, offset=0)])],
            timeout_ms=10_000)).topics[0].partitions[0].error_code
    return codes


def test_partition_requests_to_a_follower_and_to_a_non_replica_answer_not_leader_or_follower(
        cluster: Cluster) -> None:
    names = create_topics(cluster, uuid.uuid4().hex[:6])
    not_leader = {api: 6 for api in ("Produce", "Fetch v10", "Fetch v12", "ListOffsets", "OffsetForLeaderEpoch",
                                     "DeleteRecords")}
    # A follower serves a consumer's Fetch from v11 on (up to the high watermark), as Kafka's ReplicaManager does
    # whenever the request carries client metadata; everything else needs the leader. Kafka's follower answers
    # NOT_LEADER_OR_FOLLOWER (which consumers retry) until it has applied the new partition, a moment after its
    # Metadata names the leader: wait for that first.
    wait_until(lambda: error_codes_from_a_non_leader(cluster, names["spread"], 0, via=2)["Fetch v12"] == 0,
               "broker 2 follows the partition")
    assert error_codes_from_a_non_leader(cluster, names["spread"], 0, via=2) == {**not_leader, "Fetch v12": 0}
    assert error_codes_from_a_non_leader(cluster, names["pair"], 0, via=1) == not_leader  # not a replica at all
    with WireClient(cluster.address(1)) as client:  # the leader serves the same requests
        produced: Any = produce(client, names["spread"], 0, batch_of(1))
        assert produced.error_code == 0


def test_group_requests_to_a_broker_that_is_not_the_coordinator_answer_not_coordinator(cluster: Cluster) -> None:
    group = f"g-{uuid.uuid4().hex[:6]}"
    with WireClient(cluster.address(1)) as client:
        found = client.request_until_ready(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
    coordinator = found.coordinators[0].node_id
    other = next(broker for broker in (1, 2, 3) if broker != coordinator)
    request = OffsetFetchRequest[8](groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)],
                                    require_stable=False)
    with WireClient(cluster.address(other)) as client:
        assert client.request(request).groups[0].error_code == 16  # NOT_COORDINATOR
    with WireClient(cluster.address(coordinator)) as client:
        assert client.request_until_ready(request).groups[0].error_code == 0


def elect(cluster: Cluster, via: int, election_type: int, partitions: dict[str, list[int]]) -> dict[Any, Any]:
    """ElectLeaders v2 through broker `via`: (topic, partition) -> (error code, message)."""
    topic_cls = ElectLeadersRequest.TopicPartitions
    request = ElectLeadersRequest[2](election_type=election_type, timeout_ms=30_000, topic_partitions=[
        topic_cls(topic=topic, partitions=indexes) for topic, indexes in partitions.items()])
    with WireClient(cluster.address(via)) as client:
        response = client.request(request)
    assert response.error_code == 0
    return {(topic.topic, part.partition_id): (part.error_code, part.error_message)
            for topic in response.replica_election_results for part in topic.partition_result}


def test_elect_leaders_preferred_and_unclean(cluster: Cluster) -> None:
    spread = create_topics(cluster, uuid.uuid4().hex[:6])["spread"]
    not_needed = (84, "Leader election not needed for topic partition.")
    assert elect(cluster, 3, 0, {spread: [0, 1], "nowhere-topic": [0]}) == {
        (spread, 0): not_needed, (spread, 1): not_needed,
        ("nowhere-topic", 0): (3, "No such topic as nowhere-topic")}
    cluster.stop_broker(2)
    try:
        wait_until(lambda: (leaders(cluster, 1, spread) or {}).get(1) == 3, "partition 1 led by broker 3")
        assert elect(cluster, 1, 0, {spread: [1, 7]}) == {
            (spread, 1): (80, "The preferred leader was not available."),
            (spread, 7): (3, f"No such partition as {spread}-7")}
        assert elect(cluster, 1, 1, {spread: [1]}) == {(spread, 1): not_needed}
    finally:
        cluster.start_broker(2)
    wait_until(lambda: all(2 in state[4] for state in partition_states(cluster, 1, spread)["metadata"].values()),
               "broker 2 back in every ISR")
    assert elect(cluster, 1, 0, {spread: [1]}) == {(spread, 1): (0, None)}
    wait_until(lambda: (leaders(cluster, 3, spread) or {}).get(1) == 2, "broker 2 leads partition 1 again")


def eligible_state(cluster: Cluster, via: int, topic: str) -> tuple[int, int, list[int], list[int], list[int]] | None:
    """DescribeTopicPartitions of partition 0: (leader, leader epoch, ISR, ELR, last known ELR); None while broker
    `via` does not know the topic yet."""
    with WireClient(cluster.address(via)) as client:
        partitions = client.request(DescribeTopicPartitionsRequest[0](
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)], response_partition_limit=2000,
            cursor=None)).topics[0].partitions
    if not partitions:
        return None
    part = partitions[0]
    return (part.leader_id, part.leader_epoch, sorted(part.isr_nodes), list(part.eligible_leader_replicas),
            list(part.last_known_elr))


def test_eligible_leader_replicas_as_the_brokers_of_a_partition_stop_and_start(cluster: Cluster) -> None:
    """KIP-966, on by default in Kafka 4.3: a partition [1, 2] with min.insync.replicas=2, both brokers stopped
    and started one by one, seen through broker 3 at each step."""
    topic = f"eligible-{uuid.uuid4().hex[:6]}"
    creatable = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest[7](topics=[creatable(
        name=topic, num_partitions=-1, replication_factor=-1,
        configs=[creatable.CreatableTopicConfig(name="min.insync.replicas", value="2")],
        assignments=[creatable.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])])],
        timeout_ms=30_000, validate_only=False)
    with WireClient(cluster.address(3)) as client:
        assert client.request(request).topics[0].error_code == 0

    def reaches(expected: tuple[int, int, list[int], list[int], list[int]], what: str) -> None:
        wait_until(lambda: eligible_state(cluster, 3, topic) == expected, what)

    reaches((1, 0, [1, 2], [], []), "the topic created")
    cluster.stop_broker(2)
    try:
        reaches((1, 0, [1], [2], []), "2 out of an ISR below min.insync.replicas: eligible")
        cluster.stop_broker(1)
        try:
            reaches((-1, 1, [], [1, 2], [1]), "an empty ISR, both eligible, 1 the last known leader")
        finally:
            cluster.start_broker(2)
        reaches((2, 2, [2], [1], []), "the eligible 2 elected, 1 still eligible")
    finally:
        cluster.start_broker(1)
    reaches((2, 2, [1, 2], [], []), "1 back in the ISR, nothing eligible")


def create_lossy_topic(cluster: Cluster, name: str, configs: dict[str, str]) -> None:
    """Partition 0 on brokers 1 (the leader) and 2, created through broker 3 (which never stops below)."""
    creatable = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest[7](topics=[creatable(
        name=name, num_partitions=-1, replication_factor=-1,
        configs=[creatable.CreatableTopicConfig(name=key, value=value) for key, value in configs.items()],
        assignments=[creatable.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])])],
        timeout_ms=30_000, validate_only=False)
    with WireClient(cluster.address(3)) as client:
        assert client.request(request).topics[0].error_code == 0
    wait_until(lambda: eligible_state(cluster, 3, name) == (1, 0, [1, 2], [], []), f"{name} created")


def produce_records(bootstrap: str, topic: str, acks: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False, "linger.ms": 0})
    failures: list[object] = []
    for value in values:
        producer.produce(topic, value.encode(), partition=0,
                         on_delivery=lambda error, _message: failures.append(error) if error else None)
    assert producer.flush(30) == 0 and failures == []


def consume(consumer: Consumer, count: int, timeout_s: float = DEADLINE_S) -> tuple[list[Any], list[Any]]:
    """Up to `count` records (offset, value, leader epoch) and the errors met meanwhile, until an error or
    `timeout_s`."""
    records: list[Any] = []
    errors: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and not errors and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error() is not None:
            errors.append((message.error().code(), message.error().str()))
        else:
            records.append((message.offset(), message.value().decode(), message.leader_epoch()))
    return records, errors


def list_offsets(cluster: Cluster, via: int, topic: str) -> dict[str, tuple[int, int, int]]:
    """ListOffsets v7 of partition 0 through broker `via`: (error code, offset, leader epoch) of the earliest, the
    latest a read_uncommitted consumer sees (the high watermark) and a read_committed one (the LSO)."""
    offsets = ListOffsetsRequest.ListOffsetsTopic
    found = {}
    with WireClient(cluster.address(via)) as client:
        for name, isolation_level, timestamp in (("earliest", 0, -2), ("latest", 0, -1), ("committed", 1, -1)):
            part = client.request(ListOffsetsRequest[7](replica_id=-1, isolation_level=isolation_level, topics=[
                offsets(name=topic, partitions=[offsets.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])])).topics[0].partitions[0]
            found[name] = (part.error_code, part.offset, part.leader_epoch)
    return found


def end_offsets_for_epochs(cluster: Cluster, via: int, topic: str,
                           epochs: list[int]) -> dict[int, tuple[int, int, int]]:
    """A consumer's OffsetForLeaderEpoch v4 (KIP-320) of partition 0: epoch -> (error code, epoch, end offset)."""
    topic_cls = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    with WireClient(cluster.address(via)) as client:
        answers = {epoch: client.request(OffsetForLeaderEpochRequest[4](replica_id=-1, topics=[topic_cls(
            topic=topic, partitions=[topic_cls.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=-1, leader_epoch=epoch)])])).topics[0].partitions[0]
            for epoch in epochs}
    return {epoch: (part.error_code, part.leader_epoch, part.end_offset) for epoch, part in answers.items()}


class JavaTruncationConsumer:
    """tests/interop/java LogTruncationClient in its own JVM: a Java consumer (auto.offset.reset=none) reading
    `count` records of partition 0, then waiting for KIP-320's LogTruncationException."""

    def __init__(self, bootstrap: str, topic: str, count: int) -> None:
        self.process = subprocess.Popen(
            ["java", "-Xmx128m", "-cp", f"{JAR}:{LIB_DIR}/*", "minikafka.interop.LogTruncationClient", bootstrap,
             topic, str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def next_line(self, timeout_s: float = DEADLINE_S) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout_s)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("{"):
            self.close()
            raise AssertionError(f"LogTruncationClient printed {line!r}; stderr:\n"
                                 f"{(self.process.stderr.read() if self.process.stderr else '')[-3000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def test_what_clients_observe_after_an_unclean_election(cluster: Cluster, java_client: None) -> None:
    """Partition [1, 2] with min.insync.replicas=1: broker 2 stops (the ISR is 1 alone), five acks=1 records are
    acknowledged by 1 alone and read, 1 stops (leaderless: 1 is the eligible leader, KIP-966), 2 returns (not
    eligible: no clean election) and is elected uncleanly: by ElectLeaders UNCLEAN for topic "elect", at once by
    Kafka's controller when 2 is unfenced for topic "config" (unclean.leader.election.enable). Broker 3 stays up
    (on Kafka the controller quorum is 2 and 3 once 2 is back). What clients see: the log end goes back to the
    five acks=all records, OffsetForLeaderEpoch says where epoch 0 ends, a librdkafka consumer that had read
    past it detects the truncation (KIP-320: librdkafka and the Java consumer), and a fresh read_committed consumer
    reads what survived."""
    suffix = uuid.uuid4().hex[:6]
    elect_topic, config_topic = f"lossy-elect-{suffix}", f"lossy-config-{suffix}"
    create_lossy_topic(cluster, elect_topic, {"min.insync.replicas": "1"})
    create_lossy_topic(cluster, config_topic, {"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
    bootstrap = ",".join(cluster.address(broker) for broker in (1, 2, 3))
    kept, lost = [f"kept-{n}" for n in range(5)], [f"lost-{n}" for n in range(5)]
    for topic in (elect_topic, config_topic):
        produce_records(bootstrap, topic, "all", kept)  # offsets 0-4, on both replicas
    consumer_settings = {"bootstrap.servers": bootstrap, "enable.auto.commit": False}
    # A KIP-320 consumer that resets (to the end offset of its epoch), and one with auto.offset.reset=error
    # (librdkafka then reports the truncation instead of moving on)
    resetting = Consumer({**consumer_settings, "group.id": f"r-{suffix}", "auto.offset.reset": "earliest"})
    reporting = Consumer({**consumer_settings, "group.id": f"e-{suffix}", "auto.offset.reset": "error"})
    java = JavaTruncationConsumer(bootstrap, elect_topic, 10)
    stopped: list[int] = []
    try:
        for consumer in (resetting, reporting):
            consumer.assign([TopicPartition(elect_topic, 0, 0)])
            assert consume(consumer, 5) == ([(n, value, 0) for n, value in enumerate(kept)], [])
        cluster.stop_broker(2)
        stopped.append(2)
        wait_until(lambda: eligible_state(cluster, 3, elect_topic) == (1, 0, [1], [], []), "the ISR is 1 alone")
        for topic in (elect_topic, config_topic):
            produce_records(bootstrap, topic, "1", lost)  # offsets 5-9, on broker 1 only
        for consumer in (resetting, reporting):
            assert consume(consumer, 5) == ([(5 + n, value, 0) for n, value in enumerate(lost)], [])
        assert list_offsets(cluster, 1, elect_topic)["latest"] == (0, 10, 0)
        assert java.next_line() == {"read": 10}

        cluster.stop_broker(1)
        stopped.append(1)
        for topic in (elect_topic, config_topic):
            wait_until(lambda t=topic: eligible_state(cluster, 3, t) == (-1, 1, [], [1], [1]),
                       "leaderless, 1 the eligible and last known leader")
        cluster.start_broker(2)
        stopped.remove(2)
        wait_until(lambda: eligible_state(cluster, 3, config_topic) == (2, 2, [2], [], []),
                   "the returning 2 elected uncleanly (unclean.leader.election.enable)")
        assert eligible_state(cluster, 3, elect_topic) == (-1, 1, [], [1], [1])  # 2 runs but is not eligible
        assert elect(cluster, 3, 1, {elect_topic: [0]}) == {(elect_topic, 0): (0, None)}
        wait_until(lambda: eligible_state(cluster, 3, elect_topic) == (2, 2, [2], [], []), "2 elected uncleanly")

        for topic in (elect_topic, config_topic):
            # the acks=1 records are gone: the log ends where 2's did, in a new epoch (2) starting there
            assert list_offsets(cluster, 2, topic) == {
                "earliest": (0, 0, 0), "latest": (0, 5, 2), "committed": (0, 5, 2)}
            assert end_offsets_for_epochs(cluster, 2, topic, [0, 1, 2, 3]) == {
                0: (0, 0, 5), 1: (0, 0, 5), 2: (0, 2, 5), 3: (0, -1, -1)}
        # the Java consumer's LogTruncationException names where its log and the leader's diverge
        assert java.next_line() == {"divergent_offset": 5, "divergent_epoch": 0}
        # librdkafka reports the reset it may not do (auto.offset.reset=error), naming the truncation it detected
        records, errors = consume(reporting, 1)
        assert (records, [code for code, _ in errors]) == ([], [KafkaError._AUTO_OFFSET_RESET])
        assert "Partition log truncation detected at offset 10 (leader epoch 0): broker end offset is 5 " \
            "(offset leader epoch 0)" in errors[0][1]
        after = ["after-0", "after-1"]
        produce_records(bootstrap, elect_topic, "all", after)  # offsets 5 and 6 again
        # back to the end offset of epoch 0, not to the earliest offset (auto.offset.reset)
        assert consume(resetting, 2) == ([(5, "after-0", 2), (6, "after-1", 2)], [])

        fresh = Consumer({**consumer_settings, "group.id": f"f-{suffix}", "isolation.level": "read_committed",
                          "auto.offset.reset": "earliest"})
        try:
            fresh.assign([TopicPartition(elect_topic, 0, 0)])
            assert consume(fresh, 7) == ([(n, value, 0) for n, value in enumerate(kept)] +
                                         [(5 + n, value, 2) for n, value in enumerate(after)], [])
            assert consume(fresh, 1, timeout_s=1.0) == ([], [])
        finally:
            fresh.close()
    finally:
        java.close()
        resetting.close()
        reporting.close()
        for broker in sorted(stopped, reverse=True):
            cluster.start_broker(broker)
    for topic in (elect_topic, config_topic):  # 1 truncates to 2's log and follows it
        wait_until(lambda t=topic: eligible_state(cluster, 3, t) == (2, 2, [1, 2], [], []), "1 back in the ISR")

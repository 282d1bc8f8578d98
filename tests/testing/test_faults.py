"""Wire-level faults (broker/faults, docs/testing-failures.md) through real clients against one `MiniKafka`.

Each fault is set the way a user's test sets it (`kafka.faults`, the `minikafka faults` command, the admin port)
and observed from confluent-kafka (librdkafka) and raw requests: an idempotent acks=all producer keeps exactly-once,
in-order delivery across pushed NOT_LEADER_OR_FOLLOWER errors and across a Produce that was appended but never
answered; a commit that was applied while its connection dropped; a slow broker; a blackholed consumer evicted by
its session timeout; and every bad input refused with one line.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka.protocol.consumer.group import OffsetCommitRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.broker.admin_client import AdminCredentials
from minikafka.broker.faults.fault_client import AdminPortError
from minikafka.testing import FaultError, Faults, MiniKafka
from tests.broker.test_fetch_wire import batch_of
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(180)
TIMEOUT_S = 30
SESSION_TIMEOUT_MS = 2000


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"group.min.session.timeout.ms": 500, "group.initial.rebalance.delay.ms": 0,
                    "offsets.topic.num.partitions": 1}) as broker:
        yield broker


@pytest.fixture(autouse=True)
def no_faults_left(kafka: MiniKafka) -> Iterator[None]:
    yield
    kafka.faults.clear_faults()


def new_topic(kafka: MiniKafka, partitions: int = 1) -> str:
    name = f"faults-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT_S)
    return name


def consume_values(kafka: MiniKafka, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            elif values and len(values) >= count and message is None:
                break
    finally:
        consumer.close()
    return values


def produce_all(producer: Producer, topic: str, count: int) -> list[int]:
    """Produce `count` values to partition 0, return the offsets the delivery reports gave, in delivery order."""
    offsets: list[int] = []
    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(str(error))
        else:
            offsets.append(message.offset())

    for index in range(count):
        producer.produce(topic, f"{index}".encode(), partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    assert not failures
    return offsets


def test_an_idempotent_producer_delivers_exactly_once_in_order_across_pushed_not_leader_errors(
        kafka: MiniKafka) -> None:
    topic = new_topic(kafka)
    state = kafka.faults.push_request_errors("Produce", *["NOT_LEADER_OR_FOLLOWER"] * 3)
    assert state["push_request_errors"] == [
        {"api": "Produce", "broker": None, "client_id": None, "errors": ["NOT_LEADER_OR_FOLLOWER"] * 3}]
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 2, "batch.num.messages": 50, "max.in.flight": 5})
    offsets = produce_all(producer, topic, 1000)
    assert kafka.faults.describe()["push_request_errors"] == [], "every pushed error was answered to a Produce"
    assert sorted(offsets) == list(range(1000))
    assert consume_values(kafka, topic, 1000) == [f"{index}".encode() for index in range(1000)]


def test_a_produce_appended_but_never_answered_is_not_duplicated_by_the_idempotent_retry(kafka: MiniKafka) -> None:
    """disconnect_on(Produce): the batch is appended, the connection drops instead of the answer; the producer
    retries the same sequence numbers and the broker answers it as a duplicate."""
    topic = new_topic(kafka)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 2, "batch.num.messages": 20})
    produce_all(producer, topic, 10)  # connected, producer id known
    kafka.faults.disconnect_on("PRODUCE", count=2)
    produce_all(producer, topic, 200)
    assert kafka.faults.describe()["disconnect_on"] == []
    assert consume_values(kafka, topic, 210) == [f"{index}".encode() for index in [*range(10), *range(200)]]


def test_an_offset_commit_whose_connection_drops_instead_of_the_response_is_applied(kafka: MiniKafka) -> None:
    """The commit gap on the wire: no response, the connection closed, and the offset committed all the same."""
    topic = new_topic(kafka)
    group = f"gap-{uuid.uuid4().hex[:6]}"
    kafka.faults.disconnect_on("OffsetCommit")
    cls = OffsetCommitRequest[8]
    partition = cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=42, committed_leader_epoch=-1, committed_metadata="")
    request = cls(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                  topics=[cls.OffsetCommitRequestTopic(name=topic, partitions=[partition])])
    with WireClient(kafka.bootstrap_servers) as client, pytest.raises(ConnectionError):
        client.request(request)
    assert committed_offset(kafka, group, topic) == 42


def committed_offset(kafka: MiniKafka, group: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])
    offset: int = result[group].result(TIMEOUT_S).topic_partitions[0].offset
    return offset


def test_a_consumer_whose_commit_connection_drops_retries_and_the_commit_holds(kafka: MiniKafka) -> None:
    """librdkafka sees a transport failure on its OffsetCommit, finds the coordinator again and retries the commit
    the broker had already applied; the synchronous commit succeeds."""
    topic = new_topic(kafka)
    group = f"commit-gap-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT_S)  # the coordinator connection is up
        kafka.faults.disconnect_on("OffsetCommit", client_id="rdkafka")
        committed = consumer.commit(offsets=[TopicPartition(topic, 0, 42)], asynchronous=False)
        assert [(tp.offset, tp.error) for tp in committed] == [(42, None)]
        assert kafka.faults.describe()["disconnect_on"] == [], "the first OffsetCommit met the fault"
        assert committed_offset(kafka, group, topic) == 42
    finally:
        consumer.close()


def test_set_rtt_holds_every_response_back_without_capping_a_connections_throughput(kafka: MiniKafka) -> None:
    kafka.faults.set_rtt(1, 500)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    started = time.monotonic()
    admin.list_topics(timeout=TIMEOUT_S)
    assert time.monotonic() - started >= 0.5
    # Five requests pipelined on one connection come back in order, together, about one round trip later (held
    # one after the other, they would take 2.5 s).
    api_versions = [struct.pack(">hhih", 18, 0, correlation_id, 4) + b"wire" for correlation_id in range(1, 6)]
    with WireClient(kafka.bootstrap_servers) as client:
        started = time.monotonic()
        client.send_bytes(b"".join(struct.pack(">i", len(body)) + body for body in api_versions))
        correlation_ids = [struct.unpack(">i", client.read_frame()[:4])[0] for _ in api_versions]
        elapsed_s = time.monotonic() - started
    assert correlation_ids == [1, 2, 3, 4, 5]
    assert 0.5 <= elapsed_s < 2.0, f"5 pipelined requests took {elapsed_s:.2f} s at a 0.5 s round trip"
    kafka.faults.set_rtt(1, 0)
    started = time.monotonic()
    admin.list_topics(timeout=TIMEOUT_S)
    assert time.monotonic() - started < 0.5, "no longer held back once the round trip is 0"


def test_responses_held_by_set_rtt_are_not_overtaken_after_the_fault_is_cleared(kafka: MiniKafka) -> None:
    frames = [struct.pack(">hhih", 18, 0, correlation_id, 4) + b"wire" for correlation_id in range(1, 7)]
    with WireClient(kafka.bootstrap_servers) as client:
        kafka.faults.set_rtt(1, 600)
        client.send_bytes(b"".join(struct.pack(">i", len(body)) + body for body in frames[:3]))
        time.sleep(0.1)  # read and served: their responses are held
        kafka.faults.clear_faults()
        client.send_bytes(b"".join(struct.pack(">i", len(body)) + body for body in frames[3:]))
        correlation_ids = [struct.unpack(">i", client.read_frame()[:4])[0] for _ in frames]
    assert correlation_ids == [1, 2, 3, 4, 5, 6]


def test_an_acks_0_produce_meeting_a_pushed_error_closes_its_connection(kafka: MiniKafka) -> None:
    """There is no response to carry the error, so the connection closes, as Kafka closes it for a failed acks=0
    Produce; nothing is appended."""
    topic = new_topic(kafka)
    kafka.faults.push_request_errors("Produce", "NOT_LEADER_OR_FOLLOWER")
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest[9](transactional_id=None, acks=0, timeout_ms=5000, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch_of(1))])])
    request.with_header(correlation_id=1, client_id="acks-0")
    with WireClient(kafka.bootstrap_servers) as client:
        client.send_bytes(bytes(request.encode(header=True, framed=True)))
        assert client.is_closed_by_peer()
    assert kafka.faults.describe()["push_request_errors"] == []
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    offsets = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})
    assert offsets[TopicPartition(topic, 0)].result(TIMEOUT_S).offset == 0


def test_a_consumer_group_rides_out_coordinator_errors_pushed_on_its_group_requests(kafka: MiniKafka) -> None:
    """COORDINATOR_LOAD_IN_PROGRESS on the group lookup and on OffsetCommit, NOT_COORDINATOR on JoinGroup:
    librdkafka retries each; the group forms, reads everything and its commit lands."""
    topic = new_topic(kafka)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    produce_all(producer, topic, 20)
    group = f"coordinator-errors-{uuid.uuid4().hex[:6]}"
    kafka.faults.push_request_errors("FindCoordinator", "COORDINATOR_LOAD_IN_PROGRESS", client_id="reader")
    kafka.faults.push_request_errors("JoinGroup", "NOT_COORDINATOR", client_id="reader")
    kafka.faults.push_request_errors("OffsetCommit", *["COORDINATOR_LOAD_IN_PROGRESS"] * 2, client_id="reader")
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group, "client.id": "reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while len(values) < 20 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert values == [f"{index}".encode() for index in range(20)]
        assert [(tp.offset, tp.error) for tp in consumer.commit(asynchronous=False)] == [(20, None)]
        assert kafka.faults.describe()["push_request_errors"] == [], "every pushed error was answered"
        assert committed_offset(kafka, group, topic) == 20
    finally:
        consumer.close()


def group_consumer(kafka: MiniKafka, group: str, topic: str, client_id: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group, "client.id": client_id,
                         "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 200,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    return consumer


def poll_until(consumers: list[Consumer], done: Any, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for consumer in consumers:
            consumer.poll(0.1)


def test_a_blackholed_consumer_is_evicted_by_its_session_timeout(kafka: MiniKafka) -> None:
    topic = new_topic(kafka, partitions=2)
    group = f"blackhole-{uuid.uuid4().hex[:6]}"
    victim = group_consumer(kafka, group, topic, "victim-consumer")
    survivor = group_consumer(kafka, group, topic, "survivor-consumer")
    try:
        poll_until([victim, survivor], lambda: len(victim.assignment()) == 1 and len(survivor.assignment()) == 1)
        kafka.faults.blackhole("victim")
        started = time.monotonic()
        poll_until([victim, survivor], lambda: len(survivor.assignment()) == 2)
        assert time.monotonic() - started >= SESSION_TIMEOUT_MS / 1000 * 0.8, "evicted before its session expired"
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        members = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S).members
        assert [member.client_id for member in members] == ["survivor-consumer"]
    finally:
        kafka.faults.clear_faults()
        survivor.close()
        victim.close()


def test_a_blackholed_request_is_never_answered_and_clearing_closes_its_connection(kafka: MiniKafka) -> None:
    topic = new_topic(kafka)
    kafka.faults.blackhole("wire-test")
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest[9](transactional_id=None, acks=1, timeout_ms=5000, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch_of(1))])])
    request.with_header(correlation_id=1, client_id="wire-test")
    with WireClient(kafka.bootstrap_servers, timeout_s=1.0) as client:
        client.send_bytes(bytes(request.encode(header=True, framed=True)))
        with pytest.raises(TimeoutError):
            client.read_frame()
        kafka.faults.clear_faults()
        assert client.is_closed_by_peer()
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    offsets = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})
    assert offsets[TopicPartition(topic, 0)].result(TIMEOUT_S).offset == 0, "the held Produce was never served"
    with WireClient(kafka.bootstrap_servers) as client:
        assert client.request(request).responses[0].partition_responses[0].error_code == 0


def test_pushed_errors_apply_only_to_matching_client_ids_and_carry_the_code_on_every_partition(
        kafka: MiniKafka) -> None:
    topic = new_topic(kafka, partitions=3)
    kafka.faults.push_request_errors(2, 6, client_id="wire-test")  # ListOffsets, NOT_LEADER_OR_FOLLOWER by number
    kafka.faults.push_request_errors("ListOffsets", "NOT_COORDINATOR", client_id="someone-else")
    data = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest[7](replica_id=-1, isolation_level=0, topics=[data(
        name=topic, partitions=[data.ListOffsetsPartition(partition_index=index, current_leader_epoch=-1,
                                                          timestamp=-1) for index in range(3)])])
    with WireClient(kafka.bootstrap_servers) as client:
        failed = client.request(request)
        pipelined = client.request(request)  # sent before the client refreshed its metadata: the leader still moved
        stale = kafka.faults.describe()["stale_metadata"]
        client.request(MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False))
        served = client.request(request)
    assert [(p.partition_index, p.error_code) for p in failed.topics[0].partitions] == [(0, 6), (1, 6), (2, 6)]
    assert [(p.partition_index, p.error_code) for p in pipelined.topics[0].partitions] == [(0, 6), (1, 6), (2, 6)]
    assert stale == [{"api": "ListOffsets", "broker": 1, "client_id": "wire-test",
                      "error": "NOT_LEADER_OR_FOLLOWER"}]
    assert [(p.partition_index, p.error_code, p.offset) for p in served.topics[0].partitions] == [
        (0, 0, 0), (1, 0, 0), (2, 0, 0)]
    assert kafka.faults.describe()["push_request_errors"] == [
        {"api": "ListOffsets", "broker": None, "client_id": "someone-else", "errors": ["NOT_COORDINATOR"]}]
    assert kafka.faults.describe()["stale_metadata"] == []


def test_a_pushed_non_metadata_error_answers_one_request_only(kafka: MiniKafka) -> None:
    kafka.faults.push_request_errors("ListOffsets", "NOT_ENOUGH_REPLICAS", "UNKNOWN_SERVER_ERROR")
    topic = new_topic(kafka)
    data = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest[7](replica_id=-1, isolation_level=0, topics=[data(
        name=topic, partitions=[data.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
    with WireClient(kafka.bootstrap_servers) as client:
        codes = [client.request(request).topics[0].partitions[0].error_code for _ in range(3)]
    assert codes == [19, -1, 0]
    assert kafka.faults.describe()["stale_metadata"] == []


@pytest.mark.parametrize(("call", "reason"), [
    (lambda faults: faults.push_request_errors("Bogus", "NOT_LEADER_OR_FOLLOWER"), "unknown API 'Bogus'"),
    (lambda faults: faults.push_request_errors(4, "NONE"), "unknown API key 4"),
    (lambda faults: faults.push_request_errors("Produce", "NOT_AN_ERROR"), "unknown error 'NOT_AN_ERROR'"),
    (lambda faults: faults.push_request_errors("Produce", 999), "unknown error code 999"),
    (lambda faults: faults.push_request_errors("Produce"), "missing parameter errors"),
    (lambda faults: faults.push_request_errors("Produce", "NONE", broker=7), "unknown broker 7: the brokers are 1"),
    (lambda faults: faults.set_rtt(2, 100), "unknown broker 2"),
    (lambda faults: faults.set_rtt(1, -5), "ms must be between 0 and 60000, got -5"),
    (lambda faults: faults.disconnect_on("Fetch", count=0), "count must be between 1"),
    (lambda faults: faults.blackhole(""), "missing parameter client_id"),
])
def test_bad_input_is_refused_with_one_line_in_python(kafka: MiniKafka, call: Any, reason: str) -> None:
    with pytest.raises(FaultError) as refused:
        call(kafka.faults)
    assert reason in str(refused.value)
    assert "\n" not in str(refused.value)
    assert kafka.faults.describe() == {"brokers": [1], "push_request_errors": [], "stale_metadata": [], "rtt_ms": {},
                                       "disconnect_on": [], "blackhole": [], "stopped_brokers": [],
                                       "paused_followers": []}


def minikafka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikafka.broker", *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)


def test_the_command_line_sets_faults_and_refuses_bad_input_with_exit_2(kafka: MiniKafka) -> None:
    done = minikafka("faults", "push-request-errors", "offset-commit", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                     "--client-id", "app", "--admin-url", kafka.admin_url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["push_request_errors"] == [
        {"api": "OffsetCommit", "broker": None, "client_id": "app",
         "errors": ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"]}]
    assert minikafka("faults", "set-rtt", "1", "50", "--admin-url", kafka.admin_url).returncode == 0
    assert minikafka("faults", "disconnect-on", "Fetch", "--count", "3", "--admin-url", kafka.admin_url).returncode == 0
    assert minikafka("faults", "blackhole", "nobody", "--admin-url", kafka.admin_url).returncode == 0
    described = json.loads(minikafka("faults", "describe", "--admin-url", kafka.admin_url).stdout)
    assert described["rtt_ms"] == {"1": 50}
    assert described["disconnect_on"] == [{"api": "Fetch", "broker": None, "client_id": None, "count": 3}]
    assert described["blackhole"] == ["nobody"]
    refused = minikafka("faults", "set-rtt", "9", "50", "--admin-url", kafka.admin_url)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == ["minikafka faults set-rtt: unknown broker 9: the brokers are 1"]
    unreachable = minikafka("faults", "clear-faults", "--admin-url", "http://127.0.0.1:1")
    assert unreachable.returncode == 1
    assert "cannot reach" in unreachable.stderr
    cleared = minikafka("faults", "clear-faults", "--admin-url", kafka.admin_url)
    assert cleared.returncode == 0
    assert json.loads(cleared.stdout)["blackhole"] == []


def test_the_admin_port_answers_400_with_the_reason(kafka: MiniKafka) -> None:
    request = urllib.request.Request(f"{kafka.admin_url}/admin/faults/disconnect-on?api=Nope", data=b"",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=TIMEOUT_S)
    assert refused.value.code == 400
    assert json.loads(refused.value.read()) == {
        "error": "unknown API 'Nope': use Kafka's name (Produce, OffsetCommit, FIND_COORDINATOR) or the API key's "
                 "number"}
    with pytest.raises(urllib.error.HTTPError) as wrong_method:
        urllib.request.urlopen(f"{kafka.admin_url}/admin/faults/clear-faults", timeout=TIMEOUT_S)
    assert wrong_method.value.code == 405


def test_faults_on_a_secured_broker_need_the_admin_credentials() -> None:
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="ops" password="ops-plain" '
            'user_ops="ops-plain";')
    with MiniKafka({"sasl.enabled.mechanisms": "PLAIN", "listener.name.clients.plain.sasl.jaas.config": jaas,
                    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "super.users": "User:ops;User:ANONYMOUS"}, listeners={"CLIENTS": "SASL_PLAINTEXT"}) as secured:
        with pytest.raises(AdminPortError, match="HTTP 401"):
            secured.faults.set_rtt(1, 10)
        state = Faults(secured.admin_url, AdminCredentials("ops", "ops-plain")).set_rtt(1, 10)
        assert state["rtt_ms"] == {"1": 10}


def test_the_console_shows_the_faults_in_force_and_nothing_once_cleared(kafka: MiniKafka) -> None:
    def front_page() -> str:
        with urllib.request.urlopen(f"{kafka.admin_url}/", timeout=TIMEOUT_S) as response:
            return str(response.read().decode())

    assert "Faults in force" not in front_page()
    kafka.faults.push_request_errors("Produce", "NOT_ENOUGH_REPLICAS", broker=1, client_id="orders")
    kafka.faults.set_rtt(1, 75)
    kafka.faults.blackhole("victim")
    page = front_page()
    assert "<h1>Faults in force</h1>" in page
    assert ("<td>push_request_errors</td><td>Produce requests to broker 1 from client ids containing &#x27;orders&#x27;"
            "</td><td>answered NOT_ENOUGH_REPLICAS</td>") in page
    assert "<td>set_rtt</td><td>responses of broker 1</td><td>held back 75 ms</td>" in page
    assert "<td>blackhole</td><td>requests from client ids containing &#x27;victim&#x27;</td>" in page
    kafka.faults.clear_faults()
    assert "Faults in force" not in front_page()

"""Issue 3 "Done when", interop half: one consumer-group scenario run against Apache Kafka and minikafka.

- The Java client commits inside a group (commitSync), the broker restarts (minikafka, and the session's Apache
  Kafka node too), and a new Java consumer of the group resumes exactly at the committed offsets.
- confluent-kafka consumers on a 6-partition topic: partitions per member for 1, 2 and 3 members, committed
  offsets read back through the AdminClient, deleting the group while it has members and after.
- Raw group requests (tests/wire_client.py): the error codes for unknown member, illegal generation, offset
  commit to an unknown topic, deleting a non-empty group.

Every observation is pinned to what Kafka's protocol says, and the minikafka run is compared with the Apache
Kafka run of the same scenario (computed once per session and cached).
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.broker_process import BrokerProcess
from tests.interop.java_client import run_java_client
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

#: minikafka runs with the same group settings as the Apache Kafka harness (bench/apache_kafka.py).
MINIKAFKA_OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}
TIMEOUT_S = 30.0
#: Kafka's group.min.session.timeout.ms default is 6000; stay above it on both brokers.
SESSION_TIMEOUT_MS = 10_000

# Error codes (Kafka protocol, §6 of the protocol notes).
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
NON_EMPTY_GROUP = 68
MEMBER_ID_REQUIRED = 79

_apache_observations: dict[str, dict[str, Any]] = {}


@pytest.fixture
def minikafka(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    return broker_factory(MINIKAFKA_OVERRIDES)


@pytest.fixture
def group_target(target: str, request: pytest.FixtureRequest) -> Any:
    """The broker under test: the session's ApacheKafka or a fresh minikafka BrokerProcess (both `.bootstrap`)."""
    return request.getfixturevalue("apache_kafka" if target == "apache" else "minikafka")


def _apache_observation(name: str, apache_kafka: Any, observe: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    if name not in _apache_observations:
        _apache_observations[name] = observe(apache_kafka)
    return _apache_observations[name]


def _record(target: str, name: str, observed: dict[str, Any]) -> None:
    if target == "apache":
        _apache_observations[name] = observed


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------------- 1. Java client: commit, restart, resume

JAVA_RECORDS = 90
JAVA_COMMITTED_RECORDS = 40
JAVA_PARTITIONS = 3
#: At most 14 per partition, so all three partitions get a commit in the middle of their log (24, 33, 33 records).
JAVA_MAX_PER_PARTITION = 14


def restart_apache(kafka: Any) -> None:
    """Stop and start the session's Apache Kafka node (same port and log dirs; about 10 s)."""
    kafka.stop()
    kafka.start()


def observe_java_resume(broker: Any, restart: Callable[[], None]) -> dict[str, Any]:
    """Produce, commit K records in a group, restart the broker, resume; return what the clients saw."""
    topic, group = _unique("java-resume"), _unique("java-group")
    produced = run_java_client(broker.bootstrap, topic, JAVA_RECORDS, mode="produce", partitions=JAVA_PARTITIONS)
    first = run_java_client(broker.bootstrap, topic, JAVA_COMMITTED_RECORDS, mode="consume-commit", group=group,
                            max_per_partition=JAVA_MAX_PER_PARTITION)
    restart()
    resumed = run_java_client(broker.bootstrap, topic, JAVA_RECORDS - JAVA_COMMITTED_RECORDS, mode="consume",
                              group=group)
    return {"produced": produced, "first": first, "resumed": resumed}


def check_java_resume(observed: dict[str, Any]) -> dict[str, Any]:
    """Assert the resume contract; return the broker-independent part for the cross-broker comparison."""
    produced, first, resumed = observed["produced"], observed["first"], observed["resumed"]
    end_offsets = {p: stats["last_offset"] + 1 for p, stats in produced["produced_partitions"].items()}
    committed: dict[str, int] = first["committed"]
    assert first["consumed"] == JAVA_COMMITTED_RECORDS, first
    assert sorted(committed) == sorted(end_offsets), f"every partition should have a commit: {first}"
    assert all(offset < end_offsets[p] for p, offset in committed.items()), first
    assert first["first_offset"] == {p: 0 for p in committed}, first
    assert sum(committed.values()) == JAVA_COMMITTED_RECORDS, first  # contiguous from offset 0
    assert first["committed_read_back"] == committed, "OffsetFetch disagrees with the commit"

    # The new consumer starts every partition exactly at its committed offset (0, via earliest, if none).
    start = {p: committed.get(p, 0) for p in end_offsets}
    expected_first = {p: offset for p, offset in start.items() if offset < end_offsets[p]}
    assert resumed["first_offset"] == expected_first, (resumed, committed)
    assert resumed["consumed"] == JAVA_RECORDS - JAVA_COMMITTED_RECORDS, resumed
    assert resumed["out_of_order"] == 0
    assert resumed["last_offset"] == {p: end_offsets[p] - 1 for p in expected_first}
    return {
        "produced_partitions": produced["produced_partitions"],
        "committed_total": sum(committed.values()),
        "resumed": resumed["consumed"],
        "resumed_at_committed": resumed["first_offset"] == expected_first,
    }


@pytest.mark.usefixtures("java_client")
def test_java_consumer_resumes_at_committed_offsets(target: str, group_target: Any, apache_kafka: Any) -> None:
    """Both brokers are restarted between the commit and the resume."""
    if target == "minikafka":
        summary = check_java_resume(observe_java_resume(group_target, group_target.restart))
    else:
        summary = check_java_resume(observe_java_resume(group_target, lambda: restart_apache(group_target)))
    _record(target, "java_resume", summary)
    reference = _apache_observation(
        "java_resume", apache_kafka,
        lambda kafka: check_java_resume(observe_java_resume(kafka, lambda: restart_apache(kafka))))
    assert summary == reference


# ------------------------------------------------------- 2. confluent-kafka members: assignment and offsets

GROUP_PARTITIONS = 6


def _consumer(bootstrap: str, group: str, topic: str) -> Any:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
                         "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range"})
    consumer.subscribe([topic])
    return consumer


def _wait_balanced(consumers: list[Any]) -> list[int]:
    """Poll every member until all have an assignment and together own each partition exactly once."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(0.05)
        assignments = [[tp.partition for tp in consumer.assignment()] for consumer in consumers]
        owned = sorted(p for assignment in assignments for p in assignment)
        if all(assignments) and owned == list(range(GROUP_PARTITIONS)):
            return sorted(len(assignment) for assignment in assignments)
    raise AssertionError(f"group never balanced: {[c.assignment() for c in consumers]}")


def _admin_error_code(future: Any) -> int:
    from confluent_kafka import KafkaError

    try:
        future.result(timeout=TIMEOUT_S)
    except Exception as exc:  # KafkaException wrapping a KafkaError
        error = exc.args[0] if exc.args else None
        return int(error.code()) if isinstance(error, KafkaError) else -1
    return NONE


def observe_assignments_and_offsets(bootstrap: str) -> dict[str, Any]:
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = _unique("members"), _unique("members-group")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, GROUP_PARTITIONS, 1)])[topic].result(timeout=TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(GROUP_PARTITIONS * 10):
        producer.produce(topic, value=b"v%d" % index, partition=index % GROUP_PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0

    observed: dict[str, Any] = {"partitions_per_member": []}
    consumers: list[Any] = []
    try:
        for _ in range(3):
            consumers.append(_consumer(bootstrap, group, topic))
            observed["partitions_per_member"].append(_wait_balanced(consumers))
        for consumer in consumers:
            offsets = [TopicPartition(topic, tp.partition, tp.partition + 1) for tp in consumer.assignment()]
            consumer.commit(offsets=offsets, asynchronous=False)
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(GROUP_PARTITIONS)])
        listed = admin.list_consumer_group_offsets([request])[group].result(timeout=TIMEOUT_S)
        observed["committed"] = {tp.partition: tp.offset for tp in listed.topic_partitions}
        observed["delete_with_members"] = _admin_error_code(admin.delete_consumer_groups([group])[group])
    finally:
        for consumer in consumers:
            consumer.close()
    observed["delete_empty"] = _admin_error_code(admin.delete_consumer_groups([group])[group])
    listed = admin.list_consumer_group_offsets([request])[group].result(timeout=TIMEOUT_S)
    observed["committed_after_delete"] = sorted({tp.offset for tp in listed.topic_partitions})
    return observed


EXPECTED_ASSIGNMENTS_AND_OFFSETS = {
    "partitions_per_member": [[6], [3, 3], [2, 2, 2]],
    "committed": {p: p + 1 for p in range(GROUP_PARTITIONS)},
    "delete_with_members": NON_EMPTY_GROUP,
    "delete_empty": NONE,
    "committed_after_delete": [-1001],  # OFFSET_INVALID: nothing committed any more
}


def test_group_assignments_and_committed_offsets(target: str, group_target: Any, apache_kafka: Any) -> None:
    observed = observe_assignments_and_offsets(group_target.bootstrap)
    _record(target, "assignments", observed)
    assert observed == EXPECTED_ASSIGNMENTS_AND_OFFSETS
    reference = _apache_observation(
        "assignments", apache_kafka, lambda kafka: observe_assignments_and_offsets(kafka.bootstrap))
    assert observed == reference


# --------------------------------------------------------------------------------- 3. raw group error codes


def _subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, [topic], user_data=null."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


def _assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [(topic, [partition])], user_data=null."""
    name = topic.encode()
    body = struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", len(partitions))
    return body + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1)


class RawMember:
    """One classic-protocol group member driven request by request over a WireClient. Not thread-safe."""

    def __init__(self, client: WireClient, group: str, topic: str) -> None:
        self.client = client
        self.group = group
        self.topic = topic
        self.member_id = ""
        self.generation_id = -1

    def find_coordinator(self) -> None:
        from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

        response = self.client.request_until_ready(FindCoordinatorRequest[3](key=self.group, key_type=0))
        assert response.error_code == NONE, response

    def join_request(self, member_id: str, *, group: str | None = None, session_timeout_ms: int = 30_000,
                     protocol_type: str = "consumer", protocol_name: str = "range") -> Any:
        """One JoinGroup v5 as given; the member's own state is left alone."""
        return self.client.request(self._join_group(member_id, group=group, session_timeout_ms=session_timeout_ms,
                                                    protocol_type=protocol_type, protocol_name=protocol_name))

    def _join_group(self, member_id: str, *, group: str | None = None, session_timeout_ms: int = 30_000,
                    protocol_type: str = "consumer", protocol_name: str = "range") -> Any:
        from kafka.protocol.consumer.group import JoinGroupRequest

        request_class = JoinGroupRequest[5]
        return request_class(
            group_id=group or self.group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=30_000,
            member_id=member_id, group_instance_id=None, protocol_type=protocol_type,
            protocols=[request_class.JoinGroupRequestProtocol(name=protocol_name,
                                                              metadata=_subscription(self.topic))],
        )

    def join(self) -> int:
        """JoinGroup v5 as this member; resent while the coordinator is loading. Returns the error code."""
        response = self.client.request_until_ready(self._join_group(self.member_id))
        self.member_id = response.member_id
        if response.error_code == NONE:
            self.generation_id = response.generation_id
            assert response.leader == self.member_id
        return int(response.error_code)

    def sync(self, generation_id: int | None = None, member_id: str | None = None) -> int:
        """SyncGroup v3 as the leader (or with the given generation / member id), assigning partition 0."""
        from kafka.protocol.consumer.group import SyncGroupRequest

        request_class = SyncGroupRequest[3]
        response = self.client.request(request_class(
            group_id=self.group, generation_id=self.generation_id if generation_id is None else generation_id,
            member_id=member_id or self.member_id, group_instance_id=None,
            assignments=[request_class.SyncGroupRequestAssignment(
                member_id=self.member_id, assignment=_assignment(self.topic, [0]))],
        ))
        return int(response.error_code)

    def heartbeat(self, generation_id: int, member_id: str, group: str | None = None) -> int:
        from kafka.protocol.consumer.group import HeartbeatRequest

        response = self.client.request(HeartbeatRequest[4](
            group_id=group or self.group, generation_id=generation_id, member_id=member_id,
            group_instance_id=None))
        return int(response.error_code)

    def commit(self, generation_id: int, member_id: str, topic: str, group: str | None = None,
               partition: int = 0) -> int:
        from kafka.protocol.consumer.group import OffsetCommitRequest

        request_class = OffsetCommitRequest[8]
        topic_class = request_class.OffsetCommitRequestTopic
        response = self.client.request(request_class(
            group_id=group or self.group, generation_id_or_member_epoch=generation_id, member_id=member_id,
            group_instance_id=None,
            topics=[topic_class(name=topic, partitions=[topic_class.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=1, committed_leader_epoch=-1,
                committed_metadata="")])],
        ))
        return int(response.topics[0].partitions[0].error_code)

    def leave(self, member_id: str | None = None, group: str | None = None) -> tuple[int, list[int]]:
        """LeaveGroup v3: (top-level error code, per-member error codes)."""
        from kafka.protocol.consumer.group import LeaveGroupRequest

        request_class = LeaveGroupRequest[3]
        response = self.client.request(request_class(
            group_id=group or self.group,
            members=[request_class.MemberIdentity(member_id=member_id or self.member_id, group_instance_id=None)]))
        return int(response.error_code), [int(member.error_code) for member in response.members]


def observe_error_codes(bootstrap: str) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = _unique("codes"), _unique("codes-group")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT_S)
    observed: dict[str, Any] = {}
    with WireClient(bootstrap, timeout_s=TIMEOUT_S + 5) as client:
        member = RawMember(client, group, topic)
        member.find_coordinator()
        observed["join_without_member_id"] = member.join()
        assert member.member_id, "MEMBER_ID_REQUIRED must come with a member id"
        observed["join"] = member.join()
        generation, member_id = member.generation_id, member.member_id
        observed["sync_illegal_generation"] = member.sync(generation_id=generation + 1)
        observed["sync_unknown_member"] = member.sync(member_id="unknown-member")
        observed["sync"] = member.sync()
        observed["join_unknown_member"] = member.join_request("unknown-member").error_code
        observed["join_inconsistent_protocol"] = member.join_request(
            "", protocol_type="other", protocol_name="other").error_code
        observed["join_session_timeout_below_minimum"] = member.join_request(
            "", group=_unique("short-session"), session_timeout_ms=1000).error_code
        observed["heartbeat"] = member.heartbeat(generation, member_id)
        observed["heartbeat_unknown_member"] = member.heartbeat(generation, "unknown-member")
        observed["heartbeat_illegal_generation"] = member.heartbeat(generation + 1, member_id)
        observed["commit"] = member.commit(generation, member_id, topic)
        observed["commit_unknown_member"] = member.commit(generation, "unknown-member", topic)
        observed["commit_illegal_generation"] = member.commit(generation + 1, member_id, topic)
        observed["commit_unknown_topic_as_member"] = member.commit(generation, member_id, "no-such-topic")
        observed["commit_unknown_partition"] = member.commit(generation, member_id, topic, partition=7)
        observed["commit_without_generation_to_group_with_members"] = member.commit(-1, "", topic)
        observed["commit_unknown_topic_simple"] = member.commit(-1, "", "no-such-topic", group=_unique("simple"))
        observed["commit_generation_to_unknown_group"] = member.commit(5, "m", topic, group=_unique("never-seen"))
        observed["heartbeat_unknown_group"] = member.heartbeat(1, "m", group=_unique("never-seen"))
        observed["delete_non_empty_group"] = _admin_error_code(admin.delete_consumer_groups([group])[group])
        observed["leave_unknown_member"] = member.leave(member_id="unknown-member")
        observed["leave_unknown_group"] = member.leave(group=_unique("never-seen"))
        observed["leave"] = member.leave()
        observed["heartbeat_after_leave"] = member.heartbeat(generation, member_id)
        observed["delete_empty_group"] = _admin_error_code(admin.delete_consumer_groups([group])[group])
    return observed


EXPECTED_ERROR_CODES = {
    "join_without_member_id": MEMBER_ID_REQUIRED,
    "join": NONE,
    "sync_illegal_generation": ILLEGAL_GENERATION,
    "sync_unknown_member": UNKNOWN_MEMBER_ID,
    "sync": NONE,
    "join_unknown_member": UNKNOWN_MEMBER_ID,
    "join_inconsistent_protocol": INCONSISTENT_GROUP_PROTOCOL,
    "join_session_timeout_below_minimum": INVALID_SESSION_TIMEOUT,  # group.min.session.timeout.ms = 6000
    "heartbeat": NONE,
    "heartbeat_unknown_member": UNKNOWN_MEMBER_ID,
    "heartbeat_illegal_generation": ILLEGAL_GENERATION,
    "commit": NONE,
    "commit_unknown_member": UNKNOWN_MEMBER_ID,
    "commit_illegal_generation": ILLEGAL_GENERATION,
    "commit_unknown_topic_as_member": UNKNOWN_TOPIC_OR_PARTITION,
    "commit_unknown_partition": UNKNOWN_TOPIC_OR_PARTITION,
    "commit_without_generation_to_group_with_members": UNKNOWN_MEMBER_ID,
    "commit_unknown_topic_simple": UNKNOWN_TOPIC_OR_PARTITION,
    "commit_generation_to_unknown_group": ILLEGAL_GENERATION,  # OffsetCommit v8; v9+ says GROUP_ID_NOT_FOUND
    "heartbeat_unknown_group": UNKNOWN_MEMBER_ID,
    "delete_non_empty_group": NON_EMPTY_GROUP,
    "leave_unknown_member": (NONE, [UNKNOWN_MEMBER_ID]),
    "leave_unknown_group": (NONE, [UNKNOWN_MEMBER_ID]),
    "leave": (NONE, [NONE]),
    "heartbeat_after_leave": UNKNOWN_MEMBER_ID,
    "delete_empty_group": NONE,
}


def test_group_error_codes(target: str, group_target: Any, apache_kafka: Any) -> None:
    observed = observe_error_codes(group_target.bootstrap)
    _record(target, "error_codes", observed)
    reference = _apache_observation("error_codes", apache_kafka, lambda kafka: observe_error_codes(kafka.bootstrap))
    assert observed == reference, "minikafka and Apache Kafka answer differently"
    assert observed == EXPECTED_ERROR_CODES

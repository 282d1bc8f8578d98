"""Coordinators spread over several brokers (`minikafka.brokers=3`), on the wire: FindCoordinator answers the leader
of the key's `__consumer_offsets` / `__transaction_state` partition (`(key.hashCode & 0x7fffffff) %
partitions`), the other brokers answer NOT_COORDINATOR to the group and transaction requests, ListGroups lists only
the groups a broker coordinates, and the coordinator moves with its partition's leadership (`move_coordinator`,
`stop_broker`) without losing a committed offset. Internal topics take their replication factor from
`offsets.topic.replication.factor` / `transaction.state.log.replication.factor`; above the broker count they cannot
be created and FindCoordinator answers COORDINATOR_NOT_AVAILABLE, as Kafka does."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

from minikafka.protocol.schemas import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from minikafka.testing import FaultError, MiniKafka
from tests.broker.test_several_brokers_wire import address, create_topic, minikafka_command
from tests.wire_client import WireClient

NONE, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 15, 16
PARTITIONS = 6
TOPIC = "committed"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniKafka]:
    with MiniKafka({"offsets.topic.num.partitions": PARTITIONS, "transaction.state.log.num.partitions": PARTITIONS,
                    "group.initial.rebalance.delay.ms": 0},
                   data_dir=tmp_path_factory.mktemp("coordinators") / "data", brokers=3) as broker:
        with WireClient(address(broker, 1)) as client:
            assert create_topic(client, TOPIC, partitions=2, replication_factor=3) == NONE
        yield broker


def kafka_partition_for(key: str) -> int:
    """`(key.hashCode() & 0x7fffffff) % partitions` (coordinator_partitioning.partition_for: Kafka's rule but for
    negative hash codes), written out independently of the broker's code."""
    value = 0
    for char in key:  # the keys below are ASCII: one UTF-16 unit each
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return (value & 0x7FFFFFFF) % PARTITIONS


def find(kafka: MiniKafka, keys: list[str], key_type: int = 0, via: int = 1, version: int = 4) -> dict[str, Any]:
    with WireClient(address(kafka, via)) as client:
        answer = client.request_until_ready(FindCoordinatorRequest[version](key_type=key_type, coordinator_keys=keys))
    return {c.key: c for c in answer.coordinators}


def coordinator_of(kafka: MiniKafka, key: str, key_type: int = 0, via: int = 1) -> int:
    found = find(kafka, [key], key_type, via)[key]
    assert found.error_code == NONE, found
    return int(found.node_id)


def internal_partitions(kafka: MiniKafka, topic: str, via: int = 1) -> dict[int, Any]:
    with WireClient(address(kafka, via)) as client:
        answer = client.request(MetadataRequest[12](
            topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False))
    return {p.partition_index: p for p in answer.topics[0].partitions}


def commit(client: WireClient, group: str, offset: int) -> int:
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    answer = client.request(OffsetCommitRequest[8](
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, topics=[topic(
            name=TOPIC, partitions=[topic.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")])]))
    return int(answer.topics[0].partitions[0].error_code)


def fetch_committed(client: WireClient, group: str) -> tuple[int, int]:
    """(group error, committed offset of partition 0) by OffsetFetch v8."""
    group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
    answer = client.request(OffsetFetchRequest[8](groups=[group_cls(group_id=group, topics=[
        group_cls.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])], require_stable=False)).groups[0]
    return int(answer.error_code), (answer.topics[0].partitions[0].committed_offset if answer.topics else -1)


def test_find_coordinator_answers_the_leader_of_the_keys_internal_partition(kafka: MiniKafka) -> None:
    groups = [f"group-{index}" for index in range(12)]
    transactional_ids = [f"txn-{index}" for index in range(12)]
    found = find(kafka, groups)
    offsets = internal_partitions(kafka, "__consumer_offsets")
    assert sorted(offsets) == list(range(PARTITIONS))
    assert all(len(p.replica_nodes) == 3 for p in offsets.values())  # offsets.topic.replication.factor (3)
    assert {group: found[group].node_id for group in groups} == {
        group: offsets[kafka_partition_for(group)].leader_id for group in groups}
    assert len({found[group].node_id for group in groups}) > 1  # spread over the brokers
    assert all(f"{found[g].host}:{found[g].port}" == address(kafka, found[g].node_id) for g in groups)
    assert {g: c.node_id for g, c in find(kafka, groups, via=3).items()} == {g: c.node_id for g, c in found.items()}
    txns = find(kafka, transactional_ids, key_type=1)
    states = internal_partitions(kafka, "__transaction_state")
    assert {t: txns[t].node_id for t in transactional_ids} == {
        t: states[kafka_partition_for(t)].leader_id for t in transactional_ids}
    with WireClient(address(kafka, 2)) as client:  # v0-3 carry one key
        for version in (0, 1, 3):
            request = FindCoordinatorRequest[version](key="group-1") if version == 0 else \
                FindCoordinatorRequest[version](key="group-1", key_type=0)
            answer = client.request(request)
            assert (answer.error_code, answer.node_id) == (NONE, found["group-1"].node_id)


def test_a_share_state_key_finds_the_leader_of_its_share_group_state_partition(kafka: MiniKafka) -> None:
    key = "share-g:6f2c3f65-8a7b-4e43-a1a8-3a0b4c1d2e3f:0"
    answer = find(kafka, [key, "not-a-share-key"], key_type=2, version=6)
    assert answer["not-a-share-key"].error_code == 42  # INVALID_REQUEST
    assert answer[key].error_code == NONE and answer[key].node_id in (1, 2, 3)


def group_requests(group: str) -> dict[str, Any]:
    protocol = JoinGroupRequest.JoinGroupRequestProtocol
    describe = DescribeGroupsRequest[5](groups=[group], include_authorized_operations=False)
    offset_delete = OffsetDeleteRequest.OffsetDeleteRequestTopic
    return {
        "JoinGroup": (JoinGroupRequest[5](
            group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
            group_instance_id=None, protocol_type="consumer", protocols=[protocol(name="range", metadata=b"")]),
            lambda a: a.error_code),
        "SyncGroup": (SyncGroupRequest[5](group_id=group, generation_id=1, member_id="m", group_instance_id=None,
                                          protocol_type="consumer", protocol_name="range", assignments=[]),
                      lambda a: a.error_code),
        "Heartbeat": (HeartbeatRequest[4](group_id=group, generation_id=1, member_id="m", group_instance_id=None),
                      lambda a: a.error_code),
        "LeaveGroup": (LeaveGroupRequest[4](group_id=group, members=[LeaveGroupRequest.MemberIdentity(
            member_id="m", group_instance_id=None)]), lambda a: a.error_code),
        "OffsetDelete": (OffsetDeleteRequest[0](group_id=group, topics=[offset_delete(
            name=TOPIC, partitions=[offset_delete.OffsetDeleteRequestPartition(partition_index=0)])]),
            lambda a: a.error_code),
        "OffsetFetch v7": (OffsetFetchRequest[7](group_id=group, topics=None, require_stable=False),
                           lambda a: a.error_code),
        "DescribeGroups": (describe, lambda a: a.groups[0].error_code),
    }


def test_group_requests_to_a_non_coordinator_answer_not_coordinator(kafka: MiniKafka) -> None:
    group = "group-2"
    coordinator = coordinator_of(kafka, group)
    other = next(broker for broker in (1, 2, 3) if broker != coordinator)
    with WireClient(address(kafka, coordinator)) as client:
        served = {api: read(client.request(request)) for api, (request, read) in group_requests(group).items()}
        assert commit(client, group, 42) == NONE  # after the OffsetDelete above
        listed = [g.group_id for g in client.request(ListGroupsRequest[4](states_filter=[])).groups]
    assert NOT_COORDINATOR not in served.values(), served
    assert group in listed
    with WireClient(address(kafka, other)) as client:
        refused = {api: read(client.request(request)) for api, (request, read) in group_requests(group).items()}
        assert refused == {api: NOT_COORDINATOR for api in refused}
        assert commit(client, group, 43) == NOT_COORDINATOR
        assert fetch_committed(client, group) == (NOT_COORDINATOR, -1)
        assert group not in [g.group_id for g in client.request(ListGroupsRequest[4](states_filter=[])).groups]
        deleted = client.request(DeleteGroupsRequest[2](groups_names=[group])).results[0]
        assert deleted.error_code == NOT_COORDINATOR
    with WireClient(address(kafka, coordinator)) as client:
        assert fetch_committed(client, group) == (NONE, 42)  # nothing the other broker was sent changed it


def test_transaction_requests_to_a_non_coordinator_answer_not_coordinator(kafka: MiniKafka) -> None:
    transactional_id = "txn-3"
    coordinator = coordinator_of(kafka, transactional_id, key_type=1)
    other = next(broker for broker in (1, 2, 3) if broker != coordinator)
    init = InitProducerIdRequest[4](transactional_id=transactional_id, transaction_timeout_ms=60_000,
                                    producer_id=-1, producer_epoch=-1)
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    with WireClient(address(kafka, other)) as client:
        assert client.request(init).error_code == NOT_COORDINATOR
        assert client.request(AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id=transactional_id, v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=0, v3_and_below_topics=[topic(name=TOPIC, partitions=[0])])
        ).results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == NOT_COORDINATOR
        assert client.request(EndTxnRequest[3](transactional_id=transactional_id, producer_id=1, producer_epoch=0,
                                               committed=True)).error_code == NOT_COORDINATOR
        described = client.request(DescribeTransactionsRequest[0](transactional_ids=[transactional_id]))
        assert described.transaction_states[0].error_code == NOT_COORDINATOR
        # an idempotent producer's InitProducerId has no coordinator: any broker answers it
        assert client.request(InitProducerIdRequest[4](transactional_id=None, transaction_timeout_ms=60_000,
                                                       producer_id=-1, producer_epoch=-1)).error_code == NONE
    with WireClient(address(kafka, coordinator)) as client:
        assert client.request_until_ready(init).error_code == NONE
        described = client.request(DescribeTransactionsRequest[0](transactional_ids=[transactional_id]))
        assert described.transaction_states[0].error_code == NONE


def test_move_coordinator_moves_the_leadership_of_the_groups_partition(kafka: MiniKafka) -> None:
    group = "group-4"
    before = coordinator_of(kafka, group)
    with WireClient(address(kafka, before)) as client:
        assert commit(client, group, 7) == NONE
    epoch = internal_partitions(kafka, "__consumer_offsets")[kafka_partition_for(group)].leader_epoch
    target = next(broker for broker in (1, 2, 3) if broker != before)
    kafka.faults.move_coordinator("group", group, target)
    moved = internal_partitions(kafka, "__consumer_offsets")[kafka_partition_for(group)]
    assert (moved.leader_id, moved.leader_epoch) == (target, epoch + 1)
    assert coordinator_of(kafka, group) == target
    with WireClient(address(kafka, before)) as client:
        assert fetch_committed(client, group) == (NOT_COORDINATOR, -1)
    with WireClient(address(kafka, target)) as client:
        assert fetch_committed(client, group) == (NONE, 7)


def test_move_coordinator_refuses_bad_input_with_one_line(kafka: MiniKafka) -> None:
    with pytest.raises(FaultError, match="unknown coordinator kind 'queue': use one of group, transaction, share"):
        kafka.faults.move_coordinator("queue", "g", 1)
    with pytest.raises(FaultError, match="unknown broker 9: the brokers are 1, 2, 3"):
        kafka.faults.move_coordinator("group", "g", 9)
    kafka.faults.stop_broker(3)
    try:
        with pytest.raises(FaultError, match=r"broker 3 is stopped: start_broker\(3\) first") as refused:
            kafka.faults.move_coordinator("transaction", "txn-1", 3)
        assert "\n" not in str(refused.value)
    finally:
        kafka.faults.start_broker(3)


def test_stopping_the_coordinators_broker_moves_the_group_and_keeps_its_offsets(kafka: MiniKafka) -> None:
    group = "group-5"
    before = coordinator_of(kafka, group)
    with WireClient(address(kafka, before)) as client:
        assert commit(client, group, 99) == NONE
    kafka.faults.stop_broker(before)
    try:
        after = coordinator_of(kafka, group, via=next(broker for broker in (1, 2, 3) if broker != before))
        assert after != before
        with WireClient(address(kafka, after)) as client:
            assert fetch_committed(client, group) == (NONE, 99)
            assert commit(client, group, 100) == NONE
    finally:
        kafka.faults.start_broker(before)
    assert coordinator_of(kafka, group) == after  # back in the ISR, not the leader again (no preferred election)


def test_an_internal_replication_factor_above_the_broker_count_leaves_no_coordinator(tmp_path: Path) -> None:
    # offsets.topic.replication.factor defaults to 3, as Kafka's: two brokers cannot host it, so the topic is not
    # created and FindCoordinator answers COORDINATOR_NOT_AVAILABLE (Kafka's auto-creation fails the same way).
    with MiniKafka(data_dir=tmp_path / "two", brokers=2) as kafka:
        with WireClient(address(kafka, 1)) as client:
            answer = client.request(FindCoordinatorRequest[4](key_type=0, coordinator_keys=["g"])).coordinators[0]
        assert (answer.error_code, answer.node_id) == (COORDINATOR_NOT_AVAILABLE, -1)
    with MiniKafka({"offsets.topic.replication.factor": 2, "offsets.topic.num.partitions": 2},
                   data_dir=tmp_path / "two-ok", brokers=2) as kafka:
        assert coordinator_of(kafka, "g") in (1, 2)
        assert {len(p.replica_nodes) for p in internal_partitions(kafka, "__consumer_offsets").values()} == {2}


def test_one_broker_keeps_one_replica_whatever_the_factor(tmp_path: Path) -> None:
    with MiniKafka({"offsets.topic.num.partitions": 2}, data_dir=tmp_path / "one") as kafka:
        assert coordinator_of(kafka, "g") == 1
        assert [list(p.replica_nodes) for p in internal_partitions(kafka, "__consumer_offsets").values()] == [[1], [1]]


def test_the_command_line_and_the_admin_port_move_a_coordinator(kafka: MiniKafka) -> None:
    group = "group-6"
    before = coordinator_of(kafka, group)
    target = next(broker for broker in (1, 2, 3) if broker != before)
    moved = minikafka_command("faults", "move-coordinator", "group", group, str(target), "--admin-url",
                              kafka.admin_url)
    assert moved.returncode == 0, moved.stderr
    assert coordinator_of(kafka, group) == target
    refused = minikafka_command("faults", "move-coordinator", "topic", group, "1", "--admin-url", kafka.admin_url)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "minikafka faults move-coordinator: unknown coordinator kind 'topic': use one of group, transaction, share"]
    query = urllib.parse.urlencode({"kind": "group", "key": group, "id": before})
    request = urllib.request.Request(f"{kafka.admin_url}/admin/faults/move-coordinator?{query}", data=b"",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    assert coordinator_of(kafka, group) == before
    missing = urllib.request.Request(f"{kafka.admin_url}/admin/faults/move-coordinator?kind=group&id=1", data=b"",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(missing, timeout=10)
    assert bad.value.code == 400
    assert json.loads(bad.value.read()) == {"error": "missing parameter key"}


def test_kip848_share_and_transactional_group_requests_to_a_non_coordinator_answer_not_coordinator(
        kafka: MiniKafka) -> None:
    group, transactional_id = "group-7", "txn-7"
    coordinator = coordinator_of(kafka, group)
    other = next(broker for broker in (1, 2, 3) if broker != coordinator)
    txn_other = next(broker for broker in (1, 2, 3) if broker != coordinator_of(kafka, transactional_id, 1))
    consumer_heartbeat = ConsumerGroupHeartbeatRequest[0](
        group_id=group, member_id=uuid.uuid4().hex, member_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout_ms=30_000, subscribed_topic_names=[TOPIC], server_assignor=None, topic_partitions=[])
    share_heartbeat = ShareGroupHeartbeatRequest[1](group_id="share-7", member_id=uuid.uuid4().hex, member_epoch=0,
                                                    rack_id=None, subscribed_topic_names=[TOPIC])
    offsets = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    with WireClient(address(kafka, other)) as client:
        assert client.request(consumer_heartbeat, ConsumerGroupHeartbeatResponse[0]).error_code == NOT_COORDINATOR
        described = client.request(ConsumerGroupDescribeRequest[0](group_ids=[group],
                                                                   include_authorized_operations=False),
                                   ConsumerGroupDescribeResponse[0])
        assert described.groups[0].error_code == NOT_COORDINATOR
        assert client.request(TxnOffsetCommitRequest[3](
            transactional_id=transactional_id, group_id=group, producer_id=1, producer_epoch=0, generation_id=-1,
            member_id="", group_instance_id=None, topics=[offsets(name=TOPIC, partitions=[
                offsets.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                        committed_leader_epoch=-1, committed_metadata="")])])
        ).topics[0].partitions[0].error_code == NOT_COORDINATOR
    with WireClient(address(kafka, coordinator)) as client:
        assert client.request(consumer_heartbeat, ConsumerGroupHeartbeatResponse[0]).error_code == NONE
    share_other = next(broker for broker in (1, 2, 3) if broker != coordinator_of(kafka, "share-7"))
    with WireClient(address(kafka, share_other)) as client:
        assert client.request(share_heartbeat, ShareGroupHeartbeatResponse[1]).error_code == NOT_COORDINATOR
        described = client.request(ShareGroupDescribeRequest[1](group_ids=["share-7"],
                                                                include_authorized_operations=False),
                                   ShareGroupDescribeResponse[1])
        assert described.groups[0].error_code == NOT_COORDINATOR
    with WireClient(address(kafka, txn_other)) as client:
        assert client.request(AddOffsetsToTxnRequest[3](transactional_id=transactional_id, producer_id=1,
                                                        producer_epoch=0, group_id=group)).error_code == NOT_COORDINATOR

"""Share-group requests over a raw socket, side by side with Apache Kafka 4.3.1 (same requests, same answers), where
a client library would hide the broker's answer: when an expired acquisition lock hands records to another member
(timing and delivery count), which member ids ShareFetch/ShareAcknowledge accept (Kafka checks the id's form only,
not whether the group knows the member), that leaving the group leaves the member's share session and acquired
records alone (they end with the session or the lock, as in Kafka), that the share partitions a subscription
initialised stay initialised when every member left (Kafka's ShareGroupStatePartitionMetadata) until
DeleteShareGroupOffsets, and DescribeGroups/ListGroups of a share group.

Both brokers run with group.share.min.record.lock.duration.ms=1000 (`SIDE_BY_SIDE_BROKER_PROPERTIES`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.schemas import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    ShareGroupHeartbeatResponse,
)
from tests.apache_kafka import SIDE_BY_SIDE_BROKER_PROPERTIES
from tests.broker.share.test_share_wire import (
    ACCEPT,
    acquired,
    heartbeat,
    heartbeat_request,
    produce_records,
    share_ack,
    share_fetch,
    topic_id,
)
from tests.broker.test_fetch_wire import create_topic
from tests.broker_process import BrokerProcess
from tests.interop.test_share_consumer_side_by_side import set_group_configs
from tests.wire_client import WireClient

pytestmark = pytest.mark.interop

LOCK_DURATION_MS = 2000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One minikafka for the module (`target_bootstrap` asks for `broker`), with the session Kafka's settings."""
    process = BrokerProcess(tmp_path_factory.mktemp("minikafka-share-wire"), dict(SIDE_BY_SIDE_BROKER_PROPERTIES))
    process.start()
    try:
        yield process
    finally:
        process.stop()


def join(client: WireClient, group: str, member: str, topic: str) -> int:
    """Heartbeat `member` into `group` until it is assigned `topic`'s partition; its member epoch. Kafka answers
    NOT_COORDINATOR until FindCoordinator created __consumer_offsets, and assigns on a later heartbeat."""
    client.request_until_ready(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
    response = client.request_until_ready(heartbeat_request(group, member, 0, [topic]), ShareGroupHeartbeatResponse[1])
    assert response.error_code == ErrorCode.NONE, response
    deadline = time.monotonic() + 30
    while not response.assignment or not response.assignment.topic_partitions:
        assert time.monotonic() < deadline, response
        time.sleep(0.2)
        response = heartbeat(client, group, member, response.member_epoch, [topic])
    return int(response.member_epoch)


def share_group(client: WireClient, bootstrap: str, prefix: str, records: int) -> tuple[str, str, uuid.UUID]:
    """A fresh one-partition topic holding `records` records and a share group reading it from the earliest offset
    with a 2 s acquisition lock."""
    topic, group = f"{prefix}-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(client, topic)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest",
                                         "share.record.lock.duration.ms": str(LOCK_DURATION_MS)})
    produce_records(client, topic, records)
    return topic, group, topic_id(client, topic)


def fetch_until_acquired(client: WireClient, group: str, member: str, tid: uuid.UUID, epoch: int) -> tuple[Any, int]:
    """ShareFetch (long polls) until records are acquired; the response and the next session epoch."""
    deadline = time.monotonic() + 20
    while True:
        response = share_fetch(client, group, member, epoch, tid, max_wait_ms=1000)
        assert response.error_code == ErrorCode.NONE, response
        epoch += 1
        if acquired(response) or time.monotonic() > deadline:
            return response, epoch


def errors(response: Any) -> tuple[int, list[tuple[int, int]]]:
    """(top-level error, [(partition, error)]) of a ShareFetch/ShareAcknowledge response."""
    return response.error_code, [(p.partition_index, p.error_code) for t in response.responses for p in t.partitions]


def test_an_expired_lock_wakes_another_members_long_poll_with_delivery_count_2(target_bootstrap: str) -> None:
    with WireClient(target_bootstrap) as first, WireClient(target_bootstrap) as second:
        topic, group, tid = share_group(first, target_bootstrap, "lock-wire", 2)
        join(first, group, "holder", topic)
        join(second, group, "taker", topic)
        response, holder_epoch = fetch_until_acquired(first, group, "holder", tid, 0)
        acquired_at = time.monotonic()
        assert acquired(response) == [(0, 1, 1)]
        assert response.acquisition_lock_timeout_ms == LOCK_DURATION_MS
        assert acquired(share_fetch(second, group, "taker", 0, tid)) == []  # opens the taker's session
        taken = share_fetch(second, group, "taker", 1, tid, max_wait_ms=5000)
        after_s = time.monotonic() - acquired_at
        assert acquired(taken) == [(0, 1, 2)]
        assert LOCK_DURATION_MS / 1000 - 0.3 <= after_s < LOCK_DURATION_MS / 1000 + 1.5, after_s
        # the holder's lock is gone: its acknowledgement is refused, the taker's is accepted
        assert errors(share_ack(first, group, "holder", holder_epoch, tid, [(0, 1, [ACCEPT])])) == (0, [(0, 121)])
        assert errors(share_ack(second, group, "taker", 2, tid, [(0, 1, [ACCEPT])])) == (0, [(0, 0)])


def test_member_ids_are_checked_for_their_form_only(target_bootstrap: str) -> None:
    """Kafka's isMemberIdValid: 1 to 36 characters, else INVALID_REQUEST (ShareFetch and ShareAcknowledge alike).
    A member the group does not know (it never sent a heartbeat) fetches and acquires like any other; without a
    share session its ShareAcknowledge is SHARE_SESSION_NOT_FOUND."""
    with WireClient(target_bootstrap) as client:
        topic, group, tid = share_group(client, target_bootstrap, "member-wire", 3)
        join(client, group, "known", topic)
        for bad in ("", "m" * 37):
            assert errors(share_fetch(client, group, bad, 0, tid)) == (ErrorCode.INVALID_REQUEST, [])
            assert errors(share_ack(client, group, bad, 1, tid, [(0, 0, [ACCEPT])])) == (ErrorCode.INVALID_REQUEST, [])
        stranger = "s" * 36
        response, epoch = fetch_until_acquired(client, group, stranger, tid, 0)
        assert acquired(response) == [(0, 2, 1)]
        assert errors(share_ack(client, group, stranger, epoch, tid, [(0, 2, [ACCEPT])])) == (0, [(0, 0)])
        assert errors(share_ack(client, group, "never-fetched", 1, tid, [(0, 0, [ACCEPT])])) == (
            ErrorCode.SHARE_SESSION_NOT_FOUND, [])
        assert errors(share_fetch(client, group, "never-fetched", -1, tid)) == (ErrorCode.SHARE_SESSION_NOT_FOUND, [])


def test_a_partition_the_group_never_subscribed_to_is_not_served(target_bootstrap: str) -> None:
    """Kafka's group coordinator initialises a topic's share partitions when a member subscribes to the topic; a
    ShareFetch of any other partition (another topic, or a group that does not exist) answers UNKNOWN_SERVER_ERROR
    for it (Kafka after MaxWaitMs, minikafka at once) and acquires nothing, and a ShareAcknowledge of it
    UNKNOWN_TOPIC_OR_PARTITION. Once a member subscribes, the partition is served."""
    with WireClient(target_bootstrap) as client:
        topic, group, _tid = share_group(client, target_bootstrap, "init-wire", 1)
        other, _, other_id = share_group(client, target_bootstrap, "init-other", 2)
        join(client, group, "member", topic)
        # Kafka answers once its (asynchronous) initialisation failed: within the long poll
        refused = (0, [(0, ErrorCode.UNKNOWN_SERVER_ERROR)])
        assert errors(share_fetch(client, group, "member", 0, other_id, max_wait_ms=1500)) == refused
        assert errors(share_fetch(client, f"no-{group}", "ghost", 0, other_id, max_wait_ms=1500)) == refused
        assert errors(share_ack(client, f"no-{group}", "ghost", 1, other_id, [(0, 0, [ACCEPT])])) == (
            0, [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])
        join(client, group, "other-member", other)
        response, _ = fetch_until_acquired(client, group, "member", other_id, 1)
        assert acquired(response) == [(0, 1, 1)]


def delete_share_group_offsets(client: WireClient, group: str, topics: list[str]) -> list[tuple[str, int, Any]]:
    request = DeleteShareGroupOffsetsRequest[0]
    response = client.request(request(group_id=group, topics=[
        request.DeleteShareGroupOffsetsRequestTopic(topic_name=name) for name in topics]),
        DeleteShareGroupOffsetsResponse[0])
    assert response.error_code == ErrorCode.NONE, response
    return [(t.topic_name, t.error_code, t.error_message) for t in response.responses]


def test_share_partitions_stay_initialised_after_every_member_left(target_bootstrap: str) -> None:
    """Kafka's ShareGroupStatePartitionMetadata: the partitions a member's subscription initialised stay
    initialised when every member left, so a ShareFetch of them is served (by a member that never joined); only
    DeleteShareGroupOffsets makes them uninitialised again, and it refuses a topic the group never initialised."""
    with WireClient(target_bootstrap) as client:
        topic, group, tid = share_group(client, target_bootstrap, "left-wire", 2)
        second, never = f"{topic}-b", f"{topic}-never"
        create_topic(client, second)
        create_topic(client, never)
        second_id = topic_id(client, second)
        deadline = time.monotonic() + 30
        client.request(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
        response = heartbeat(client, group, "member", 0, [topic, second])
        while response.error_code != ErrorCode.NONE or not response.assignment \
                or len(response.assignment.topic_partitions) < 2:
            assert time.monotonic() < deadline, response
            time.sleep(0.2)
            response = heartbeat(client, group, "member", max(response.member_epoch, 0), [topic, second])
        assert heartbeat(client, group, "member", -1, None).error_code == ErrorCode.NONE
        response, epoch = fetch_until_acquired(client, group, "late", tid, 0)
        assert errors(response) == (0, [(0, 0)])
        assert acquired(response) == [(0, 1, 1)]
        no_offsets = "There is no offset information to delete."
        assert delete_share_group_offsets(client, group, [never, second]) == [
            (second, 0, None), (never, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, no_offsets)]
        refused = share_fetch(client, group, "late", epoch, second_id, max_wait_ms=1500)
        assert errors(refused) == (0, [(0, ErrorCode.UNKNOWN_SERVER_ERROR)])


def test_leaving_the_group_keeps_the_share_session_and_its_locks(target_bootstrap: str) -> None:
    """A member's leave heartbeat (epoch -1) neither ends its share session nor releases what it acquired, as in
    Kafka (where the two live in different components): its acknowledgements on the session are applied, its final
    ShareAcknowledge (epoch -1, what a closing client sends after the leave) succeeds, and another member receives
    its unacknowledged record only when that record's lock runs out."""
    with WireClient(target_bootstrap) as leaver, WireClient(target_bootstrap) as stayer:
        topic, group, tid = share_group(leaver, target_bootstrap, "leave-wire", 2)
        join(leaver, group, "leaver", topic)
        join(stayer, group, "stayer", topic)
        response, session_epoch = fetch_until_acquired(leaver, group, "leaver", tid, 0)
        acquired_at = time.monotonic()
        assert acquired(response) == [(0, 1, 1)]
        assert acquired(share_fetch(stayer, group, "stayer", 0, tid)) == []
        assert heartbeat(leaver, group, "leaver", -1, None).error_code == ErrorCode.NONE
        assert errors(share_ack(leaver, group, "leaver", session_epoch, tid, [(0, 0, [ACCEPT])])) == (0, [(0, 0)])
        taken = share_fetch(stayer, group, "stayer", 1, tid, max_wait_ms=5000)
        assert acquired(taken) == [(1, 1, 2)]  # offset 1 came back when its lock ran out, not at the leave
        assert time.monotonic() - acquired_at >= LOCK_DURATION_MS / 1000 - 0.3
        final = share_ack(leaver, group, "leaver", -1, tid, [])
        assert final.error_code == ErrorCode.NONE, final
        assert errors(share_fetch(leaver, group, "leaver", -1, tid)) == (ErrorCode.SHARE_SESSION_NOT_FOUND, [])


def test_describe_groups_and_list_groups_of_a_share_group(target_bootstrap: str) -> None:
    """DescribeGroups is the classic groups' API: v0-5 answer a share group (and an unknown group) as Dead with no
    error, v6 (KIP-1043) with GROUP_ID_NOT_FOUND and Kafka's messages (a classic group is described as before).
    ListGroups v5 lists the group with type and protocol type "share", its type and state filters matched without
    regard to case."""
    with WireClient(target_bootstrap) as client:
        topic, group, _tid = share_group(client, target_bootstrap, "describe-wire", 0)
        join(client, group, "member", topic)
        unknown = f"unknown-{uuid.uuid4().hex[:8]}"
        for version in range(6):
            extra = {"include_authorized_operations": False} if version >= 3 else {}
            described = client.request(DescribeGroupsRequest[version](groups=[group, unknown], **extra)).groups
            assert [(g.error_code, g.group_id, g.group_state, g.protocol_type, g.protocol_data, g.members)
                    for g in described] == [(0, group, "Dead", "", "", []), (0, unknown, "Dead", "", "", [])], version
        classic = f"classic-{uuid.uuid4().hex[:8]}"  # a classic group holding committed offsets only
        committer = Consumer({"bootstrap.servers": target_bootstrap, "group.id": classic})
        committer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
        committer.close()
        described = client.request(DescribeGroupsRequest[6](groups=[group, unknown, classic],
                                                            include_authorized_operations=False)).groups
        assert [(g.error_code, g.error_message, g.group_state, g.protocol_type, g.members) for g in described] == [
            (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group} is not a classic group.", "Dead", "", []),
            (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {unknown} not found.", "Dead", "", []),
            (ErrorCode.NONE, None, "Empty", "", [])]
        assert [g.authorized_operations for g in described[:2]] == [None, None]
        for types, states, listed in ((["share"], [], True), (["SHARE"], ["stable"], True), (["consumer"], [], False),
                                      (["classic"], [], False), (["bogus"], [], False), ([], ["Empty"], False)):
            response = client.request(ListGroupsRequest[5](states_filter=states, types_filter=types))
            assert response.error_code == ErrorCode.NONE
            mine = [(g.group_id, g.protocol_type, g.group_state, g.group_type)
                    for g in response.groups if g.group_id == group]
            assert mine == ([(group, "share", "Stable", "share")] if listed else []), (types, states)

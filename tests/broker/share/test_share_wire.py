"""Share groups (KIP-932) over a real socket, on a broker in its own process: ShareGroupHeartbeat membership,
ShareFetch acquiring with delivery counts, ShareAcknowledge ACCEPT/RELEASE/REJECT with Kafka's outcomes, the
long poll (MaxWaitMs), share sessions, ShareGroupDescribe and ListGroups/DeleteGroups seeing share groups, and the
acknowledged state surviving a restart through `__share_group_state`."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest, ListGroupsRequest
from kafka.protocol.metadata import MetadataRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import Record, build_batch, iter_batches
from minikafka.protocol.schemas import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.broker.test_fetch_wire import create_topic, produce
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

ACCEPT, RELEASE, REJECT = 1, 2, 3


def topic_id(client: WireClient, name: str) -> uuid.UUID:
    response = client.request(MetadataRequest[12](topics=[MetadataRequest[12].MetadataRequestTopic(
        topic_id=None, name=name)], allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return uuid.UUID(str(response.topics[0].topic_id))


def heartbeat_request(group: str, member: str, epoch: int, topics: list[str] | None) -> Any:
    return ShareGroupHeartbeatRequest[1](group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                                         subscribed_topic_names=topics)


def heartbeat(client: WireClient, group: str, member: str, epoch: int, topics: list[str] | None) -> Any:
    return client.request(heartbeat_request(group, member, epoch, topics), ShareGroupHeartbeatResponse[1])


def share_fetch(client: WireClient, group: str, member: str, epoch: int, tid: uuid.UUID,
                acks: list[tuple[int, int, list[int]]] = (), max_wait_ms: int = 0, max_records: int = 500) -> Any:
    req = ShareFetchRequest[2]
    part = req.FetchTopic.FetchPartition
    return client.request(req(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=max_records, batch_size=max_records, share_acquire_mode=0, is_renew_ack=False,
        topics=[req.FetchTopic(topic_id=tid, partitions=[part(partition_index=0, acknowledgement_batches=[
            part.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=types)
            for first, last, types in acks])])],
        forgotten_topics_data=[]), ShareFetchResponse[2])


def share_ack(client: WireClient, group: str, member: str, epoch: int, tid: uuid.UUID,
              acks: list[tuple[int, int, list[int]]]) -> Any:
    req = ShareAcknowledgeRequest[2]
    part = req.AcknowledgeTopic.AcknowledgePartition
    return client.request(req(
        group_id=group, member_id=member, share_session_epoch=epoch, is_renew_ack=False,
        topics=[req.AcknowledgeTopic(topic_id=tid, partitions=[part(partition_index=0, acknowledgement_batches=[
            part.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=types)
            for first, last, types in acks])])]),
        ShareAcknowledgeResponse[2])


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in response.responses for p in t.partitions for a in p.acquired_records]


def record_offsets(response: Any) -> list[int]:
    return [r.offset for t in response.responses for p in t.partitions if p.records
            for b in iter_batches(bytes(p.records)) for r in b.records()]


def join(client: WireClient, group: str, member: str, topic: str) -> int:
    """Join (resent while the share coordinator loads), then heartbeat until the member has its assignment."""
    response = client.request_until_ready(heartbeat_request(group, member, 0, [topic]), ShareGroupHeartbeatResponse[1])
    assert response.error_code == ErrorCode.NONE, response
    deadline = time.monotonic() + 10
    while not response.assignment or not response.assignment.topic_partitions:
        assert time.monotonic() < deadline
        response = heartbeat(client, group, member, response.member_epoch, [topic])
    return int(response.member_epoch)


def produce_records(client: WireClient, topic: str, count: int) -> None:
    batch = build_batch([Record(i, 1_700_000_000_000, b"k%d" % i, b"v%d" % i) for i in range(count)], base_offset=0)
    produce(client, topic, 0, batch)


def test_share_group_acquires_acknowledges_and_redelivers_over_the_wire(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "q")
        tid = topic_id(client, "q")
        epoch = join(client, "g", "m1", "q")
        assert epoch >= 1
        # latest (Kafka's default share.auto.offset.reset): the first fetch initialises the partition at the end
        first = share_fetch(client, "g", "m1", 0, tid)
        assert first.error_code == ErrorCode.NONE and acquired(first) == []
        produce_records(client, "q", 3)
        fetched = share_fetch(client, "g", "m1", 1, tid, max_wait_ms=2000)
        assert acquired(fetched) == [(0, 2, 1)]
        assert record_offsets(fetched) == [0, 1, 2]
        assert fetched.acquisition_lock_timeout_ms == 30_000
        # ACCEPT 0, RELEASE 1, REJECT 2 in one ShareAcknowledge
        acked = share_ack(client, "g", "m1", 2, tid, [(0, 2, [ACCEPT, RELEASE, REJECT])])
        assert acked.error_code == ErrorCode.NONE
        assert [p.error_code for t in acked.responses for p in t.partitions] == [ErrorCode.NONE]
        # only the released record comes back, delivered a second time
        again = share_fetch(client, "g", "m1", 3, tid, max_wait_ms=2000)
        assert acquired(again) == [(1, 1, 2)]
        # acknowledging an offset it does not hold (2 was rejected): INVALID_RECORD_STATE on the partition
        bad = share_fetch(client, "g", "m1", 4, tid, acks=[(2, 2, [ACCEPT])])
        assert [p.acknowledge_error_code for t in bad.responses for p in t.partitions] == [121]
        done = share_fetch(client, "g", "m1", 5, tid, acks=[(1, 1, [ACCEPT])], max_wait_ms=200)
        assert [p.acknowledge_error_code for t in done.responses for p in t.partitions] == [ErrorCode.NONE]
        assert acquired(done) == []
        # a wrong session epoch is a top-level error
        assert share_fetch(client, "g", "m1", 42, tid).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH

        described = client.request(ShareGroupDescribeRequest[1](group_ids=["g", "nope"],
                                                                include_authorized_operations=False),
                                   ShareGroupDescribeResponse[1])
        group, missing = described.groups
        assert (group.error_code, group.group_state, group.assignor_name) == (0, "Stable", "simple")
        assert [(m.member_id, [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions])
                for m in group.members] == [("m1", [("q", [0])])]
        assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        listed = client.request(ListGroupsRequest[5](states_filter=[], types_filter=["share"]))
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [
            ("g", "share", "Stable", "share")]
        assert client.request(DeleteGroupsRequest[2](groups_names=["g"])).results[0].error_code == \
            ErrorCode.NON_EMPTY_GROUP


def test_long_poll_waits_for_an_append_and_two_members_share_one_partition(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as a, WireClient(broker.bootstrap) as b:
        create_topic(a, "q2")
        tid = topic_id(a, "q2")
        join(a, "g2", "ma", "q2")
        join(b, "g2", "mb", "q2")
        assert acquired(share_fetch(a, "g2", "ma", 0, tid)) == []
        assert acquired(share_fetch(b, "g2", "mb", 0, tid)) == []
        started = time.monotonic()
        assert acquired(share_fetch(a, "g2", "ma", 1, tid, max_wait_ms=300)) == []
        assert time.monotonic() - started >= 0.25
        produce_records(a, "q2", 2)  # two log batches: batch_optimized acquisition hands out whole batches
        produce_records(a, "q2", 2)
        first = share_fetch(a, "g2", "ma", 2, tid, max_wait_ms=2000, max_records=2)
        second = share_fetch(b, "g2", "mb", 1, tid, max_wait_ms=2000, max_records=2)
        got_a, got_b = acquired(first), acquired(second)
        assert got_a and got_b
        offsets_a = {o for f, last, _c in got_a for o in range(f, last + 1)}
        offsets_b = {o for f, last, _c in got_b for o in range(f, last + 1)}
        assert not offsets_a & offsets_b and offsets_a | offsets_b == {0, 1, 2, 3}


@pytest.mark.parametrize("stop", ["sigterm", "kill9"])
def test_acknowledged_state_survives_a_restart(broker: BrokerProcess, stop: str) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "q3")
        tid = topic_id(client, "q3")
        join(client, "g3", "m", "q3")
        share_fetch(client, "g3", "m", 0, tid)
        produce_records(client, "q3", 4)
        assert acquired(share_fetch(client, "g3", "m", 1, tid, max_wait_ms=2000)) == [(0, 3, 1)]
        share_ack(client, "g3", "m", 2, tid, [(0, 3, [ACCEPT, REJECT, RELEASE, ACCEPT])])
    if stop == "kill9":
        broker.kill9()
    else:
        broker.stop()
    broker.start()
    with WireClient(broker.bootstrap) as client:
        join(client, "g3", "m2", "q3")
        # only the released record comes back, one delivery later; the accepted and rejected ones never do
        assert acquired(share_fetch(client, "g3", "m2", 0, tid, max_wait_ms=2000)) == [(2, 2, 2)]
        assert acquired(share_fetch(client, "g3", "m2", 1, tid, max_wait_ms=300)) == []


def test_expired_locks_are_redelivered_until_the_delivery_limit_archives(broker_factory: Any) -> None:
    # The broker's timer releases a lock that ran out (group.share.record.lock.duration.ms) with no request from
    # the member; after group.share.delivery.count.limit deliveries the record is archived, never delivered again.
    broker = broker_factory({"group.share.record.lock.duration.ms": "1000",
                             "group.share.min.record.lock.duration.ms": "1000",
                             "group.share.delivery.count.limit": "2"})
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "q4")
        tid = topic_id(client, "q4")
        join(client, "g4", "m", "q4")
        share_fetch(client, "g4", "m", 0, tid)
        produce_records(client, "q4", 1)
        first = share_fetch(client, "g4", "m", 1, tid, max_wait_ms=2000)
        assert acquired(first) == [(0, 0, 1)] and first.acquisition_lock_timeout_ms == 1000
        started = time.monotonic()
        # the long poll is woken by the lock expiring, not by its own timeout
        second = share_fetch(client, "g4", "m", 2, tid, max_wait_ms=5000)
        assert acquired(second) == [(0, 0, 2)]
        assert 0.5 <= time.monotonic() - started < 4
        time.sleep(1.5)  # the second lock expires: delivery count 2 is the limit, so the record is archived
        assert acquired(share_fetch(client, "g4", "m", 3, tid, max_wait_ms=1000)) == []
        assert acquired(share_fetch(client, "g4", "m", 4, tid, max_wait_ms=1500)) == []


def test_a_closed_connection_ends_its_share_session_and_releases_at_once(broker: BrokerProcess) -> None:
    # Kafka's connection-disconnect listener: the records a crashed client held come back now, not after the
    # 30 s acquisition lock
    with WireClient(broker.bootstrap) as admin:
        create_topic(admin, "q5")
        tid = topic_id(admin, "q5")
        with WireClient(broker.bootstrap) as first:
            join(first, "g5", "m1", "q5")
            share_fetch(first, "g5", "m1", 0, tid)
            produce_records(admin, "q5", 2)
            assert acquired(share_fetch(first, "g5", "m1", 1, tid, max_wait_ms=2000)) == [(0, 1, 1)]
        join(admin, "g5", "m2", "q5")
        started = time.monotonic()
        assert acquired(share_fetch(admin, "g5", "m2", 0, tid, max_wait_ms=5000)) == [(0, 1, 2)]
        assert time.monotonic() - started < 4


def test_share_metrics_count_sessions_in_flight_and_archived_records() -> None:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from minikafka.testing.mini_kafka import MiniKafka

    with MiniKafka() as mini, WireClient(mini.bootstrap_servers) as client:
        create_topic(client, "q6")
        tid = topic_id(client, "q6")
        join(client, "g6", "m", "q6")
        share_fetch(client, "g6", "m", 0, tid)
        produce_records(client, "q6", 3)
        assert acquired(share_fetch(client, "g6", "m", 1, tid, max_wait_ms=2000)) == [(0, 2, 1)]
        share_ack(client, "g6", "m", 2, tid, [(1, 1, [REJECT])])  # 0 and 2 in flight, 1 archived
        with urllib.request.urlopen(mini.metrics_url, timeout=10) as response:
            families = {f.name: f for f in text_string_to_metric_families(response.read().decode())}
        samples = {(f, tuple(sorted(s.labels.items()))): s.value for f, fam in families.items() for s in fam.samples}
        assert samples[("kafka_server_sharesessioncache_sharesessionscount", ())] == 1
        assert samples[("kafka_server_sharepartitionmetrics_inflightmessagecount",
                        (("partition", "0"), ("topic", "q6")))] == 2
        assert samples[("minikafka_share_group_records", (("state", "archived"),))] == 1
        assert samples[("minikafka_share_group_records", (("state", "in_flight"),))] == 2
        # /metrics needs no credentials: it names no group (docs/security.md)
        assert not any(label == "group" or "g6" in value for fam in families.values() for s in fam.samples
                       for label, value in s.labels.items())


def test_member_ids_sessions_and_uninitialised_partitions_as_kafka_answers(broker: BrokerProcess) -> None:
    # Kafka 4.3.1's answers (tests/interop/test_share_wire_side_by_side.py): only the member id's form is checked
    # (KafkaApis.isMemberIdValid), never the group's membership; leaving the group keeps the share session; a
    # partition of a topic no member subscribes to was never initialised and is not served.
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "q7")
        create_topic(client, "q7-other")
        tid, other_id = topic_id(client, "q7"), topic_id(client, "q7-other")
        join(client, "g7", "m", "q7")
        share_fetch(client, "g7", "m", 0, tid)
        produce_records(client, "q7", 2)
        for bad in ("", "m" * 37):
            refused = share_fetch(client, "g7", bad, 0, tid)
            assert (refused.error_code, refused.error_message) == (ErrorCode.INVALID_REQUEST,
                                                                   "Invalid member id in the request.")
            assert share_ack(client, "g7", bad, 1, tid, [(0, 0, [ACCEPT])]).error_code == ErrorCode.INVALID_REQUEST
        stranger = "s" * 36  # never sent a heartbeat: served all the same
        assert acquired(share_fetch(client, "g7", stranger, 0, tid, max_wait_ms=2000)) == [(0, 1, 1)]
        assert share_ack(client, "g7", "m", 1, tid, [(0, 0, [ACCEPT])]).responses[0].partitions[0].error_code == \
            ErrorCode.INVALID_RECORD_STATE  # "Member is not the owner of offset"
        assert heartbeat(client, "g7", stranger, 0, ["q7"]).error_code == ErrorCode.NONE
        assert heartbeat(client, "g7", stranger, -1, None).error_code == ErrorCode.NONE  # leaves the group ...
        accepted = share_ack(client, "g7", stranger, 1, tid, [(0, 1, [ACCEPT])])  # ... not its share session
        assert (accepted.error_code, accepted.responses[0].partitions[0].error_code) == (0, 0)
        assert share_ack(client, "g7", stranger, -1, tid, []).error_code == ErrorCode.NONE
        unread = share_fetch(client, "g7", "m", 2, other_id)
        assert unread.error_code == ErrorCode.NONE
        assert [p.error_code for t in unread.responses for p in t.partitions] == [ErrorCode.UNKNOWN_SERVER_ERROR]
        unacked = share_ack(client, "g7", "m", 3, other_id, [(0, 0, [ACCEPT])])
        assert unacked.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def state_partition_records(broker: BrokerProcess, group: str) -> list[Any]:
    """The group's ShareGroupStatePartitionMetadata records in `__consumer_offsets` (decoded; None: tombstone), in
    the order written (one group lives in one partition). Read from the log files: call with the broker stopped."""
    from minikafka.broker.groups.share_group_records import STATE_PARTITION_METADATA as SCHEMA

    found = []
    for path in sorted(broker.data_dir.glob("__consumer_offsets-*/*.log")):
        for batch in iter_batches(path.read_bytes()):
            for record in batch.records():
                if record.key and record.key[:2] == b"\x00\x0f" and SCHEMA.decode_key(record.key).group_id == group:
                    found.append(None if record.value is None else SCHEMA.decode_value(record.value))
    return found


def partition_errors(response: Any) -> list[int]:
    return [p.error_code for t in response.responses for p in t.partitions if p.error_code]


def topics_of(entries: Any) -> dict[str, list[int]]:
    return {t.topic_name: sorted(t.partitions) for t in entries}


def test_share_partitions_stay_initialised_when_members_leave_and_across_a_restart(broker: BrokerProcess) -> None:
    # Kafka's ShareGroupStatePartitionMetadata: a heartbeat subscribing to q8 writes its partitions as initializing,
    # initialises their state, then writes them as initialized; they stay so when every member left (a ShareFetch
    # is served), after a restart (replayed), until DeleteShareGroupOffsets moves q8 to deleting and drops it.
    from minikafka.protocol.schemas import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse

    with WireClient(broker.bootstrap) as client:
        create_topic(client, "q8", 2)
        create_topic(client, "q8-other")
        tid = topic_id(client, "q8")
        join(client, "g8", "m", "q8")
        assert heartbeat(client, "g8", "m", -1, None).error_code == ErrorCode.NONE  # the group is empty now
        served = share_fetch(client, "g8", "late", 0, tid)  # resolves share.auto.offset.reset (latest): 0
        assert (served.error_code, partition_errors(served)) == (ErrorCode.NONE, [])  # nothing acquired, no error
        produce_records(client, "q8", 2)
        assert acquired(share_fetch(client, "g8", "late", 1, tid, max_wait_ms=2000)) == [(0, 1, 1)]
    broker.stop()
    written = state_partition_records(broker, "g8")
    assert [(topics_of(r.initializing_topics), topics_of(r.initialized_topics), topics_of(r.deleting_topics))
            for r in written] == [({"q8": [0, 1]}, {}, {}), ({}, {"q8": [0, 1]}, {})]
    broker.start()
    with WireClient(broker.bootstrap) as client:
        deadline = time.monotonic() + 10
        served = share_fetch(client, "g8", "after", 0, tid, max_wait_ms=2000)
        # while __share_group_state loads, the fetch waits (as Kafka's delayed share fetch waits for the share
        # partition's initialisation) and may answer nothing
        while not acquired(served):
            assert partition_errors(served) == [] and time.monotonic() < deadline
            time.sleep(0.1)
            share_fetch(client, "g8", "after", -1, tid)
            served = share_fetch(client, "g8", "after", 0, tid, max_wait_ms=2000)
        assert partition_errors(served) == [] and acquired(served) and acquired(served)[0][0] == 0
        request = DeleteShareGroupOffsetsRequest[0]
        # the group coordinator may still be loading __consumer_offsets after the restart
        deleted = client.request_until_ready(request(group_id="g8", topics=[
            request.DeleteShareGroupOffsetsRequestTopic(topic_name=name) for name in ("q8", "q8-other")]),
            DeleteShareGroupOffsetsResponse[0])
        assert (deleted.error_code, deleted.error_message) == (ErrorCode.NONE, None)
        assert [(t.topic_name, t.error_code, t.error_message) for t in deleted.responses] == [
            ("q8", 0, None),
            ("q8-other", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")]
        refused = share_fetch(client, "g8", "after", -1, tid)  # closes the session
        refused = share_fetch(client, "g8", "again", 0, tid)
        assert partition_errors(refused) == [ErrorCode.UNKNOWN_SERVER_ERROR]
        assert client.request(DeleteGroupsRequest[2](groups_names=["g8"])).results[0].error_code == 0
    broker.stop()
    written = state_partition_records(broker, "g8")
    assert [None if r is None else (topics_of(r.initialized_topics), [t.topic_name for t in r.deleting_topics])
            for r in written[2:]] == [({}, ["q8"]), ({}, []), ({}, []), None]
    broker.start()


def test_alter_share_group_offsets_as_a_fresh_brokers_first_share_request(broker: BrokerProcess) -> None:
    """No share group has heartbeated yet, so `__share_group_state` does not exist: AlterShareGroupOffsets creates
    it (it answered COORDINATOR_NOT_AVAILABLE forever when it came first)."""
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "first-alter")
        alter = AlterShareGroupOffsetsRequest[0]
        topic = alter.AlterShareGroupOffsetsRequestTopic
        altered = client.request_until_ready(alter(group_id="sg-first", topics=[topic(
            topic_name="first-alter", partitions=[topic.AlterShareGroupOffsetsRequestPartition(
                partition_index=0, start_offset=3)])]), AlterShareGroupOffsetsResponse[0])
        assert [(p.partition_index, p.error_code) for t in altered.responses for p in t.partitions] == [(0, 0)]
        describe = DescribeShareGroupOffsetsRequest[0]
        described = client.request(describe(groups=[describe.DescribeShareGroupOffsetsRequestGroup(
            group_id="sg-first", topics=[describe.DescribeShareGroupOffsetsRequestGroup
                                         .DescribeShareGroupOffsetsRequestTopic(topic_name="first-alter",
                                                                                partitions=[0])])]),
            DescribeShareGroupOffsetsResponse[0])
        assert [(p.partition_index, p.start_offset) for g in described.groups for t in g.topics
                for p in t.partitions] == [(0, 3)]

"""`pause_follower` / `resume_follower` and unclean elections over a real socket, three brokers in one process:
a paused follower in the ISR holds the high watermark (acks=all times out with REQUEST_TIMED_OUT, consumers see
nothing past it), leaves the ISR after replica.lag.time.max.ms (the high watermark moves on), rejoins on resume;
a paused follower elected leader truncates the log to its end (acks=1 records lost, acks=all ones kept); with
unclean.leader.election.enable an out-of-sync replica is elected when the last in-sync one stops, without it the
partition goes leaderless; a stopped broker's replica keeps the log end offset it had, so electing it while the
leader is gone (ElectLeaders UNCLEAN, unclean.leader.election.enable when it returns, or KIP-966's ELR) loses what
the leader wrote meanwhile, and its return while the leader runs catches it up; a consumer's Fetch from a
held-back follower reads only what that replica has."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.records import Record, build_batch
from minikafka.testing import FaultError, MiniKafka
from tests.broker.test_elect_leaders_wire import elect, results
from tests.broker.test_several_brokers_wire import (
    address,
    create_topic,
    metadata,
    minikafka_command,
    partitions_of,
)
from tests.wire_client import WireClient

NONE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS = 0, 6, 7, 19
LAG_MS = 1000


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniKafka]:
    config = {"replica.lag.time.max.ms": str(LAG_MS), "auto.leader.rebalance.enable": "false"}
    with MiniKafka(config, data_dir=tmp_path_factory.mktemp("followers") / "data", brokers=3) as broker:
        yield broker


def produce(client: WireClient, topic: str, acks: int, timeout_ms: int = 10_000) -> tuple[int, int]:
    data = ProduceRequest.TopicProduceData
    batch = build_batch([Record(offset=0, timestamp=1_700_000_000_000, key=b"k", value=b"v")], base_offset=0)
    request = ProduceRequest[9](transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])])
    part = client.request(request).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def latest_offset(client: WireClient, topic: str) -> int:
    """ListOffsets LATEST for a consumer: the high watermark."""
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest[7](replica_id=-1, isolation_level=0, topics=[topic_cls(name=topic, partitions=[
        topic_cls.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
    return int(client.request(request).topics[0].partitions[0].offset)


def fetch_high_watermark(client: WireClient, topic: str) -> tuple[int, int]:
    """(high watermark, records bytes) a consumer's Fetch from offset 0 gets."""
    topic_cls = FetchRequest.FetchTopic
    request = FetchRequest[12](replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[topic_cls(topic=topic, partitions=[
                                   topic_cls.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                            last_fetched_epoch=-1, log_start_offset=-1,
                                                            partition_max_bytes=1 << 20)])],
                               forgotten_topics_data=[], rack_id="")
    part = client.request(request).responses[0].partitions[0]
    return part.high_watermark, len(part.records or b"")


def eligible_leaders(client: WireClient, topic: str) -> tuple[list[int], list[int]]:
    """DescribeTopicPartitions' (eligible leader replicas, last known ELR) of partition 0."""
    request = DescribeTopicPartitionsRequest[0](topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)],
                                                response_partition_limit=2000, cursor=None)
    part = client.request(request).topics[0].partitions[0]
    return list(part.eligible_leader_replicas), list(part.last_known_elr)


def state(client: WireClient, topic: str) -> Any:
    return partitions_of(metadata(client, topic))[0]


def wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_paused_follower_holds_the_high_watermark_until_it_leaves_the_isr(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "paused", assignments=[[1, 2, 3]], configs={"min.insync.replicas": "2"}) == NONE
        assert produce(client, "paused", acks=-1) == (NONE, 0)
        kafka.faults.pause_follower("paused", 0, 2)
        assert produce(client, "paused", acks=1) == (NONE, 1)  # the leader has it: acks=1 is answered
        started = time.monotonic()
        assert produce(client, "paused", acks=-1, timeout_ms=300) == (REQUEST_TIMED_OUT, 2)
        assert time.monotonic() - started >= 0.25
        assert latest_offset(client, "paused") == 1  # offsets 1 and 2 are past the high watermark
        assert fetch_high_watermark(client, "paused")[0] == 1
        assert state(client, "paused").isr_nodes == [1, 2, 3]
        # replica.lag.time.max.ms after the pause the follower leaves the ISR and the high watermark moves on
        wait_for(lambda: state(client, "paused").isr_nodes == [1, 3])
        assert latest_offset(client, "paused") == 3
        assert produce(client, "paused", acks=-1) == (NONE, 3)
        kafka.faults.resume_follower("paused", 0, 2)
        assert state(client, "paused").isr_nodes == [1, 2, 3]
        assert produce(client, "paused", acks=-1) == (NONE, 4)


def test_an_acks_all_produce_waiting_on_a_follower_completes_when_it_leaves_the_isr(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "waiting", assignments=[[1, 2]]) == NONE
        assert produce(client, "waiting", acks=1) == (NONE, 0)  # the follower has offset 0
        kafka.faults.pause_follower("waiting", 0, 2)
        started = time.monotonic()
        assert produce(client, "waiting", acks=-1, timeout_ms=10_000) == (NONE, 1)
        waited = time.monotonic() - started
        assert LAG_MS / 1000 * 0.9 <= waited < LAG_MS / 1000 + 2  # answered when the ISR shrank, not at timeout
        kafka.faults.resume_follower("waiting", 0, 2)


def produce_partitions(client: WireClient, topic: str, partitions: int, acks: int,
                       timeout_ms: int) -> list[tuple[int, int]]:
    """One Produce request with a one-record batch for each of `partitions`: (error code, base offset) of each."""
    data = ProduceRequest.TopicProduceData
    batch = build_batch([Record(offset=0, timestamp=1_700_000_000_000, key=b"k", value=b"v")], base_offset=0)
    request = ProduceRequest[9](transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=index, records=batch)
                                    for index in range(partitions)])])
    answer = client.request(request).responses[0].partition_responses
    return [(part.error_code, part.base_offset) for part in sorted(answer, key=lambda part: part.index)]


def test_acks_all_answers_each_partition_of_one_request_by_its_own_replicas(kafka: MiniKafka) -> None:
    """The produce path's per-partition checks (issue 36): in one acks=all request, the partition whose follower is
    paused times out, the one whose follower is in step is acknowledged, and the one whose ISR is below
    min.insync.replicas is refused without an append; acks=1 appends to all three."""
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "mixed", assignments=[[1, 2], [1, 3], [1]],
                            configs={"min.insync.replicas": "2"}) == NONE
        kafka.faults.pause_follower("mixed", 0, 2)
        try:
            assert produce_partitions(client, "mixed", 3, acks=-1, timeout_ms=300) == [
                (REQUEST_TIMED_OUT, 0), (NONE, 0), (NOT_ENOUGH_REPLICAS, -1)]
            assert produce_partitions(client, "mixed", 3, acks=1, timeout_ms=300) == [(NONE, 1), (NONE, 1), (NONE, 0)]
        finally:
            kafka.faults.resume_follower("mixed", 0, 2)


def test_a_paused_follower_elected_from_the_isr_loses_what_it_lacked(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as one, WireClient(address(kafka, 2)) as two:
        assert create_topic(one, "clean", assignments=[[1, 2]]) == NONE
        assert produce(one, "clean", acks=-1) == (NONE, 0)  # acknowledged by the ISR: kept
        kafka.faults.pause_follower("clean", 0, 2)
        assert produce(one, "clean", acks=1) == (NONE, 1)  # only on the leader
        assert produce(one, "clean", acks=1) == (NONE, 2)
        kafka.faults.elect_leader("clean", 0, 2)  # still in the ISR (within replica.lag.time.max.ms)
        part = state(two, "clean")
        assert (part.leader_id, part.leader_epoch) == (2, 1)
        assert latest_offset(two, "clean") == 1  # offsets 1 and 2 are truncated away
        assert produce(two, "clean", acks=-1) == (NONE, 1)  # the next record takes offset 1 again
        assert fetch_high_watermark(two, "clean")[0] == 2


@pytest.mark.parametrize("unclean", [True, False])
def test_the_last_in_sync_replica_stopping_elects_an_out_of_sync_one_only_if_unclean_is_enabled(
        kafka: MiniKafka, unclean: bool) -> None:
    topic = f"unclean-{str(unclean).lower()}"
    with WireClient(address(kafka, 3)) as three:
        assert create_topic(three, topic, assignments=[[1, 2]],
                            configs={"unclean.leader.election.enable": str(unclean).lower()}) == NONE
        with WireClient(address(kafka, 1)) as one:
            assert produce(one, topic, acks=-1) == (NONE, 0)
            kafka.faults.pause_follower(topic, 0, 2)
            assert produce(one, topic, acks=1) == (NONE, 1)
            wait_for(lambda: state(three, topic).isr_nodes == [1])
            assert produce(one, topic, acks=-1) == (NONE, 2)  # acknowledged with the ISR of one: lost if unclean
        kafka.faults.stop_broker(1)
        try:
            part = state(three, topic)
            if unclean:
                assert (part.leader_id, part.leader_epoch, part.isr_nodes) == (2, 1, [2])
                with WireClient(address(kafka, 2)) as two:
                    assert latest_offset(two, topic) == 1
                    assert produce(two, topic, acks=-1) == (NONE, 1)
            else:  # KIP-966 (Kafka 4.3's default): an empty ISR, the last leader eligible
                assert (part.leader_id, part.leader_epoch, part.isr_nodes) == (-1, 1, [])
                assert eligible_leaders(three, topic) == ([1], [1])
        finally:
            kafka.faults.start_broker(1)
        if not unclean:
            part = state(three, topic)
            assert (part.leader_id, part.leader_epoch) == (1, 2)
            with WireClient(address(kafka, 1)) as one:
                assert latest_offset(one, topic) == 3  # nothing lost: the paused follower is still behind
            kafka.faults.resume_follower(topic, 0, 2)


def test_bad_follower_faults_are_refused_with_one_line(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "follower-refusals", assignments=[[1, 2]]) == NONE
    kafka.faults.pause_follower("follower-refusals", 0, 2)
    try:
        refusals = {
            "broker 1 leads follower-refusals-0: only a follower can be paused":
                lambda: kafka.faults.pause_follower("follower-refusals", 0, 1),
            "broker 3 is not a replica of follower-refusals-0":
                lambda: kafka.faults.pause_follower("follower-refusals", 0, 3),
            "the follower 2 of follower-refusals-0 is already paused":
                lambda: kafka.faults.pause_follower("follower-refusals", 0, 2),
            "the follower 1 of follower-refusals-0 is not paused":
                lambda: kafka.faults.resume_follower("follower-refusals", 0, 1),
            "unknown partition follower-refusals-3": lambda: kafka.faults.pause_follower("follower-refusals", 3, 2),
            "unknown broker 9": lambda: kafka.faults.resume_follower("follower-refusals", 0, 9),
        }
        for reason, call in refusals.items():
            with pytest.raises(FaultError, match=reason) as refused:
                call()
            assert "\n" not in str(refused.value)
        described = kafka.faults.describe()["paused_followers"]
        assert {"topic": "follower-refusals", "partition": 0, "broker": 2, "log_end_offset": 0} in described
    finally:
        kafka.faults.resume_follower("follower-refusals", 0, 2)


def test_the_command_line_and_the_admin_port_pause_and_resume(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "commanded-followers", assignments=[[1, 3]]) == NONE
    paused = minikafka_command("faults", "pause-follower", "commanded-followers", "0", "3",
                               "--admin-url", kafka.admin_url)
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout)["paused_followers"] == [
        {"topic": "commanded-followers", "partition": 0, "broker": 3, "log_end_offset": 0}]
    refused = minikafka_command("faults", "pause-follower", "commanded-followers", "0", "1",
                                "--admin-url", kafka.admin_url)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "minikafka faults pause-follower: broker 1 leads commanded-followers-0: only a follower can be paused "
        "(elect_leader another replica first)"]
    request = urllib.request.Request(
        f"{kafka.admin_url}/admin/faults/resume-follower?topic=commanded-followers&partition=0&id=3", data=b"",
        method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["paused_followers"] == []


def test_an_acks_all_produce_waiting_on_a_follower_answers_not_leader_when_the_leader_moves(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "moved", assignments=[[1, 2, 3]]) == NONE
        kafka.faults.pause_follower("moved", 0, 2)
        with ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            waiting = pool.submit(produce, client, "moved", -1, 10_000)
            time.sleep(0.3)
            assert not waiting.done()
            kafka.faults.elect_leader("moved", 0, 3)
            assert waiting.result(timeout=5) == (NOT_LEADER_OR_FOLLOWER, 0)
            assert time.monotonic() - started < 5
        kafka.faults.resume_follower("moved", 0, 2)


def test_an_acks_all_produce_waiting_on_a_follower_completes_when_its_broker_stops(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "stopped-follower", assignments=[[1, 2, 3]]) == NONE
        kafka.faults.pause_follower("stopped-follower", 0, 3)
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(produce, client, "stopped-follower", -1, 10_000)
            time.sleep(0.3)
            assert not waiting.done()
            kafka.faults.stop_broker(3)  # it leaves the ISR: the high watermark is the leader's and 2's
            try:
                assert waiting.result(timeout=5) == (NONE, 0)
                assert state(client, "stopped-follower").isr_nodes == [1, 2]
            finally:
                kafka.faults.start_broker(3)
        assert state(client, "stopped-follower").isr_nodes == [1, 2]  # still paused and behind: not back in
        kafka.faults.resume_follower("stopped-follower", 0, 3)
        assert state(client, "stopped-follower").isr_nodes == [1, 2, 3]


def test_the_eligible_leader_replicas_follow_kip_966_as_kafka_4_3_keeps_them(kafka: MiniKafka) -> None:
    """min.insync.replicas=2 over replicas 1 and 2, both stopped: a replica that leaves an ISR below two is
    eligible (ELR), the last leader is the last known ELR, an ELR member is elected back."""
    with WireClient(address(kafka, 3)) as three:
        assert create_topic(three, "eligible", assignments=[[1, 2]], configs={"min.insync.replicas": "2"}) == NONE

        def seen() -> tuple[int, int, list[int], tuple[list[int], list[int]]]:
            part = state(three, "eligible")
            return part.leader_id, part.leader_epoch, part.isr_nodes, eligible_leaders(three, "eligible")

        kafka.faults.stop_broker(2)
        try:
            assert seen() == (1, 0, [1], ([2], []))
            kafka.faults.stop_broker(1)
            try:
                assert seen() == (-1, 1, [], ([1, 2], [1]))
            finally:
                kafka.faults.start_broker(2)
            assert seen() == (2, 2, [2], ([1], []))  # an ELR member is elected, the other stays eligible
        finally:
            kafka.faults.start_broker(1)
        assert seen() == (2, 2, [1, 2], ([], []))


def end_offset_for_epoch(client: WireClient, topic: str, epoch: int) -> tuple[int, int, int]:
    """OffsetsForLeaderEpoch (a consumer's, KIP-320) of partition 0: (error code, leader epoch, end offset)."""
    topic_cls = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    request = OffsetForLeaderEpochRequest[4](replica_id=-1, topics=[topic_cls(topic=topic, partitions=[
        topic_cls.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=epoch)])])
    part = client.request(request).topics[0].partitions[0]
    return part.error_code, part.leader_epoch, part.end_offset


@pytest.mark.parametrize("election", ["ElectLeaders", "unclean.leader.election.enable"])
def test_a_replica_stopped_while_the_leader_wrote_loses_those_records_when_elected_uncleanly(
        kafka: MiniKafka, election: str) -> None:
    """As Kafka 4.3.1 (tests/interop/test_multi_broker_side_by_side.py compares): a stopped broker's replica
    fetches nothing, so the leader's records written meanwhile are lost when that replica is elected while the
    leader is gone: by ElectLeaders UNCLEAN, or at once when its broker returns with
    unclean.leader.election.enable (Kafka's handleBrokerUnfenced)."""
    topic = f"stopped-{'elect' if election == 'ElectLeaders' else 'config'}"
    unclean = str(election != "ElectLeaders").lower()
    with WireClient(address(kafka, 3)) as three:
        assert create_topic(three, topic, assignments=[[1, 2]],
                            configs={"unclean.leader.election.enable": unclean}) == NONE
        with WireClient(address(kafka, 1)) as one:
            assert produce(one, topic, acks=-1) == (NONE, 0)
            kafka.faults.stop_broker(2)
            try:
                assert produce(one, topic, acks=1) == (NONE, 1)  # on the leader only: 2 is stopped
                assert produce(one, topic, acks=-1) == (NONE, 2)  # the ISR is 1 alone
                kafka.faults.stop_broker(1)
            finally:
                kafka.faults.start_broker(2)
        try:
            if election == "ElectLeaders":
                part = state(three, topic)  # 2 is not eligible (KIP-966): no clean election
                assert (part.leader_id, part.leader_epoch, part.isr_nodes) == (-1, 1, [])
                assert eligible_leaders(three, topic) == ([1], [1])
                assert results(elect(three, 1, {topic: [0]})) == {(topic, 0): (NONE, None)}
            part = state(three, topic)
            assert (part.leader_id, part.leader_epoch, part.isr_nodes) == (2, 2, [2])
            assert eligible_leaders(three, topic) == ([], [])
            with WireClient(address(kafka, 2)) as two:
                assert latest_offset(two, topic) == 1  # offsets 1 and 2 were truncated
                assert end_offset_for_epoch(two, topic, 0) == (NONE, 0, 1)  # where a consumer's epoch 0 ends
                assert produce(two, topic, acks=-1) == (NONE, 1)
        finally:
            kafka.faults.start_broker(1)
        assert state(three, topic).isr_nodes == [1, 2]
        with WireClient(address(kafka, 2)) as two:
            assert latest_offset(two, topic) == 2


def test_a_stopped_follower_catches_up_when_its_broker_starts_while_the_leader_runs(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as one:
        assert create_topic(one, "catching-up", assignments=[[1, 2]]) == NONE
        kafka.faults.stop_broker(2)
        try:
            assert produce(one, "catching-up", acks=1) == (NONE, 0)
            assert produce(one, "catching-up", acks=1) == (NONE, 1)
        finally:
            kafka.faults.start_broker(2)
        assert state(one, "catching-up").isr_nodes == [1, 2]
    kafka.faults.elect_leader("catching-up", 0, 2)
    with WireClient(address(kafka, 2)) as two:
        assert latest_offset(two, "catching-up") == 2  # it fetched both: nothing lost


def test_an_eligible_replica_elected_when_it_returns_brings_its_log(kafka: MiniKafka) -> None:
    """min.insync.replicas=2: the stopped 2 is eligible (ELR); the leader alone still takes acks=1 records;
    when 1 stops too and 2 returns, 2 leads with the log it had (Kafka's follower truncates to it)."""
    with WireClient(address(kafka, 3)) as three:
        assert create_topic(three, "eligible-log", assignments=[[1, 2]],
                            configs={"min.insync.replicas": "2"}) == NONE
        with WireClient(address(kafka, 1)) as one:
            assert produce(one, "eligible-log", acks=-1) == (NONE, 0)
            kafka.faults.stop_broker(2)
            try:
                assert produce(one, "eligible-log", acks=1) == (NONE, 1)
                kafka.faults.stop_broker(1)
            finally:
                kafka.faults.start_broker(2)
        try:
            part = state(three, "eligible-log")
            assert (part.leader_id, part.leader_epoch, part.isr_nodes) == (2, 2, [2])
            with WireClient(address(kafka, 2)) as two:
                assert latest_offset(two, "eligible-log") == 1
        finally:
            kafka.faults.start_broker(1)


def test_a_held_back_follower_serves_a_consumer_only_the_records_it_has(kafka: MiniKafka) -> None:
    """A consumer's Fetch v12 (KIP-392) from a follower reads that replica's log: a paused one ends where it
    stopped following, a caught-up one at the high watermark."""
    with WireClient(address(kafka, 1)) as one:
        assert create_topic(one, "follower-reads", assignments=[[1, 2, 3]]) == NONE
        assert produce(one, "follower-reads", acks=-1) == (NONE, 0)
        kafka.faults.pause_follower("follower-reads", 0, 2)
        assert produce(one, "follower-reads", acks=1) == (NONE, 1)
        wait_for(lambda: state(one, "follower-reads").isr_nodes == [1, 3])
        assert fetch_high_watermark(one, "follower-reads")[0] == 2
        with WireClient(address(kafka, 2)) as two, WireClient(address(kafka, 3)) as three:
            paused = fetch_high_watermark(two, "follower-reads")
            caught_up = fetch_high_watermark(three, "follower-reads")
            assert (paused[0], caught_up[0]) == (1, 2)
            assert 0 < paused[1] < caught_up[1]  # one batch of the two
        kafka.faults.resume_follower("follower-reads", 0, 2)
        with WireClient(address(kafka, 2)) as two:
            assert fetch_high_watermark(two, "follower-reads")[0] == 2

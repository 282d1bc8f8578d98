"""Issue 30: two static (KIP-345) members whose JoinGroups arrive together land in one generation, on Apache Kafka
4.3.1 and on minikafka, with `group.initial.rebalance.delay.ms=0`.

"Together" is made exact: the broker process is stopped (SIGSTOP) while both JoinGroups are sent on their own
connections, then continued, so both requests wait in its sockets when it resumes. Kafka never completes the
initial rebalance of an empty group from a join, only from its delay timer (even at 0 ms), so both members get
generation 1 and the leader sees both. (The same with two confluent-kafka consumers, whose joins are only close in
time, is `bench/static_join.py`: a timing-dependent count, in BENCHMARKS.md.)
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse, OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

REBALANCE_TIMEOUT_MS = 5_000


def wait_for_coordinator(client: WireClient, group: str) -> None:
    """FindCoordinator (which creates __consumer_offsets), then OffsetFetch until the group's coordinator answers
    (a fresh Kafka loads the partition first)."""
    found = client.request_until_ready(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
    assert found.coordinators[0].error_code == 0, found
    response = client.request_until_ready(OffsetFetchRequest[7](group_id=group, topics=None, require_stable=False))
    assert response.error_code == 0, response


def send_static_join(client: WireClient, group: str, instance_id: str, correlation_id: int) -> None:
    protocol = JoinGroupRequest.JoinGroupRequestProtocol
    request = JoinGroupRequest[5](
        group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, member_id="",
        group_instance_id=instance_id, protocol_type="consumer",
        protocols=[protocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x00")])
    request.with_header(correlation_id=correlation_id, client_id=instance_id)
    client.sock.sendall(bytes(request.encode(header=True, framed=True)))


def joins_sent_together(bootstrap: str, pid: int) -> list[Any]:
    group = f"static-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap, timeout_s=30) as first, WireClient(bootstrap, timeout_s=30) as second:
        wait_for_coordinator(first, group)
        os.kill(pid, signal.SIGSTOP)
        try:
            send_static_join(first, group, "consumer1", 101)
            send_static_join(second, group, "consumer2", 102)
            time.sleep(0.3)
        finally:
            os.kill(pid, signal.SIGCONT)
        return [JoinGroupResponse[5].decode(client.read_frame(), header=True) for client in (first, second)]


@pytest.mark.parametrize("target", ["apache", "minikafka"])
def test_static_members_joining_together_land_in_one_generation(
    target: str, request: pytest.FixtureRequest, broker_factory: Callable[..., BrokerProcess]
) -> None:
    if target == "apache":
        kafka = request.getfixturevalue("apache_kafka")  # group.initial.rebalance.delay.ms=0 there
        bootstrap, pid = kafka.bootstrap, kafka.process.pid
    else:
        broker = broker_factory({"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"})
        bootstrap, pid = broker.bootstrap, broker.pid
    responses = joins_sent_together(bootstrap, pid)
    # Kafka reads the two sockets on its network thread and hands each join to its own request-handler thread, while
    # the 0 ms timer fires on a third: on loaded CPUs the timer can beat the second join (seen once in a clean-clone
    # run: generations [2, 1]). Without the rule it would never give one generation, so one more try proves it there;
    # minikafka (both joins read in one event-loop turn, the timer after them) gets no second try.
    for _retry in range(2 if target == "apache" else 0):
        if [r.generation_id for r in responses] == [1, 1]:
            break
        responses = joins_sent_together(bootstrap, pid)
    assert [r.error_code for r in responses] == [0, 0], responses
    assert [r.generation_id for r in responses] == [1, 1], responses
    leader = next(r for r in responses if r.leader == r.member_id)
    assert sorted(m.group_instance_id for m in leader.members) == ["consumer1", "consumer2"]

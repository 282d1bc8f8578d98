"""How wide is the window in which a second static member's JoinGroup still lands in the first rebalance of a new
classic group, on Apache Kafka 4.3.1 and on minikafka (both with `group.initial.rebalance.delay.ms=0`)?

    .venv/bin/python -m bench.static_join_window [--rounds 10]

Measured on raw connections (no client library in the way), each over `--rounds` fresh groups:
- the plain round trip of a coordinator read (OffsetFetch), for scale;
- join phase: from the first member's JoinGroup to its answer (the group's first generation formed). A second
  join arriving before that lands in generation 1;
- after the leader's SyncGroup: the second member's JoinGroup is sent `d` ms after the leader's SyncGroup; counted
  when the SyncGroup is answered REBALANCE_IN_PROGRESS (the late join still caught the rebalance, no member got
  an assignment), not with the assignment (the group was Stable: the late join starts a second rebalance).
What `bench/static_join.py` counts with confluent-kafka consumers is the sum: a late join costs a second rebalance
only when it arrives after both windows.
"""

from __future__ import annotations

import statistics
import time
import uuid

from kafka.protocol.consumer.group import JoinGroupResponse, OffsetFetchRequest, SyncGroupRequest, SyncGroupResponse

from tests.interop.test_static_join import send_static_join, wait_for_coordinator
from tests.wire_client import WireClient

REBALANCE_IN_PROGRESS = 27
SYNC_DELAYS_MS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
#: a ConsumerProtocol assignment (version 1) of no partitions; its content does not matter to the coordinator
EMPTY_ASSIGNMENT = b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"


def _busy_wait(started: float, delay_s: float) -> None:
    while time.perf_counter() - started < delay_s:  # sleep() would overshoot sub-millisecond delays
        pass


def round_trip_ms(bootstrap: str, requests: int) -> float:
    group = f"window-rtt-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap) as client:
        wait_for_coordinator(client, group)
        took = []
        for _ in range(requests):
            started = time.perf_counter()
            client.request(OffsetFetchRequest[7](group_id=group, topics=None, require_stable=False))
            took.append(time.perf_counter() - started)
    return statistics.median(took) * 1000


def join_phase_ms(bootstrap: str) -> float:
    """A new group's first JoinGroup until its answer, in ms."""
    group = f"window-join-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap, timeout_s=30) as client:
        wait_for_coordinator(client, group)
        started = time.perf_counter()
        send_static_join(client, group, "consumer1", 1)
        joined = JoinGroupResponse[5].decode(client.read_frame(), header=True)
        took = time.perf_counter() - started
    assert joined.error_code == 0, joined
    return took * 1000


def late_join_caught(bootstrap: str, delay_ms: float) -> bool:
    """Whether a JoinGroup sent `delay_ms` after the leader's SyncGroup still caught the rebalance."""
    group = f"window-sync-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap, timeout_s=30) as leader, WireClient(bootstrap, timeout_s=30) as late:
        wait_for_coordinator(leader, group)
        wait_for_coordinator(late, group)
        send_static_join(leader, group, "consumer1", 1)
        joined = JoinGroupResponse[5].decode(leader.read_frame(), header=True)
        assert joined.error_code == 0 and joined.leader == joined.member_id, joined
        sync = SyncGroupRequest[3](group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
                                   group_instance_id="consumer1", assignments=[(joined.member_id, EMPTY_ASSIGNMENT)])
        sync.with_header(correlation_id=2, client_id="consumer1")
        sync_bytes = bytes(sync.encode(header=True, framed=True))
        started = time.perf_counter()
        leader.sock.sendall(sync_bytes)
        _busy_wait(started, delay_ms / 1000)
        send_static_join(late, group, "consumer2", 1)
        synced = SyncGroupResponse[3].decode(leader.read_frame(), header=True)
    # the late member's own JoinGroup waits for consumer1 to rejoin (up to the rebalance timeout): not read
    return bool(synced.error_code == REBALANCE_IN_PROGRESS)


def measure(name: str, bootstrap: str, rounds: int) -> None:
    print(f"{name}: OffsetFetch round trip, median {round_trip_ms(bootstrap, rounds * 10):.2f} ms", flush=True)
    joins = sorted(join_phase_ms(bootstrap) for _ in range(rounds))
    print(f"{name}: join phase (first JoinGroup -> answer), median {statistics.median(joins):.2f} ms, "
          f"max {joins[-1]:.2f} ms", flush=True)
    for delay_ms in SYNC_DELAYS_MS:
        caught = sum(late_join_caught(bootstrap, delay_ms) for _ in range(rounds))
        print(f"{name}: join {delay_ms} ms after the leader's SyncGroup caught the rebalance {caught}/{rounds}",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile
    from pathlib import Path

    from bench.apache_kafka import ApacheKafka
    from minikafka.testing import MiniKafka

    parser = argparse.ArgumentParser(prog="python -m bench.static_join_window", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        with ApacheKafka(Path(tmp) / "apache") as kafka:  # group.initial.rebalance.delay.ms=0 there too
            measure("Apache Kafka", kafka.bootstrap, args.rounds)
        overrides = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}
        with MiniKafka(overrides, data_dir=Path(tmp) / "minikafka") as broker:
            measure("minikafka", broker.bootstrap_servers, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

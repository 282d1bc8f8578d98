"""Two static (KIP-345) confluent-kafka members join a new classic group together; how many rebalances they see.

    .venv/bin/python -m bench.static_join [--rounds 20] [--regex] [--no-warm-up | --hold-joins]
                                          [--only apache|minikafka] [--no-record]

Both brokers run with `group.initial.rebalance.delay.ms=0` (issue 30). Each round: a fresh group, two consumers
(`consumer1`, `consumer2`, eager `range` assignment) created, connected (unless `--no-warm-up`), then subscribed at
one barrier; each polls in
its own thread and records every rebalance callback. A round ends when both hold an assignment covering the
3-partition topic that has been quiet for `SETTLE_S` (a second rebalance, if any, starts well within that).
`--hold-joins` makes "together" exact with the same clients: once both are connected, the broker process is stopped
(SIGSTOP) while they subscribe and send their JoinGroups, and continued `HOLD_S` later, so both requests wait in its
sockets. "One rebalance" = each member got exactly one assignment. The rule itself is tested exactly (both joins held in
the stopped broker's sockets) by tests/interop/test_static_join.py.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from bench.apache_kafka import ApacheKafka
from bench.results_log import (
    HISTORY_MD,
    RESULTS_FILE,
    append_history,
    append_results,
    history_header,
    result,
    this_command,
)

SETTLE_S = 2.0
ROUND_TIMEOUT_S = 45.0
WARM_UP_S = 1.5
HOLD_S = 0.5
PARTITIONS = 3


@dataclass
class MemberLog:
    """What one member's rebalance callbacks saw, in order. Written by its poll thread, read after join()."""

    instance_id: str
    assigns: list[list[int]] = field(default_factory=list)
    revokes: list[list[int]] = field(default_factory=list)
    last_event_s: float = 0.0

    @property
    def current(self) -> list[int]:
        return self.assigns[-1] if self.assigns else []


@dataclass(frozen=True)
class JoinOutcome:
    members: tuple[MemberLog, ...]

    @property
    def rebalances(self) -> int:
        """Assignments handed out per member, the most any member saw (1 = the two landed in one generation)."""
        return max(len(member.assigns) for member in self.members)

    def describe(self) -> str:
        return "; ".join(f"{m.instance_id}: assigns={m.assigns} revokes={m.revokes}" for m in self.members)


def run_round(bootstrap: str, topic: str, group_id: str | None = None, *, regex: bool = False,
              warm_up: bool = True, hold_pid: int | None = None) -> JoinOutcome:
    """Start two static members (`consumer1`, `consumer2`) of a fresh group on `topic` at the same moment
    (`regex`: subscribed as `^topic.*`, as librdkafka's static-membership test does; `hold_pid`: the broker process to
    stop while they subscribe)."""
    from confluent_kafka import Consumer

    group = group_id or f"static-join-{uuid.uuid4().hex[:8]}"
    logs = (MemberLog("consumer1"), MemberLog("consumer2"))
    consumers: list[Any] = []
    for log in logs:
        consumers.append(Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.instance.id": log.instance_id,
            "session.timeout.ms": 30_000,
            "max.poll.interval.ms": 30_000,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
            "metadata.max.age.ms": 5_000,
        }))
    if warm_up:  # both connected and their coordinator known before they subscribe: the joins leave together
        for consumer in consumers:
            consumer.list_topics(topic, timeout=10)
        time.sleep(WARM_UP_S)
    start = threading.Barrier(len(consumers))
    stop = threading.Event()
    errors: list[BaseException] = []

    def member(consumer: Any, log: MemberLog) -> None:
        def on_assign(_consumer: Any, partitions: list[Any]) -> None:
            log.assigns.append(sorted(p.partition for p in partitions))
            log.last_event_s = time.monotonic()

        def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
            log.revokes.append(sorted(p.partition for p in partitions))
            log.last_event_s = time.monotonic()

        try:
            start.wait(timeout=30)
            consumer.subscribe([f"^{topic}.*" if regex else topic], on_assign=on_assign, on_revoke=on_revoke)
            while not stop.is_set():
                consumer.poll(0.1)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=member, args=(c, log), daemon=True) for c, log in zip(consumers, logs)]
    if hold_pid is not None:
        os.kill(hold_pid, signal.SIGSTOP)
    try:
        for thread in threads:
            thread.start()
        if hold_pid is not None:
            time.sleep(HOLD_S)
    finally:
        if hold_pid is not None:
            os.kill(hold_pid, signal.SIGCONT)
    deadline = time.monotonic() + ROUND_TIMEOUT_S
    try:
        while time.monotonic() < deadline and not errors:
            covered = sorted(p for log in logs for p in log.current)
            quiet = all(log.last_event_s and time.monotonic() - log.last_event_s >= SETTLE_S for log in logs)
            if covered == list(range(PARTITIONS)) and all(log.current for log in logs) and quiet:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the two members did not settle: {errors or [log for log in logs]}")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        for consumer in consumers:
            consumer.close()
    return JoinOutcome(logs)


def _rounds(bootstrap: str, rounds: int, regex: bool, warm_up: bool, hold_pid: int | None) -> list[int]:
    from tests.integration.client_drivers import create_topic

    topic = f"static-join-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    counts = []
    for index in range(rounds):
        outcome = run_round(bootstrap, topic, regex=regex, warm_up=warm_up, hold_pid=hold_pid)
        counts.append(outcome.rebalances)
        print(f"  round {index + 1}: {outcome.rebalances} rebalance(s)  {outcome.describe()}", flush=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile
    from pathlib import Path

    from minikafka.testing import MiniKafka

    parser = argparse.ArgumentParser(prog="python -m bench.static_join", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--regex", action="store_true", help="subscribe by pattern, as librdkafka's test does")
    parser.add_argument("--only", choices=("apache", "minikafka"))
    timing = parser.add_mutually_exclusive_group()
    timing.add_argument("--no-warm-up", action="store_true",
                        help="subscribe right after creating the consumers (their joins then leave milliseconds apart)")
    timing.add_argument("--hold-joins", action="store_true",
                        help="stop the broker (SIGSTOP) while the connected consumers subscribe, so both joins wait")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    results: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "minikafka":
            with ApacheKafka(Path(tmp) / "apache") as kafka:  # group.initial.rebalance.delay.ms=0 there too
                print("Apache Kafka", flush=True)
                kafka_pid = kafka.process.pid if kafka.process is not None and args.hold_joins else None
                results["apache"] = _rounds(kafka.bootstrap, args.rounds, args.regex, not args.no_warm_up, kafka_pid)
        if args.only != "apache":
            overrides = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}
            with MiniKafka(overrides, data_dir=Path(tmp) / "minikafka") as broker:
                print("minikafka", flush=True)
                results["minikafka"] = _rounds(broker.bootstrap_servers, args.rounds, args.regex, not args.no_warm_up,
                                               broker.pid if args.hold_joins else None)
    lines = [f"{name}: {counts.count(1)} of {len(counts)} rounds with exactly one rebalance; "
             f"rebalances per round {sorted(set(counts))}" for name, counts in results.items()]
    print("\n".join(lines))
    if not args.no_record and results:
        mode = ("broker stopped while both join (--hold-joins)" if args.hold_joins
                else "subscribed right after creation (--no-warm-up)" if args.no_warm_up
                else "consumers connected first")
        record(results, lines, load_before, mode)
        print(f"appended to {HISTORY_MD} and {RESULTS_FILE}")
    return 0


def record(results: dict[str, list[int]], lines: list[str], load_before: float, mode: str) -> None:
    """The run's counts as a results.jsonl figure and a HISTORY.md section."""
    kafka = results.get("apache")
    mini = results.get("minikafka")
    if mini is not None:
        append_results([result(
            "static-join", f"rounds with exactly one rebalance (of {len(mini)}), {mode}", mini.count(1), "rounds",
            None if kafka is None else kafka.count(1), note=f"load average {load_before:.1f} at start")])
    append_history("\n".join([
        *history_header("Two static members joining a new group (issue 30)", this_command(), load_before),
        f"- {mode}", *(f"- {line}" for line in lines)]))


if __name__ == "__main__":
    raise SystemExit(main())

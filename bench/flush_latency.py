"""Produce latency with and without periodic log flushing (issue 28, item 1).

    .venv/bin/python -m bench.flush_latency [--rate 1000] [--seconds 20] [--rounds 3] [--no-record]

A real broker subprocess per phase (tests/broker_process.py) with a topic of 4 partitions; one confluent-kafka
producer (linger.ms=0, acks=1) sends 4 KiB records round-robin over the partitions at a fixed rate (open loop:
record i is handed to the client at t0 + i / rate, whatever happened to the ones before). The latency of a record
is librdkafka's own (`Message.latency()`: from produce() to the acknowledgement). Phases alternate:
- `no flush`: the defaults (the broker never fsyncs on a timer; the roll timer's fsync of rolled segments only);
- `flush 200 ms`: `log.flush.interval.ms=200` with `log.flush.scheduler.interval.ms=50` (without a scheduler
  interval the flusher never runs, as in Kafka), so every partition is fsynced five times a second.
Each phase warms up for 3 s, then measures `--seconds`; `--rounds` pairs, interleaved, so a noisy neighbour on the
shared CPUs hits both. The goal (issue 28): with flushing, p99.9 within 2x (or +10 ms) of without and max < 50 ms.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.results_log import HISTORY_MD, RESULTS_FILE, append_history, append_results, history_header, result
from tests.broker_process import BrokerProcess

TOPIC = "flush-latency"
PARTITIONS = 4
RECORD_BYTES = 4096
WARM_UP_S = 3.0
FLUSH_PROPS = {"log.flush.interval.ms": "200", "log.flush.scheduler.interval.ms": "50"}


@dataclass
class Phase:
    """Latencies (ms) of the records acknowledged in one measured phase."""

    name: str
    latencies_ms: list[float] = field(default_factory=list)
    failed: int = 0

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")

    @property
    def max_ms(self) -> float:
        return max(self.latencies_ms, default=float("nan"))

    def row(self) -> str:
        return (f"| {self.name} | {len(self.latencies_ms):,} | {self.percentile(0.5):.2f} | "
                f"{self.percentile(0.99):.2f} | {self.percentile(0.999):.2f} | {self.max_ms:.2f} | {self.failed} |")


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(timeout=30)


def produce_at_rate(bootstrap: str, rate: float, seconds: float, phase: Phase) -> None:
    """Warm up, then produce for `seconds` at `rate` records/s; acknowledged latencies go into `phase`."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1,
                         "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(RECORD_BYTES)
    measuring = False

    def delivered(error: Any, message: Any) -> None:
        if not measuring:
            return
        if error is not None:
            phase.failed += 1
        else:
            phase.latencies_ms.append(message.latency() * 1000)

    interval_s = 1.0 / rate
    started = time.perf_counter()
    measure_from, end = started + WARM_UP_S, started + WARM_UP_S + seconds
    due, sent = started, 0
    while due < end:
        if not measuring and due >= measure_from:
            measuring = True
        now = time.perf_counter()
        while now < due:
            producer.poll(due - now)
            now = time.perf_counter()
        producer.produce(TOPIC, value=value, partition=sent % PARTITIONS, on_delivery=delivered)
        sent += 1
        due += interval_s
        producer.poll(0)
    if producer.flush(60) != 0:
        raise RuntimeError("records still unacknowledged 60 s after the phase")


def run_phase(name: str, props: dict[str, str], rate: float, seconds: float) -> Phase:
    with tempfile.TemporaryDirectory(prefix="flush-latency-") as work:
        broker = BrokerProcess(Path(work) / "data", {"log.cleaner.enable": "false", **props})
        broker.start()
        try:
            create_topic(broker.bootstrap)
            phase = Phase(name)
            produce_at_rate(broker.bootstrap, rate, seconds, phase)
            return phase
        finally:
            broker.stop()


def combined(name: str, phases: list[Phase]) -> Phase:
    total = Phase(name)
    for phase in phases:
        total.latencies_ms.extend(phase.latencies_ms)
        total.failed += phase.failed
    return total


def verdict(without: Phase, with_flush: Phase) -> str:
    base, flushed = without.percentile(0.999), with_flush.percentile(0.999)
    p999_ok = flushed <= max(2 * base, base + 10)
    max_ok = with_flush.max_ms < 50
    return (f"p99.9 with flushing {flushed:.2f} ms vs {base:.2f} ms without "
            f"({'within' if p999_ok else 'NOT within'} 2x or +10 ms); max with flushing {with_flush.max_ms:.2f} ms "
            f"({'under' if max_ok else 'NOT under'} 50 ms)")


def render(phases: list[Phase]) -> str:
    lines = ["| phase | records | p50 ms | p99 ms | p99.9 ms | max ms | failed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    return "\n".join(lines + [phase.row() for phase in phases])


def record(command: str, args: argparse.Namespace, table: str, summary: str, load_before: float) -> None:
    section = [
        *history_header("Produce latency with and without log flushing (issue 28)", command, load_before),
        f"- one broker subprocess per phase, topic of {PARTITIONS} partitions; confluent-kafka producer, "
        f"linger.ms=0, acks=1, {RECORD_BYTES} B records round-robin at {args.rate:g} records/s open loop; "
        f"{WARM_UP_S:g} s warm-up then {args.seconds:g} s measured; `flush 200 ms` = "
        f"{', '.join(f'{k}={v}' for k, v in FLUSH_PROPS.items())}; latency = librdkafka's Message.latency()",
        f"- verdict: {summary}",
        "",
        table,
        "",
    ]
    append_history("\n".join(section))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0, help="records per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per phase")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of phases (no flush, flush), interleaved")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    without: list[Phase] = []
    with_flush: list[Phase] = []
    for round_number in range(1, args.rounds + 1):
        for name, props, phases in (("no flush", {}, without), ("flush 200 ms", FLUSH_PROPS, with_flush)):
            phase = run_phase(f"{name} #{round_number}", props, args.rate, args.seconds)
            print(phase.row(), flush=True)
            phases.append(phase)
    all_without, all_with = combined("no flush, all rounds", without), combined("flush 200 ms, all rounds", with_flush)
    table = render([*without, *with_flush, all_without, all_with])
    summary = verdict(all_without, all_with)
    print(table)
    print(summary)
    if not args.no_record:
        command = "python -m bench.flush_latency " + shlex.join(argv if argv is not None else sys.argv[1:])
        record(command.strip(), args, table, summary, load_before)
        append_results([
            result("flush-latency", "produce p99.9 with / without flushing", all_with.percentile(0.999), "ms",
                   ratio=all_with.percentile(0.999) / all_without.percentile(0.999), command=command.strip()),
            result("flush-latency", "produce max latency with flushing", all_with.max_ms, "ms",
                   command=command.strip())])
        print(f"appended to {HISTORY_MD} and {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

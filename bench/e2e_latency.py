"""End-to-end latency (produce -> consume) of minikafka vs. Apache Kafka at a fixed rate (issue 14).

    .venv/bin/python -m bench.e2e_latency [--seconds 30] [--rate 1000] [--record-bytes 200] [--acks 1]
        [--only apache|minikafka] [--no-record]

Also run by `python -m bench.throughput --latency SECONDS` on the brokers of the throughput run.

Load: a confluent-kafka (librdkafka) producer in a child process sends `--rate` records/s of `--record-bytes` to a
fresh one-partition topic, open loop (record i is due at t0 + i / rate; linger.ms=0, no idempotence), each record
carrying its index and the CLOCK_MONOTONIC time of its produce() call. A confluent-kafka consumer in this process
(assign() from offset 0, no group; librdkafka's defaults: fetch.wait.max.ms=500, fetch.min.bytes=1, so the
broker's Fetch long-poll decides when a record is handed over) stamps each record when poll() returns it.
Latency = receive time - produce() time, both from the same machine-wide monotonic clock. The first
`--warm-up-seconds` of records (connection set-up, metadata, JIT) are not counted. Apache Kafka's own
EndToEndLatency tool is not used: it is closed loop (one record at a time, waiting for each), not a fixed rate.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import shlex
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.machine import machine_description
from bench.proc_cpu import tree_cpu_seconds
from bench.results_log import HISTORY_MD, BenchResult, append_history, append_results, result
from tests.kafka_jars import KAFKA_VERSION

BENCHMARKS_MD = HISTORY_MD  # the Markdown write-ups; the figures go to bench/results/results.jsonl
_STAMP = struct.Struct(">qq")  # record index, produce() time in CLOCK_MONOTONIC nanoseconds


@dataclass(frozen=True)
class LatencySettings:
    seconds: float = 30.0
    rate: int = 1000
    record_bytes: int = 200
    acks: str = "1"
    warm_up_seconds: float = 3.0

    @property
    def label(self) -> str:
        return f"{self.rate:,} msg/s of {self.record_bytes} B, acks={self.acks}, {self.seconds:g} s"


@dataclass(frozen=True)
class LatencyResult:
    """Latencies (ms) of the measured records, how many records were expected/received, broker CPU."""

    latencies_ms: tuple[float, ...]
    expected: int
    received: int
    broker_cpu_s: float
    elapsed_s: float

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    @property
    def broker_cpu_percent(self) -> float:
        return 100.0 * self.broker_cpu_s / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    @staticmethod
    def missing() -> LatencyResult:
        return LatencyResult((), 0, 0, float("nan"), 0.0)


def _produce_paced(bootstrap: str, topic: str, settings: LatencySettings, total: int) -> None:
    """Child process: `total` records at `settings.rate`, open loop, then flush. Exits 1 if not all delivered."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": settings.acks, "linger.ms": 0,
                         "enable.idempotence": False, "queue.buffering.max.messages": 1_000_000})
    padding = b"x" * max(0, settings.record_bytes - _STAMP.size)
    interval_ns = 1_000_000_000 // settings.rate
    start_ns = time.monotonic_ns()
    for index in range(total):
        due_ns = start_ns + index * interval_ns
        wait_ns = due_ns - time.monotonic_ns()
        if wait_ns > 0:
            time.sleep(wait_ns / 1e9)
        producer.produce(topic, _STAMP.pack(index, time.monotonic_ns()) + padding, partition=0)
        producer.poll(0)
    sys.exit(0 if producer.flush(30) == 0 else 1)


def measure_latency(bootstrap: str, broker_pid: int | None, settings: LatencySettings, topic: str) -> LatencyResult:
    """One latency run against the broker at `bootstrap` on a new topic; `broker_pid` for its CPU (or None)."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    time.sleep(0.5)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    consumer.poll(1.0)  # connect and start fetching before the first record is sent
    warm_up = int(settings.warm_up_seconds * settings.rate)
    expected = int(settings.seconds * settings.rate)
    producer = multiprocessing.get_context("spawn").Process(
        target=_produce_paced, args=(bootstrap, topic, settings, warm_up + expected), daemon=True)
    latencies: list[float] = []
    received = 0
    cpu_start = started = 0.0
    deadline = time.monotonic() + settings.warm_up_seconds + settings.seconds + 60
    producer.start()
    try:
        while received < warm_up + expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)  # returns as soon as one record is there (consume(n) waits for n)
            now_ns = time.monotonic_ns()
            value = message.value() if message is not None and message.error() is None else None
            if value is None:
                continue
            index, sent_ns = _STAMP.unpack_from(value)
            received += 1
            if index >= warm_up and not started:
                cpu_start = tree_cpu_seconds(broker_pid) if broker_pid is not None else 0.0
                started = time.monotonic()
            if index >= warm_up:
                latencies.append((now_ns - sent_ns) / 1e6)
        elapsed = time.monotonic() - started if started else 0.0
        cpu = tree_cpu_seconds(broker_pid) - cpu_start if broker_pid is not None and started else float("nan")
    finally:
        consumer.close()
        producer.join(timeout=60)
        if producer.is_alive():
            producer.kill()
    if producer.exitcode != 0:
        print(f"  latency producer exited with {producer.exitcode}", file=sys.stderr)
    return LatencyResult(tuple(latencies), expected, len(latencies), cpu, elapsed)


def _fmt(value: float, digits: int = 2) -> str:
    return "n/a" if value != value else f"{value:,.{digits}f}"


def latency_table(settings: LatencySettings, results: dict[str, LatencyResult]) -> str:
    """Markdown rows, one per broker ("apache", "minikafka"), plus the minikafka / Kafka ratio of p99 and p99.9."""
    lines = [f"End-to-end latency, {settings.label} (ms; produce() to poll() return):", "",
             "| broker | received/expected | p50 | p99 | p99.9 | max | broker CPU % |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, label in (("apache", "Apache Kafka"), ("minikafka", "minikafka")):
        result = results.get(name)
        if result is None:
            continue
        lines.append(f"| {label} | {result.received:,}/{result.expected:,} | {_fmt(result.percentile(0.5))} | "
                     f"{_fmt(result.percentile(0.99))} | {_fmt(result.percentile(0.999))} | "
                     f"{_fmt(result.percentile(1.0))} | {_fmt(result.broker_cpu_percent, 1)} |")
    if "apache" in results and "minikafka" in results:
        ours, theirs = results["minikafka"], results["apache"]
        ratios = [f"{name} {ours.percentile(q) / theirs.percentile(q):.2f}x"
                  for name, q in (("p99", 0.99), ("p99.9", 0.999)) if theirs.percentile(q) > 0]
        lines += ["", "minikafka / Apache Kafka: " + ", ".join(ratios)]
    return "\n".join(lines)


def latency_results(settings: LatencySettings, results: dict[str, LatencyResult], command: str) -> list[BenchResult]:
    """p50, p99 and p99.9 of minikafka against Apache Kafka's, for bench/results/results.jsonl."""
    ours, theirs = results.get("minikafka"), results.get("apache")
    if ours is None:
        return []
    label = f"{settings.rate:,} msg/s of {settings.record_bytes} B"
    return [result("e2e-latency", f"{name} latency, {label}", ours.percentile(q), "ms",
                   None if theirs is None else theirs.percentile(q), command=command)
            for name, q in (("p99", 0.99), ("p99.9", 0.999), ("p50", 0.5)) if ours.percentile(q) == ours.percentile(q)]


LOAD_DESCRIPTION = (
    "load: confluent-kafka producer in a child process (open loop, linger.ms=0) and a confluent-kafka assign() "
    "consumer in the bench process (librdkafka fetch defaults), one-partition topic; latency = poll() return "
    "- produce() call on CLOCK_MONOTONIC; the first warm-up seconds of records are not counted; broker CPU % = "
    "CPU-s of the broker's process tree (/proc) over the measured window"
)


def main(argv: list[str] | None = None) -> int:
    from bench.throughput import minikafka_server
    from tests.apache_kafka import ApacheKafka
    from tests.kafka_jars import ensure_kafka_jars

    parser = argparse.ArgumentParser(prog="python -m bench.e2e_latency", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per broker")
    parser.add_argument("--rate", type=int, default=1000, help="records per second")
    parser.add_argument("--record-bytes", type=int, default=200)
    parser.add_argument("--acks", default="1", choices=["0", "1", "all"])
    parser.add_argument("--warm-up-seconds", type=float, default=3.0)
    parser.add_argument("--only", choices=["apache", "minikafka"], default=None)
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    settings = LatencySettings(args.seconds, args.rate, args.record_bytes, args.acks, args.warm_up_seconds)
    command = "python -m bench.e2e_latency " + shlex.join(sys.argv[1:] if argv is None else argv)
    load_before = os.getloadavg()[0]
    results: dict[str, LatencyResult] = {}
    with tempfile.TemporaryDirectory(prefix="minikafka-e2e-") as work:
        if args.only in (None, "minikafka"):
            (Path(work) / "mk").mkdir()
            with minikafka_server(Path(work) / "mk") as (bootstrap, pid):
                results["minikafka"] = measure_latency(bootstrap, pid, settings, "e2e-latency")
        if args.only in (None, "apache"):
            with ApacheKafka(Path(work) / "apache", lib_dir=ensure_kafka_jars()) as kafka:
                assert kafka.process is not None
                results["apache"] = measure_latency(kafka.bootstrap, kafka.process.pid, settings, "e2e-latency")
    rendered = latency_table(settings, results)
    print(rendered)
    if not args.no_record:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        section = [f"\n## End-to-end latency, {stamp}\n",
                   f"- command: `{command}` (from the repo root, with `.venv/bin/python`)",
                   f"- machine: {machine_description()}; shared with other work (load average "
                   f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after)",
                   f"- Apache Kafka {KAFKA_VERSION} (single KRaft node, -Xmx512m) and minikafka, one after the other",
                   f"- {LOAD_DESCRIPTION}", "", rendered, ""]
        append_history("\n".join(section))
        append_results(latency_results(settings, results, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())

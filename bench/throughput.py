"""Produce/consume throughput of minikafka vs. Apache Kafka, measured side by side with Kafka's own tools.

    .venv/bin/python -m bench.throughput [--quick] [--only apache|minikafka] [--scale F] [--compression none,lz4]
        [--warm-up-records N] [--rounds N [--baseline-src OTHER_CHECKOUT/src]] [--latency SECONDS] [--no-record]

The load generator is the same for both brokers: org.apache.kafka.tools.ProducerPerformance and
ConsumerPerformance from the Apache Kafka jars (bench/kafka_jars.py). Matrix: record sizes 1024 and 100 bytes,
1 and 8 partitions, acks=1 and acks=all (times each `--compression` codec). Before measuring, each broker gets the
same warm-up (produce and consume `--warm-up-records` of every record size and codec of the matrix) so Kafka's JIT
is warm. Next to MB/s each operation reports the broker's CPU-seconds per GB: utime+stime of the broker process
and all its descendants (minikafka's cleaner workers; Kafka's JVM) from /proc (bench/proc_cpu.py), read before
and after the operation, divided by the payload moved (records x record bytes / 1e9).

With `--rounds 1` (the default) minikafka runs every case, then Apache Kafka does, one broker at a time; a single
run of a case varies a lot on the shared machine. `--rounds N` (N > 1, bench/throughput_rounds.py) starts both
brokers once and, per round and case, runs each operation on both back to back (on a fresh topic each; which broker
goes first alternates by round), then reports medians and the median of the per-round minikafka / Kafka ratios.
`--latency SECONDS` adds the end-to-end latency case of bench/e2e_latency.py (1,000 msg/s of 200 B) on each broker,
once, after the throughput cases. Results are printed as tables; the figures are appended to
bench/results/results.jsonl and the tables to bench/results/HISTORY.md (unless --no-record).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.e2e_latency import (
    LOAD_DESCRIPTION,
    LatencyResult,
    LatencySettings,
    latency_results,
    latency_table,
    measure_latency,
)
from bench.machine import machine_description
from bench.proc_cpu import ProcessTreeCpu, cpu_seconds_per_gb
from bench.results_log import HISTORY_MD, BenchResult, append_history, append_results, result
from tests.apache_kafka import ApacheKafka, free_port, metadata_broker_count
from tests.kafka_jars import KAFKA_VERSION, REPO_ROOT, ensure_kafka_jars, find_main_class, java_command

BENCHMARKS_MD = HISTORY_MD  # the Markdown write-ups; the figures go to bench/results/results.jsonl
TOOL_HEAP = "512m"


@dataclass(frozen=True)
class Case:
    record_bytes: int
    partitions: int
    acks: str
    num_records: int
    compression: str = "none"

    @property
    def label(self) -> str:
        codec = "" if self.compression == "none" else f", {self.compression}"
        return f"{self.record_bytes} B, {self.partitions} part, acks={self.acks}{codec}"

    @property
    def payload_bytes(self) -> int:
        return self.num_records * self.record_bytes


@dataclass(frozen=True)
class Measurement:
    records_per_s: float
    mb_per_s: float
    cpu_s_per_gb: float = float("nan")  # broker CPU-seconds per 10^9 payload bytes moved (NaN: not measured)

    @staticmethod
    def missing() -> Measurement:
        return Measurement(float("nan"), float("nan"))


def matrix(quick: bool, scale: float, compressions: tuple[str, ...] = ("none",)) -> list[Case]:
    counts = {1024: int(100_000 * scale), 100: int(400_000 * scale)}
    if quick:
        combos = [(1024, 1, "1"), (1024, 8, "all"), (100, 1, "all")]
        return [Case(size, parts, acks, counts[size] // 2, codec)
                for codec in compressions for size, parts, acks in combos]
    return [
        Case(size, parts, acks, counts[size], codec)
        for codec in compressions for size in (1024, 100) for parts in (1, 8) for acks in ("1", "all")
    ]


_PRODUCER_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")


def run_producer_perf(lib_dir: Path, bootstrap: str, topic: str, case: Case,
                      client_config: Path | None = None) -> Measurement:
    """`client_config`: a properties file for the client (security.protocol, SASL, SSL), `--command-config`."""
    main = find_main_class(lib_dir, "org.apache.kafka.tools.ProducerPerformance")
    args = ["--topic", topic, "--num-records", str(case.num_records), "--record-size", str(case.record_bytes),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={case.acks}",
            f"compression.type={case.compression}"]
    if client_config is not None:
        args += ["--command-config", str(client_config)]
    done = subprocess.run(java_command(lib_dir, main, args, heap=TOOL_HEAP), capture_output=True, text=True,
                          timeout=600)
    matches = _PRODUCER_SUMMARY.findall(done.stdout)
    if done.returncode != 0 or not matches or int(matches[-1][0]) != case.num_records:
        print(f"  ProducerPerformance failed ({done.returncode}): {(done.stdout + done.stderr)[-600:]}",
              file=sys.stderr)
        return Measurement.missing()
    _, records_per_s, mb_per_s = matches[-1]
    return Measurement(float(records_per_s), float(mb_per_s))


def run_consumer_perf(lib_dir: Path, bootstrap: str, topic: str, case: Case,
                      client_config: Path | None = None) -> Measurement:
    """Consume the topic from the start; fetch.MB.sec / fetch.nMsg.sec exclude the group join time."""
    main = find_main_class(lib_dir, "org.apache.kafka.tools.ConsumerPerformance")
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(case.num_records),
            "--timeout", "30000", "--group", f"perf-{topic}"]
    if client_config is not None:
        args += ["--command-config", str(client_config)]
    done = subprocess.run(java_command(lib_dir, main, args, heap=TOOL_HEAP), capture_output=True, text=True,
                          timeout=600)
    rows = [line.split(",") for line in done.stdout.splitlines() if line.count(",") >= 9 and line[:1].isdigit()]
    if done.returncode != 0 or not rows or int(rows[-1][4].strip()) < case.num_records:
        print(f"  ConsumerPerformance failed ({done.returncode}): {(done.stdout + done.stderr)[-600:]}",
              file=sys.stderr)
        return Measurement.missing()
    row = [field.strip() for field in rows[-1]]
    return Measurement(records_per_s=float(row[9]), mb_per_s=float(row[8]))


def run_assigned_consume(bootstrap: str, topic: str, case: Case) -> Measurement:
    """Consume with librdkafka (confluent-kafka), assign() from offset 0, no group: needs only Fetch."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(case.partitions)])
    received = 0
    first_s = 0.0
    deadline = time.monotonic() + 120
    try:
        while received < case.num_records and time.monotonic() < deadline:
            batch = consumer.consume(10_000, timeout=1.0)
            if batch and not first_s:
                first_s = time.monotonic()
            received += sum(1 for message in batch if message.error() is None)
    finally:
        consumer.close()
    elapsed_s = time.monotonic() - first_s if first_s else 0.0
    if received < case.num_records or elapsed_s <= 0:
        print(f"  assigned consume got {received}/{case.num_records}", file=sys.stderr)
        return Measurement.missing()
    return Measurement(received / elapsed_s, received * case.record_bytes / elapsed_s / 2**20)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # test extra; only the benchmark needs it

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    time.sleep(0.5)  # let the leader settle before the first produce


def delete_topic(bootstrap: str, topic: str) -> None:
    """Free a measured topic's disk space once a benchmark is done with it."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected client cancels its futures
    admin.delete_topics([topic])[topic].result(timeout=30)


@contextmanager
def minikafka_broker(work_dir: Path) -> Iterator[str]:
    """`minikafka serve` in a subprocess (its own process group) on a free loopback port; yields its bootstrap."""
    with minikafka_server(work_dir) as (bootstrap, _pid):
        yield bootstrap


@contextmanager
def minikafka_server(work_dir: Path, source: Path | None = None,
                     overrides: Sequence[str] = ()) -> Iterator[tuple[str, int]]:
    """`minikafka serve` in a subprocess (its own process group) on a free loopback port; yields (bootstrap, pid).
    `source`: another checkout's `src` directory to run instead of this one (same interpreter and packages);
    `overrides`: more `key=value` broker settings."""
    port = free_port()
    script = REPO_ROOT / ".venv" / "bin" / "minikafka"
    base = [str(script)] if script.exists() and source is None else [sys.executable, "-m", "minikafka.broker"]
    env = None if source is None else {**os.environ, "PYTHONPATH": str(source)}
    settings = [f"listeners=PLAINTEXT://127.0.0.1:{port}", f"log.dirs={work_dir / 'data'}",
                "minikafka.metrics.port=0", "group.initial.rebalance.delay.ms=0",  # as bench/apache_kafka.py
                *overrides]
    command = [*base, "serve", *[arg for item in settings for arg in ("--override", item)]]
    with open(work_dir / "minikafka.log", "ab") as log:
        process = subprocess.Popen(command, cwd=REPO_ROOT if source is None else source, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                tail = (work_dir / "minikafka.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"minikafka exited with {process.returncode}:\n{tail}")
            try:
                if metadata_broker_count("127.0.0.1", port) >= 1:
                    break
            except (OSError, ConnectionError, ValueError):
                if time.monotonic() > deadline:
                    raise RuntimeError("minikafka did not answer Metadata within 30 s") from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}", process.pid
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


OPS = ("produce", "consume (group)", "consume (assign)")
Results = dict[str, dict[Case, tuple[Measurement, ...]]]
IDLE_SECONDS = 5.0


def with_broker_cpu(pid: int, case: Case, run: Callable[[], Measurement]) -> Measurement:
    """`run()`'s measurement with the broker tree's CPU-s per GB of `case`'s payload over the same window."""
    with ProcessTreeCpu(pid) as cpu:
        measured = run()
    if measured.mb_per_s != measured.mb_per_s:
        return measured
    return replace(measured, cpu_s_per_gb=cpu_seconds_per_gb(cpu.seconds, case.payload_bytes))


def warm_up(bootstrap: str, lib_dir: Path, cases: list[Case], records: int) -> None:
    """Produce and consume `records` of every (record size, codec) of `cases`: the same warm-up for both brokers, so
    Kafka's JIT has compiled its produce and fetch paths before anything is measured."""
    shapes = sorted({(case.record_bytes, case.compression) for case in cases})
    for index, (record_bytes, codec) in enumerate(shapes):
        topic = f"bench-warm-up-{index}"
        create_topic(bootstrap, topic, 1)
        case = Case(record_bytes, 1, "1", records, codec)
        run_producer_perf(lib_dir, bootstrap, topic, case)
        run_consumer_perf(lib_dir, bootstrap, topic, case)


def idle_cpu_percent(pid: int, seconds: float = IDLE_SECONDS) -> float:
    """The broker tree's CPU use with no client load (background threads, timers), in % of one core."""
    with ProcessTreeCpu(pid) as cpu:
        time.sleep(seconds)
    return 100.0 * cpu.seconds / seconds


def case_topic(index: int, case: Case) -> str:
    return f"bench-{index}-{case.record_bytes}b-{case.partitions}p-acks{case.acks}-{case.compression}"


def operations(lib_dir: Path, bootstrap: str, topic: str, case: Case) -> tuple[Callable[[], Measurement], ...]:
    """The operations of OPS, in that order, on `topic` (already created) of one broker."""
    return (partial(run_producer_perf, lib_dir, bootstrap, topic, case),
            partial(run_consumer_perf, lib_dir, bootstrap, topic, case),
            partial(run_assigned_consume, bootstrap, topic, case))


def measure(name: str, bootstrap: str, pid: int, lib_dir: Path, cases: list[Case],
            warm_up_records: int = 50_000) -> dict[Case, tuple[Measurement, ...]]:
    """Every case on one broker (`pid`: its process, for CPU): produce, consume (group), consume (assign)."""
    results: dict[Case, tuple[Measurement, ...]] = {}
    print(f"[{name}] warm-up: {warm_up_records} records per record size and codec", flush=True)
    warm_up(bootstrap, lib_dir, cases, warm_up_records)
    for index, case in enumerate(cases):
        topic = case_topic(index, case)
        print(f"[{name}] {case.label}, {case.num_records} records", flush=True)
        create_topic(bootstrap, topic, case.partitions)
        produced, consumed, assigned = [with_broker_cpu(pid, case, run)
                                        for run in operations(lib_dir, bootstrap, topic, case)]
        print(f"  produce {produced.mb_per_s:.1f} MB/s {produced.cpu_s_per_gb:.2f} CPU-s/GB, "
              f"consume {consumed.mb_per_s:.1f} MB/s {consumed.cpu_s_per_gb:.2f} CPU-s/GB (group), "
              f"{assigned.mb_per_s:.1f} MB/s {assigned.cpu_s_per_gb:.2f} CPU-s/GB (assign)", flush=True)
        results[case] = (produced, consumed, assigned)
    return results


def _fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:,.{digits}f}"


def _ratio(ours: float, theirs: float) -> str:
    return "n/a" if ours != ours or theirs != theirs or theirs == 0 else f"{ours / theirs:.2f}x"


def table(results: Results, cases: list[Case]) -> str:
    """ratio = minikafka MB/s / Kafka's; CPU ratio = minikafka CPU-s/GB / Kafka's (the issue's goal: <= 0.8x)."""
    lines = ["| case | op | Apache Kafka MB/s | Apache rec/s | minikafka MB/s | minikafka rec/s | ratio "
             "| Apache CPU-s/GB | minikafka CPU-s/GB | CPU ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    missing = tuple(Measurement.missing() for _ in OPS)
    for case in cases:
        apache = results.get("apache", {}).get(case, missing)
        ours = results.get("minikafka", {}).get(case, missing)
        for slot, op in enumerate(OPS):
            a, m = apache[slot], ours[slot]
            lines.append(f"| {case.label} | {op} | {_fmt(a.mb_per_s)} | {_fmt(a.records_per_s, 0)} | "
                         f"{_fmt(m.mb_per_s)} | {_fmt(m.records_per_s, 0)} | {_ratio(m.mb_per_s, a.mb_per_s)} | "
                         f"{_fmt(a.cpu_s_per_gb, 2)} | {_fmt(m.cpu_s_per_gb, 2)} | "
                         f"{_ratio(m.cpu_s_per_gb, a.cpu_s_per_gb)} |")
    return "\n".join(lines)


def measure_broker(name: str, bootstrap: str, pid: int, lib_dir: Path, cases: list[Case], args: argparse.Namespace,
                   results: Results, latencies: dict[str, LatencyResult], notes: list[str]) -> None:
    """Throughput cases (unless `--latency-only`), the broker's idle CPU, then the latency case if asked for."""
    if not args.latency_only:
        results[name] = measure(name, bootstrap, pid, lib_dir, cases, args.warm_up_records)
    after_throughput(name, bootstrap, pid, args, latencies, notes)


def after_throughput(name: str, bootstrap: str, pid: int, args: argparse.Namespace,
                     latencies: dict[str, LatencyResult], notes: list[str]) -> None:
    """The broker's idle CPU (a note), then the latency case if `--latency` asks for it."""
    notes.append(f"{name} idle CPU over {IDLE_SECONDS:g} s after the throughput cases: "
                 f"{idle_cpu_percent(pid):.1f}% of a core (counted in its CPU-s/GB: every window includes the "
                 "client JVM's start-up)")
    if args.latency:
        print(f"[{name}] end-to-end latency, {args.latency:g} s", flush=True)
        latencies[name] = measure_latency(bootstrap, pid, LatencySettings(seconds=args.latency), "bench-e2e-latency")


def measure_in_turn(work: Path, lib_dir: Path, cases: list[Case], args: argparse.Namespace, results: Results,
                    latencies: dict[str, LatencyResult], notes: list[str]) -> None:
    """`--rounds 1`: minikafka started, measured and stopped, then Apache Kafka (or only the one of `--only`)."""
    if args.only in (None, "minikafka"):
        (work / "mk").mkdir()
        try:
            with minikafka_server(work / "mk") as (bootstrap, pid):
                measure_broker("minikafka", bootstrap, pid, lib_dir, cases, args, results, latencies, notes)
        except RuntimeError as exc:
            notes.append(f"minikafka not measured: {str(exc).splitlines()[0]}")
            print(f"minikafka could not be measured: {exc}", file=sys.stderr)
    if args.only in (None, "apache"):
        with ApacheKafka(work / "apache", lib_dir=lib_dir) as kafka:
            assert kafka.process is not None
            measure_broker("apache", kafka.bootstrap, kafka.process.pid, lib_dir, cases, args, results, latencies,
                           notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 cases at half the records")
    parser.add_argument("--only", choices=["apache", "minikafka"], default=None)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the record counts")
    parser.add_argument("--compression", default="none",
                        help="comma-separated producer codecs (none,lz4,...); the matrix runs once per codec")
    parser.add_argument("--warm-up-records", type=int, default=50_000,
                        help="records produced and consumed per record size and codec before measuring")
    parser.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                        help="also run the end-to-end latency case (1,000 msg/s of 200 B) for SECONDS per broker")
    parser.add_argument("--latency-only", action="store_true", help="only the latency case (needs --latency)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="N > 1: both brokers running at once, every case on both back to back per round; "
                        "medians and paired ratios (bench/throughput_rounds.py)")
    parser.add_argument("--baseline-src", type=Path, default=None, metavar="SRC",
                        help="with --rounds N > 1: also run another checkout's minikafka (its src/ directory, e.g. "
                        "a `git worktree add --detach` of main) as broker `baseline` in every round, and add a "
                        "table of this checkout against it (paired ratios)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    if args.baseline_src is not None and (args.rounds < 2 or not (args.baseline_src / "minikafka").is_dir()):
        parser.error("--baseline-src needs --rounds N > 1 and a directory holding the minikafka package")
    if args.latency_only and not args.latency:
        parser.error("--latency-only needs --latency SECONDS")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.rounds > 1 and args.latency_only:
        parser.error("--rounds N > 1 repeats the throughput cases; --latency-only runs none")
    given = list(argv or sys.argv[1:])
    # the baseline's path is this machine's: the records name it BASE/src (the notes give its commit)
    given = ["BASE/src" if before == "--baseline-src" else
             "--baseline-src=BASE/src" if arg.startswith("--baseline-src=") else arg
             for before, arg in zip(["", *given][:len(given)], given, strict=True)]
    command = "python -m bench.throughput " + " ".join(shlex.quote(arg) for arg in given)
    cases = [] if args.latency_only else matrix(args.quick, args.scale, tuple(args.compression.split(",")))
    lib_dir = ensure_kafka_jars()
    results: Results = {}
    latencies: dict[str, LatencyResult] = {}
    notes: list[str] = [f"load average {os.getloadavg()[0]:.1f} at the start (the 2 cores are shared)"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-") as work:
        if args.rounds > 1:
            # it imports this module
            from bench.throughput_rounds import baseline_table, measure_rounds, rounds_results, rounds_tables

            round_results = measure_rounds(Path(work), lib_dir, cases, args, latencies, notes)
            rendered = rounds_tables(round_results, cases)
            if args.baseline_src is not None:
                rendered += "\n\n" + baseline_table(round_results, cases)
            figures = rounds_results(round_results, cases, command)
        else:
            measure_in_turn(Path(work), lib_dir, cases, args, results, latencies, notes)
            rendered = "" if args.latency_only else table(results, cases)
            figures = throughput_results(results, cases, command)
    elapsed_s = time.monotonic() - started
    notes.append(f"load average {os.getloadavg()[0]:.1f} at the end")
    if latencies:
        rendered = (rendered + "\n\n" if rendered else "") + latency_table(LatencySettings(seconds=args.latency),
                                                                          latencies)
    print(rendered)
    print("\n".join(f"note: {note}" for note in notes))
    if not args.no_record:
        record(command, rendered, notes, elapsed_s, with_latency=bool(latencies), rounds=args.rounds)
        if latencies:
            figures += latency_results(LatencySettings(seconds=args.latency), latencies, command)
        append_results(figures)
    return 0


def case_results(case: Case, op: str, apache: Measurement, ours: Measurement, command: str,
                 mb_ratio: float | None = None, cpu_ratio: float | None = None) -> list[BenchResult]:
    """MB/s and CPU-s/GB of one case and operation against Kafka's (NaN figures are left out)."""
    figures = []
    for metric, mine, theirs, ratio, unit in (
            (f"{op} MB/s, {case.label}", ours.mb_per_s, apache.mb_per_s, mb_ratio, "MB/s"),
            (f"{op} CPU-s/GB, {case.label}", ours.cpu_s_per_gb, apache.cpu_s_per_gb, cpu_ratio, "CPU-s/GB")):
        if mine != mine:
            continue
        figures.append(result("broker-cpu-throughput", metric, mine, unit, None if theirs != theirs else theirs,
                              None if ratio is None or ratio != ratio else ratio, command=command))
    return figures


def throughput_results(results: Results, cases: list[Case], command: str) -> list[BenchResult]:
    """Every measured case and operation of a one-round run, for bench/results/results.jsonl."""
    missing = tuple(Measurement.missing() for _ in OPS)
    figures = []
    for case in cases:
        apache = results.get("apache", {}).get(case, missing)
        ours = results.get("minikafka", {}).get(case, missing)
        for slot, op in enumerate(OPS):
            figures += case_results(case, op, apache[slot], ours[slot], command)
    return figures


def record(command: str, rendered: str, notes: list[str], elapsed_s: float, with_latency: bool = False,
           rounds: int = 1) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = [
        f"\n## {stamp}\n",
        f"- command: `{command.strip()}` (from the repo root, with `.venv/bin/python`)",
        f"- machine: {machine_description()}",
        f"- Apache Kafka {KAFKA_VERSION} (single KRaft node, -Xmx512m); load generator: Kafka's "
        "ProducerPerformance; consume (group) = ConsumerPerformance fetch MB/s (group join excluded); "
        "consume (assign) = confluent-kafka assign() from offset 0, no group; CPU-s/GB = broker process tree's "
        "utime+stime (/proc) over the operation / (records x record bytes / 1e9), after the same warm-up on both",
        *([f"- {rounds} interleaved rounds with both brokers running (a fresh topic per case, broker and round; "
           "which broker goes first alternates by round): MB/s and CPU-s/GB are medians over the rounds, ratio and "
           "CPU ratio the medians of each round's own minikafka / Kafka ratio"] if rounds > 1 else []),
        *([f"- latency {LOAD_DESCRIPTION}"] if with_latency else []),
        f"- wall time: {elapsed_s:.0f} s",
        *[f"- note: {note}" for note in notes],
        "",
        rendered,
        "",
    ]
    append_history("\n".join(section))


HEADER = """# Benchmarks

Produce and consume throughput of minikafka against Apache Kafka, measured side by side in one run by
`bench/throughput.py` with the same load generators for both: Kafka's own ProducerPerformance and
ConsumerPerformance from the official jars, plus a group-less confluent-kafka assign() consumer (minikafka has
no group coordinator yet). ratio = minikafka MB/s / Apache Kafka MB/s. Issue 2 target: >= 0.5x for 1 KiB records;
project goal >= 1x. Each run is appended below, newest last; the machine is shared, so compare ratios
within one run rather than absolute numbers across runs.
"""


if __name__ == "__main__":
    sys.exit(main())

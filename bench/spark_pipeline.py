"""Spark on minikafka vs. Apache Kafka: a batch read of a whole topic and `minikafka snapshot`, side by side.

    .venv/bin/python -m bench.spark_pipeline [--quick] [--records 5000000] [--keys 500000] [--value-bytes 100]
        [--tombstones 0.05] [--partitions 4] [--reads 5] [--snapshot-runs 3] [--only minikafka|apache]
        [--skip-read] [--skip-snapshot] [--source-option kafka.max.poll.records=100000] [--profile-broker out.pstats]

Issue 9 ("Speed"). One run starts both brokers (minikafka as `python -m minikafka.broker serve` through
`minikafka.testing.MiniKafka`, Apache Kafka 4.3.1 as one KRaft node from its jars through `tests.apache_kafka`)
and produces the same records to both: `--records` records over `--keys` keys (every key once, in order, then
keys drawn uniformly at random with a fixed seed; `--tombstones` of the random ones are tombstones), each key always
in the partition `key index % partitions`, so both topics hold the same records at the same offsets. Producer:
confluent-kafka, acks=all, linger.ms=50, batch.size=1 MB, no compression (`--compression`).

One SparkSession (`build_spark_session("local[2]")`, spark.driver.memory=4g, the full JIT: no fast_start) then
measures, with the two brokers running side by side (only one is read at a time):

1. batch read: `spark.read.format("kafka")` of the whole topic (the options of `minikafka snapshot`: read_committed,
   headers, earliest to latest) aggregated to `count(*), sum(length(key)), sum(length(value))`, which makes the
   source fetch and decode every record. Warm-up first: one read of a small topic per broker (JIT of Spark's read
   path), then one untimed read of the whole topic per broker (shown as "first read": Kafka's JVM warms up here),
   then `--reads` timed reads alternating between the brokers. MiB/s = key+value bytes / wall time of the query
   (planning and offset listing included); the headline is the median, the best is shown too.
2. snapshot: `run_snapshot` (availableNow) from an empty table over the whole topic, `--snapshot-runs` times per
   broker (a new table each time, the brokers alternating), after warm-up snapshots (not counted: one of a small
   topic on each broker, then one of the whole topic on the first broker, as the first full-size job in the JVM
   is much slower). Wall time of `run_snapshot` (median); each table is checked afterwards (not timed): one row
   per key whose latest record is not a tombstone.

Also shown: the CPU seconds the broker process and the Spark JVM used per read (/proc), and the record batches on
disk. The defaults are the issue's "big snapshot" size (5M records over 500k keys), on both brokers;
`--only minikafka` measures minikafka alone; `--quick` is a smoke run (100k records over 10k keys, 3 reads, 1
snapshot). `--source-option` passes a Kafka source option to the reads and snapshots (e.g.
`kafka.max.poll.records`: the connector's consumer asks ListOffsets twice per poll). `--profile-broker PATH` runs
minikafka under cProfile (slower: for finding where its time goes, not for the ratios). Results are printed as
markdown tables; the figures are appended to bench/results/results.jsonl (unless --no-record).
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.machine import machine_description
from bench.results_log import BenchResult, append_results, result
from minikafka.testing import MiniKafka
from tests.apache_kafka import ApacheKafka
from tests.kafka_jars import KAFKA_VERSION, REPO_ROOT, ensure_kafka_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TOPIC = "spark-bench"
WARM_UP_TOPIC = "spark-bench-warm-up"
WARM_UP_RECORDS = 20_000
BROKERS = ("minikafka", "apache")
SEED = 9


@dataclass(frozen=True)
class DataSet:
    """The records to produce: key index and tombstone flag per record, in produce order."""

    records: int
    keys: int
    value_bytes: int
    tombstone_fraction: float
    partitions: int
    seed: int = SEED

    def plan(self) -> tuple[array[int], bytearray]:
        rng = random.Random(self.seed)
        first = min(self.records, self.keys)
        key_index = array("i", range(first))
        tombstone = bytearray(first)
        rest = self.records - first
        key_index.extend(rng.randrange(self.keys) for _ in range(rest))
        tombstone.extend(rng.random() < self.tombstone_fraction for _ in range(rest))
        return key_index, tombstone

    @staticmethod
    def key(index: int) -> bytes:
        return b"key-%08d" % index

    def expected(self, key_index: array[int], tombstone: bytearray) -> tuple[int, int, list[int]]:
        """(live keys after the last record of each key, key+value bytes of all records, end offset per partition)."""
        last_is_tombstone: dict[int, int] = {}
        for index, dead in zip(key_index, tombstone):
            last_is_tombstone[index] = dead
        live = sum(1 for dead in last_is_tombstone.values() if not dead)
        tombstones = sum(tombstone)
        payload = len(key_index) * len(self.key(0)) + (len(key_index) - tombstones) * self.value_bytes
        per_key = Counter(key_index)
        ends = [sum(count for index, count in per_key.items() if index % self.partitions == partition)
                for partition in range(self.partitions)]
        return live, payload, ends


def produce(bootstrap: str, topic: str, data: DataSet, key_index: array[int], tombstone: bytearray,
            compression: str, expected_ends: list[int]) -> float:
    """Create `topic` and produce the data set to it; returns the seconds it took. Checks the end offsets."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, data.partitions, 1)])[topic].result(60)
    time.sleep(0.5)  # let the leader settle before the first produce
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.kbytes": 512 * 1024, "queue.buffering.max.messages": 2_000_000,
                         "compression.type": compression})
    keys = [data.key(index) for index in range(data.keys)]
    filler = b"x" * data.value_bytes
    partitions = data.partitions
    started = time.perf_counter()
    send = producer.produce
    for number, (index, dead) in enumerate(zip(key_index, tombstone)):
        value = None if dead else (b"%012d" % number + filler)[:data.value_bytes]
        while True:
            try:
                send(topic, value=value, key=keys[index], partition=index % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(600) != 0:
        raise RuntimeError(f"{bootstrap}: records left unsent after 600 s")
    elapsed_s = time.perf_counter() - started
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-bench-check"})
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[1]
                for p in range(partitions)]
    finally:
        consumer.close()
    if ends != expected_ends:
        raise RuntimeError(f"{bootstrap}: end offsets {ends}, expected {expected_ends} (produce errors?)")
    return elapsed_s


def log_bytes(root: Path, topic: str) -> tuple[int, int]:
    """(bytes, record batches) of the topic's log segments under `root`, read from the batch headers."""
    total = batches = 0
    for path in root.glob(f"{topic}-*/*.log"):
        size = path.stat().st_size
        total += size
        with open(path, "rb") as log:
            position = 0
            while position + 12 <= size:
                log.seek(position + 8)
                position += 12 + int.from_bytes(log.read(4), "big")
                batches += 1
    return total, batches


def source_options(bootstrap: str, topic: str, extra: dict[str, str]) -> dict[str, str]:
    """What `minikafka snapshot` reads with (plus `--source-option`s), to the end of the topic."""
    from minikafka.pipeline.kafka_source import kafka_source_options

    return {**kafka_source_options(bootstrap, topic, kafka_options=extra), "endingOffsets": "latest"}


def process_cpu_s(pid: int | None) -> float:
    """User+system CPU seconds `pid` has used (Linux /proc), NaN if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spark_jvm_pid(spark: SparkSession) -> int | None:
    try:
        return int(spark.sparkContext._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]
    except Exception:  # a remote or unusual gateway: the CPU columns show n/a
        return None


@dataclass(frozen=True)
class ReadResult:
    seconds: float
    records: int
    payload_bytes: int
    #: CPU seconds the broker process and the Spark JVM used during the read
    broker_cpu_s: float = float("nan")
    spark_cpu_s: float = float("nan")


def batch_read(spark: SparkSession, bootstrap: str, topic: str, extra: dict[str, str],
               broker_pid: int | None = None, spark_pid: int | None = None) -> ReadResult:
    """One full read of the topic through the connector, every record decoded (count and byte sums)."""
    cpu_before = process_cpu_s(broker_pid), process_cpu_s(spark_pid)
    started = time.perf_counter()
    frame = spark.read.format("kafka").options(**source_options(bootstrap, topic, extra)).load()
    row = frame.selectExpr("count(*) AS n", "coalesce(sum(length(key)), 0) AS k",
                           "coalesce(sum(length(value)), 0) AS v").collect()[0]
    elapsed_s = time.perf_counter() - started
    cpu_after = process_cpu_s(broker_pid), process_cpu_s(spark_pid)
    return ReadResult(elapsed_s, int(row["n"]), int(row["k"]) + int(row["v"]), cpu_after[0] - cpu_before[0],
                      cpu_after[1] - cpu_before[1])


@dataclass(frozen=True)
class SnapshotRun:
    seconds: float
    rows_read: int
    batches: int
    table_rows: int


def snapshot_once(spark: SparkSession, bootstrap: str, topic: str, table_path: Path,
                  extra: dict[str, str]) -> SnapshotRun:
    from minikafka.pipeline.snapshot import run_snapshot

    started = time.perf_counter()
    result = run_snapshot(spark, bootstrap, topic, table_path, kafka_options=extra)
    elapsed_s = time.perf_counter() - started
    table_rows = int(spark.read.format("delta").load(str(table_path)).count())
    return SnapshotRun(elapsed_s, result.rows_read, len(result.batches), table_rows)


@dataclass
class BrokerRun:
    """What one broker measured."""

    name: str
    bootstrap: str
    log_dir: Path
    pid: int | None = None
    produce_s: float = float("nan")
    log_bytes: int = 0
    batches: int = 0
    first_read: ReadResult | None = None
    reads: list[ReadResult] = field(default_factory=list)
    snapshots: list[SnapshotRun] = field(default_factory=list)

    def read_mib_per_s(self, pick: Callable[[list[float]], float]) -> float:
        if not self.reads:
            return float("nan")
        return pick([r.payload_bytes / r.seconds / 2**20 for r in self.reads])

    def snapshot_s(self) -> float:
        return statistics.median(s.seconds for s in self.snapshots) if self.snapshots else float("nan")


class ProfiledMiniKafka(MiniKafka):
    """minikafka under cProfile (`python -m cProfile -o PATH -m minikafka.broker serve ...`); the profile is written
    when the broker exits after SIGTERM."""

    def __init__(self, profile_path: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.profile_path = profile_path

    def command(self) -> list[str]:
        command = super().command()
        assert command[1:3] == ["-m", "minikafka.broker"], command
        return [command[0], "-m", "cProfile", "-o", str(self.profile_path.absolute()), *command[1:]]


@contextmanager
def start_minikafka(work: Path, profile: Path | None) -> Iterator[BrokerRun]:
    data_dir = work / "minikafka" / "data"
    kafka = (ProfiledMiniKafka(profile, data_dir=data_dir, start_timeout_s=60) if profile is not None
             else MiniKafka(data_dir=data_dir, start_timeout_s=60))
    kafka.start()
    try:
        yield BrokerRun("minikafka", kafka.bootstrap_servers, data_dir, kafka.pid)
    finally:
        kafka.stop(timeout_s=60)


@contextmanager
def start_apache(work: Path) -> Iterator[BrokerRun]:
    with ApacheKafka(work / "apache", heap="1g", lib_dir=ensure_kafka_jars()) as kafka:
        yield BrokerRun("apache", kafka.bootstrap, kafka.log_dir,
                        kafka.process.pid if kafka.process is not None else None)


def build_session(driver_memory: str) -> SparkSession:
    from minikafka.pipeline.session import build_spark_session
    from minikafka.pipeline.spark_jars import ensure_spark_jars

    jars = ensure_spark_jars(REPO_ROOT / ".cache")
    return build_spark_session("local[2]", app_name="minikafka-bench-spark", jars=jars,
                               conf={"spark.driver.memory": driver_memory})


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def measure_reads(spark: SparkSession, runs: list[BrokerRun], reads: int, expected_records: int,
                  expected_bytes: int, extra: dict[str, str]) -> None:
    def check(run: BrokerRun, result: ReadResult) -> ReadResult:
        if result.records != expected_records or result.payload_bytes != expected_bytes:
            raise RuntimeError(f"{run.name}: read {result.records} records / {result.payload_bytes} B, expected "
                               f"{expected_records} / {expected_bytes}")
        return result

    for run in runs:  # JIT of Spark's read path (and of the brokers' Fetch), on the small topic
        batch_read(spark, run.bootstrap, WARM_UP_TOPIC, extra)
    spark_pid = spark_jvm_pid(spark)
    for run in runs:
        run.first_read = check(run, batch_read(spark, run.bootstrap, TOPIC, extra, run.pid, spark_pid))
        print(f"  [{run.name}] first (warm-up) read {run.first_read.seconds:.2f} s", flush=True)
    for number in range(reads):
        order = runs if number % 2 == 0 else runs[::-1]
        for run in order:
            result = check(run, batch_read(spark, run.bootstrap, TOPIC, extra, run.pid, spark_pid))
            run.reads.append(result)
            print(f"  [{run.name}] read {number + 1}: {result.seconds:.2f} s, "
                  f"{result.payload_bytes / result.seconds / 2**20:.1f} MiB/s, CPU: broker "
                  f"{result.broker_cpu_s:.1f} s, Spark {result.spark_cpu_s:.1f} s (load {load_average()})", flush=True)


def measure_snapshots(spark: SparkSession, runs: list[BrokerRun], work: Path, repeat: int,
                      expected_rows: int, expected_live: int, warm_up_live: int, extra: dict[str, str]) -> None:
    for run in runs:
        warm = snapshot_once(spark, run.bootstrap, WARM_UP_TOPIC, work / "tables" / f"warm-up-{run.name}",
                             extra)
        if warm.table_rows != warm_up_live:
            raise RuntimeError(f"{run.name}: warm-up table has {warm.table_rows} rows, expected {warm_up_live}")
        print(f"  [{run.name}] warm-up snapshot ({WARM_UP_RECORDS} records) {warm.seconds:.2f} s", flush=True)
    # The first full-size job in a JVM is much slower (heap growth, JIT, code generation for the larger plans): one
    # untimed snapshot of the whole topic first, or the first broker's first timed run would pay for it.
    warm = snapshot_once(spark, runs[0].bootstrap, TOPIC, work / "tables" / "warm-up-full", extra)
    print(f"  [{runs[0].name}] full-size warm-up snapshot (not counted) {warm.seconds:.2f} s", flush=True)
    for number in range(repeat):
        order = runs if number % 2 == 0 else runs[::-1]
        for run in order:
            result = snapshot_once(spark, run.bootstrap, TOPIC, work / "tables" / f"{run.name}-{number}", extra)
            if result.rows_read != expected_rows or result.table_rows != expected_live:
                raise RuntimeError(f"{run.name}: snapshot read {result.rows_read} records into {result.table_rows} "
                                   f"rows, expected {expected_rows} / {expected_live}")
            run.snapshots.append(result)
            print(f"  [{run.name}] snapshot {number + 1}: {result.seconds:.2f} s, {result.batches} micro-batch(es), "
                  f"{result.table_rows} rows (load {load_average()})", flush=True)


def _fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:,.{digits}f}"


def _ratio(ours: float, theirs: float, higher_is_better: bool = True) -> str:
    if ours != ours or theirs != theirs or ours == 0 or theirs == 0:
        return "n/a"
    return f"{ours / theirs:.2f}x" if higher_is_better else f"{theirs / ours:.2f}x"


def tables(runs: dict[str, BrokerRun], data: DataSet, payload_bytes: int) -> str:
    missing = BrokerRun("-", "", Path())
    mini, apache = runs.get("minikafka", missing), runs.get("apache", missing)
    mib = payload_bytes / 2**20
    lines = [
        f"Topic: {data.records:,} records over {data.keys:,} keys, {data.partitions} partitions, {data.value_bytes} B "
        f"values, {mib:,.1f} MiB of keys+values; on disk: minikafka {mini.log_bytes / 2**20:,.1f} MiB in "
        f"{mini.batches:,} batches, Apache Kafka {apache.log_bytes / 2**20:,.1f} MiB in {apache.batches:,} batches.",
        "",
        "| measure | minikafka | Apache Kafka | ratio (minikafka / Apache; > 1 = minikafka faster) |",
        "|---|---:|---:|---:|",
    ]
    if mini.reads or apache.reads:
        def first(run: BrokerRun) -> float:
            return run.first_read.seconds if run.first_read else float("nan")

        median = [r.read_mib_per_s(statistics.median) for r in (mini, apache)]
        best = [r.read_mib_per_s(max) for r in (mini, apache)]
        seconds = [statistics.median(x.seconds for x in r.reads) if r.reads else float("nan") for r in (mini, apache)]
        lines += [
            f"| batch read, MiB/s, median of {max(len(mini.reads), len(apache.reads))} | {_fmt(median[0])} | "
            f"{_fmt(median[1])} | {_ratio(median[0], median[1])} |",
            f"| batch read, MiB/s, best | {_fmt(best[0])} | {_fmt(best[1])} | {_ratio(best[0], best[1])} |",
            f"| batch read, s, median | {_fmt(seconds[0], 2)} | {_fmt(seconds[1], 2)} | "
            f"{_ratio(seconds[0], seconds[1], higher_is_better=False)} |",
            f"| batch read, records/s, median | {_fmt(data.records / seconds[0], 0)} | "
            f"{_fmt(data.records / seconds[1], 0)} | {_ratio(seconds[0], seconds[1], higher_is_better=False)} |",
            f"| first (warm-up) read, s | {_fmt(first(mini), 2)} | {_fmt(first(apache), 2)} | "
            f"{_ratio(first(mini), first(apache), higher_is_better=False)} |",
        ]
        for label, attribute in (("broker", "broker_cpu_s"), ("Spark JVM", "spark_cpu_s")):
            cpu = [statistics.median(getattr(x, attribute) for x in r.reads) if r.reads else float("nan")
                   for r in (mini, apache)]
            lines.append(f"| {label} CPU s per read, median | {_fmt(cpu[0], 2)} | {_fmt(cpu[1], 2)} | "
                         f"{_ratio(cpu[0], cpu[1], higher_is_better=False)} |")
    if mini.snapshots or apache.snapshots:
        snap = [mini.snapshot_s(), apache.snapshot_s()]
        count = max(len(mini.snapshots), len(apache.snapshots))
        label = "snapshot from scratch, wall s" + (f", median of {count}" if count > 1 else "")
        lines.append(f"| {label} | {_fmt(snap[0], 2)} | {_fmt(snap[1], 2)} | "
                     f"{_ratio(snap[0], snap[1], higher_is_better=False)} |")
        lines.append(f"| snapshot, records/s | {_fmt(data.records / snap[0], 0)} | {_fmt(data.records / snap[1], 0)} "
                     f"| {_ratio(snap[0], snap[1], higher_is_better=False)} |")
    lines.append(f"| produce (confluent-kafka, not a goal), s | {_fmt(mini.produce_s, 1)} | "
                 f"{_fmt(apache.produce_s, 1)} | {_ratio(mini.produce_s, apache.produce_s, higher_is_better=False)} |")
    return "\n".join(lines)


def spark_results(runs: dict[str, BrokerRun], data: DataSet, command: str) -> list[BenchResult]:
    """Batch-read MiB/s and snapshot speed of minikafka against Kafka's, for bench/results/results.jsonl."""
    mini, apache = runs["minikafka"], runs.get("apache")
    shape = f"{data.records:,} records, {data.partitions} partitions"
    figures = []
    if mini.reads:
        theirs = apache.read_mib_per_s(statistics.median) if apache and apache.reads else None
        figures.append(result("spark-pipeline", f"Spark batch read MB/s ({shape}, median of {len(mini.reads)})",
                              mini.read_mib_per_s(statistics.median), "MiB/s", theirs, command=command))
    if mini.snapshots:
        theirs = apache.snapshot_s() if apache and apache.snapshots else None
        figures.append(result("spark-pipeline", "minikafka snapshot from scratch (speed: Kafka s / minikafka s)",
                              mini.snapshot_s(), "s", theirs, theirs / mini.snapshot_s() if theirs else None,
                              command=command, note=shape))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 100k records over 10k keys, 3 reads, 1 snapshot")
    parser.add_argument("--records", type=int, default=None, help="records in the topic (default 5,000,000)")
    parser.add_argument("--keys", type=int, default=None, help="distinct keys (default 500,000)")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--tombstones", type=float, default=0.05, help="fraction of the random records that are "
                        "tombstones")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="none", help="producer compression.type")
    parser.add_argument("--reads", type=int, default=None, help="timed batch reads per broker (default 5)")
    parser.add_argument("--snapshot-runs", type=int, default=None, help="snapshots from scratch per broker (default 3)")
    parser.add_argument("--only", choices=BROKERS, default=None)
    parser.add_argument("--skip-read", action="store_true")
    parser.add_argument("--skip-snapshot", action="store_true")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--profile-broker", type=Path, default=None, help="run minikafka under cProfile, write here")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra option of Spark's Kafka source for the reads and snapshots, e.g. "
                        "kafka.max.poll.records=100000 (repeatable)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args(argv)
    extra = dict(option.split("=", 1) for option in args.source_option)
    records = args.records or (100_000 if args.quick else 5_000_000)
    keys = args.keys or (10_000 if args.quick else 500_000)
    reads = args.reads if args.reads is not None else (3 if args.quick else 5)
    snapshot_runs = args.snapshot_runs if args.snapshot_runs is not None else (1 if args.quick else 3)
    data = DataSet(records, keys, args.value_bytes, args.tombstones, args.partitions)
    warm_up = DataSet(min(WARM_UP_RECORDS, records), min(keys, WARM_UP_RECORDS // 10), args.value_bytes,
                      args.tombstones, args.partitions, seed=SEED + 1)
    command = "python -m bench.spark_pipeline " + " ".join(shlex.quote(arg) for arg in (argv or sys.argv[1:]))
    names = [name for name in BROKERS if args.only in (None, name)]
    print(f"{command.strip()}\n{datetime.now(UTC):%Y-%m-%d %H:%M UTC}; {machine_description()}; Apache Kafka "
          f"{KAFKA_VERSION}; load average {load_average()}; extra source options: {extra or 'none'}", flush=True)

    started = time.monotonic()
    key_index, tombstone = data.plan()
    expected_live, payload_bytes, ends = data.expected(key_index, tombstone)
    warm_keys, warm_tombstones = warm_up.plan()
    warm_live, _, warm_ends = warm_up.expected(warm_keys, warm_tombstones)
    print(f"data: {records:,} records, {keys:,} keys, {sum(tombstone):,} tombstones, {expected_live:,} live keys "
          f"at the end, {payload_bytes / 2**20:,.1f} MiB of keys+values (plan {time.monotonic() - started:.1f} s)",
          flush=True)

    runs: dict[str, BrokerRun] = {}
    with tempfile.TemporaryDirectory(prefix="minikafka-spark-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        for name in names:
            run = stack.enter_context(start_minikafka(work, args.profile_broker) if name == "minikafka"
                                      else start_apache(work))
            run.produce_s = produce(run.bootstrap, TOPIC, data, key_index, tombstone, args.compression, ends)
            produce(run.bootstrap, WARM_UP_TOPIC, warm_up, warm_keys, warm_tombstones, args.compression, warm_ends)
            run.log_bytes, run.batches = log_bytes(run.log_dir, TOPIC)
            runs[name] = run
            print(f"[{name}] {run.bootstrap}: produced in {run.produce_s:.1f} s ({records / run.produce_s:,.0f} "
                  f"records/s), {run.log_bytes / 2**20:,.1f} MiB on disk in {run.batches:,} batches", flush=True)
        del key_index, tombstone
        subprocess.run(["sync"], check=False)
        session_started = time.monotonic()
        spark = build_session(args.driver_memory)
        print(f"SparkSession in {time.monotonic() - session_started:.1f} s (local[2], driver memory "
              f"{args.driver_memory}); load average {load_average()}", flush=True)
        try:
            ordered = [runs[name] for name in names]
            if not args.skip_read:
                print("batch reads:", flush=True)
                measure_reads(spark, ordered, reads, records, payload_bytes, extra)
            if not args.skip_snapshot:
                print("snapshots:", flush=True)
                measure_snapshots(spark, ordered, work, snapshot_runs, records, expected_live, warm_live, extra)
        finally:
            spark.stop()
    print()
    print(tables(runs, data, payload_bytes))
    if not args.no_record and "minikafka" in runs:
        append_results(spark_results(runs, data, command.strip()))
    print(f"\nwall time {time.monotonic() - started:.0f} s; load average at the end {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Produce latency while a compacted partition of ~210 MiB is cleaned, and the cleaning's time and CPU: minikafka
and Apache Kafka side by side (issue 36 item 4; bench.produce_latency is the minikafka-only figure of issue 4).

    .venv/bin/python -m bench.compaction_serving [--records 1000000] [--keys 100000] [--value-bytes 200]
        [--rate 2000] [--idle-seconds 10] [--rounds 1] [--only apache|minikafka] [--no-record]

Per broker, one at a time (the order turns each round; both run with log.cleaner.backoff.ms=500), first on a
warm-up topic of a quarter the records (not reported: Kafka's JIT compiles its cleaner), then on `busy`. Each
(one partition, cleanup.policy=compact, segment.bytes 16 MiB, min.cleanable.dirty.ratio=1.0 so nothing is
cleaned yet) is filled with `--records` records over `--keys` random keys (random `--value-bytes` values) by a
confluent-kafka producer. A probe producer (confluent-kafka, acks=1, linger.ms=0) then sends one `--value-bytes`
record to the delete-policy topic `latency` every 1/`--rate` s, open loop: a record's latency runs from the time it
was due to its delivery report (the probe's own lateness plus librdkafka's `Message.latency()`), so a stalled
broker is not hidden by a client that waits.
- idle: `--idle-seconds` of probe with nothing to clean;
- cleaning: `busy`'s min.cleanable.dirty.ratio goes to 0.01 (IncrementalAlterConfigs) with the probe running.
  The window runs from that request to the last change in the partition's directory (`.log` bytes, `.cleaned` or
  `.swap` files; polled every 20 ms), found once no `.cleaned`/`.swap` file is left and the `.log` bytes have been
  below their size at the start for 2 s. The broker's CPU (its process tree: minikafka's cleaner workers, Kafka's
  JVM) is read over the window.
Printed: per broker and round the cleaning seconds and CPU, the partition's MiB before and after, the probe's
p50/p99/p99.9/max idle and in the cleaning window; then minikafka / Kafka per round. Appended to bench/results/
(results.jsonl, HISTORY.md) unless `--no-record`.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.proc_cpu import ProcessTreeCpu
from bench.results_log import BenchResult, append_history, append_results, history_header, result, this_command
from bench.soak import percentile
from bench.throughput import create_topic, minikafka_server
from tests.apache_kafka import ApacheKafka
from tests.kafka_jars import ensure_kafka_jars

BUSY, WARM_UP, PROBE_TOPIC = "busy", "warm-up", "latency"
SEGMENT_BYTES = 16 * 2**20
BACKOFF_MS = 500
POLL_S = 0.02
SETTLED_S = 2.0
CLEANING_TIMEOUT_S = 600.0
BROKERS = ("apache", "minikafka")


@dataclass(frozen=True)
class Phase:
    """The probe's latencies (ms) of one phase."""

    latencies_ms: list[float]
    failed: int

    def percentile(self, fraction: float) -> float:
        return percentile(self.latencies_ms, fraction)


@dataclass(frozen=True)
class Run:
    """One broker's round: the probe idle and while cleaning, and the cleaning itself."""

    broker: str
    idle: Phase
    cleaning: Phase
    cleaning_s: float
    cleaning_cpu_s: float
    mib_before: float
    mib_after: float


class Probe:
    """An open-loop producer: one record due every 1/rate s; `samples` holds (due time, latency in s) per delivered
    record. Owns a confluent-kafka Producer that two threads of its own share, as librdkafka allows: one sends on
    schedule, the other serves delivery reports as they come (a report served at the sender's next turn would
    carry up to a period of the probe's own delay)."""

    def __init__(self, bootstrap: str, rate: float, value_bytes: int) -> None:
        from confluent_kafka import Producer

        self.rate, self.value = rate, os.urandom(value_bytes)
        self.samples: list[tuple[float, float]] = []
        self.failed = 0
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._send, name="probe-send", daemon=True),
                         threading.Thread(target=self._serve_reports, name="probe-reports", daemon=True)]

    def __enter__(self) -> Probe:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        self._producer.flush(30)

    def phase(self, start: float, end: float) -> Phase:
        """The latencies (ms) of the records due in [start, end]."""
        return Phase([latency * 1000 for due, latency in list(self.samples) if start <= due <= end], self.failed)

    def _send(self) -> None:
        started = time.monotonic()
        index = 0
        while not self._stop.is_set():
            due = started + index / self.rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            late = time.monotonic() - due
            self._producer.produce(PROBE_TOPIC, self.value, on_delivery=partial(self._delivered, due, late))
            index += 1

    def _serve_reports(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.1)

    def _delivered(self, due: float, late: float, error: object, message: object) -> None:
        if error is not None:
            self.failed += 1
        else:
            self.samples.append((due, late + message.latency()))  # type: ignore[attr-defined]


def fill(bootstrap: str, topic_name: str, records: int, keys: int, value_bytes: int, seed: int) -> None:
    """`records` records over `keys` random keys into `topic_name` (created compacted, not yet cleanable)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(topic_name, 1, 1, config={"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES),
                                         "min.cleanable.dirty.ratio": "1.0"})
    admin.create_topics([topic])[topic_name].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000, "acks": 1})
    generator = random.Random(seed)
    value = os.urandom(value_bytes)
    for index in range(records):
        key = b"key-%08d" % generator.randrange(keys)
        while True:
            try:
                producer.produce(topic_name, value, key)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"{topic_name} was not filled")


def make_cleanable(bootstrap: str, topic_name: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def partition_state(directory: Path) -> tuple[int, bool, frozenset[str]]:
    """(`.log` bytes, whether a `.cleaned`/`.swap` file is there, the file names) of a partition directory."""
    log_bytes, busy, names = 0, False, []
    for entry in os.scandir(directory):
        names.append(entry.name)
        if entry.name.endswith(".log"):
            try:
                log_bytes += entry.stat().st_size
            except FileNotFoundError:
                continue
        elif entry.name.endswith((".cleaned", ".swap")):
            busy = True
    return log_bytes, busy, frozenset(names)


def wait_for_cleaning(directory: Path, bytes_before: int) -> tuple[float, int]:
    """(monotonic time of the directory's last change, `.log` bytes after) once the cleaning has settled."""
    last_state = partition_state(directory)
    last_change = time.monotonic()
    deadline = last_change + CLEANING_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        state = partition_state(directory)
        now = time.monotonic()
        if (state[0], state[2]) != (last_state[0], last_state[2]):
            last_state, last_change = state, now
        log_bytes, busy, _ = state
        if not busy and log_bytes < bytes_before and now - last_change >= SETTLED_S:
            return last_change, log_bytes
    raise RuntimeError(f"{directory.name} was not cleaned within {CLEANING_TIMEOUT_S:.0f} s")


def measure(name: str, bootstrap: str, pid: int, log_dir: Path, args: argparse.Namespace) -> Run:
    """A warm-up round on a topic a quarter the size (so Kafka's JIT has compiled its produce path and its
    cleaner), then the measured one."""
    create_topic(bootstrap, PROBE_TOPIC, 1)
    measure_topic(name, bootstrap, pid, log_dir, WARM_UP, args.records // 4, args)
    return measure_topic(name, bootstrap, pid, log_dir, BUSY, args.records, args)


def measure_topic(name: str, bootstrap: str, pid: int, log_dir: Path, topic_name: str, records: int,
                  args: argparse.Namespace) -> Run:
    directory = log_dir / f"{topic_name}-0"
    fill(bootstrap, topic_name, records, args.keys, args.value_bytes, args.seed)
    bytes_before = partition_state(directory)[0]
    if bytes_before <= SEGMENT_BYTES:
        raise SystemExit(f"{topic_name}: {records:,} records make {bytes_before:,} bytes, not more than one segment "
                         f"of {SEGMENT_BYTES:,}: nothing would be cleanable (more --records or --value-bytes)")
    with Probe(bootstrap, args.rate, args.value_bytes) as probe:
        time.sleep(1.0)  # connected and past its first Metadata
        idle_start = time.monotonic()
        time.sleep(args.idle_seconds)
        idle_end = cleaning_start = time.monotonic()
        with ProcessTreeCpu(pid) as cpu:
            make_cleanable(bootstrap, topic_name)
            cleaning_end, bytes_after = wait_for_cleaning(directory, bytes_before)
    return Run(name, probe.phase(idle_start, idle_end), probe.phase(cleaning_start, cleaning_end),
               cleaning_end - cleaning_start, cpu.seconds, bytes_before / 2**20, bytes_after / 2**20)


def run_broker(name: str, work: Path, lib_dir: Path, args: argparse.Namespace) -> Run:
    with ExitStack() as stack:
        if name == "apache":
            kafka = stack.enter_context(ApacheKafka(work / "apache", lib_dir=lib_dir, properties={
                "log.cleaner.backoff.ms": str(BACKOFF_MS)}))
            assert kafka.process is not None
            return measure(name, kafka.bootstrap, kafka.process.pid, kafka.log_dir, args)
        (work / name).mkdir()
        bootstrap, pid = stack.enter_context(minikafka_server(work / name, overrides=[
            f"log.cleaner.backoff.ms={BACKOFF_MS}"]))
        return measure(name, bootstrap, pid, work / name / "data", args)


def _ms(value: float) -> str:
    return f"{value:.2f}"


def table(runs: list[Run]) -> str:
    lines = ["| broker | round | MiB before -> after | cleaning s | cleaning CPU s | idle p50 / p99 / p99.9 / max ms "
             "| cleaning p50 / p99 / p99.9 / max ms | probe records idle / cleaning | failed |",
             "|---|---:|---|---:|---:|---|---|---|---:|"]
    rounds: dict[str, int] = {}
    for run in runs:
        rounds[run.broker] = rounds.get(run.broker, 0) + 1
        idle, cleaning = run.idle, run.cleaning
        lines.append(
            f"| {run.broker} | {rounds[run.broker]} | {run.mib_before:.1f} -> {run.mib_after:.1f} | "
            f"{run.cleaning_s:.2f} | {run.cleaning_cpu_s:.2f} | "
            + " / ".join(_ms(idle.percentile(f)) for f in (0.5, 0.99, 0.999, 1.0)) + " | "
            + " / ".join(_ms(cleaning.percentile(f)) for f in (0.5, 0.99, 0.999, 1.0))
            + f" | {len(idle.latencies_ms):,} / {len(cleaning.latencies_ms):,} | {cleaning.failed} |")
    return "\n".join(lines)


#: the figures compared, minikafka / Kafka: label -> the figure of one run
MEASURES: dict[str, Callable[[Run], float]] = {
    "cleaning s": lambda run: run.cleaning_s,
    "cleaning CPU s": lambda run: run.cleaning_cpu_s,
    "idle p99": lambda run: run.idle.percentile(0.99),
    "cleaning p99": lambda run: run.cleaning.percentile(0.99),
}


def _by_broker(runs: list[Run]) -> tuple[list[Run], list[Run]]:
    """(minikafka's runs, Kafka's runs), each in round order."""
    return [run for run in runs if run.broker == "minikafka"], [run for run in runs if run.broker == "apache"]


def ratios(runs: list[Run]) -> dict[str, float]:
    """minikafka / Kafka for each of MEASURES, the median over rounds of each round's ratio."""
    ours, theirs = _by_broker(runs)
    return {label: statistics.median(measure_of(o) / measure_of(t) for o, t in zip(ours, theirs, strict=False))
            for label, measure_of in MEASURES.items() if ours and theirs}


def record(command: str, rendered: str, summary: str, runs: list[Run], args: argparse.Namespace,
           load_before: float) -> None:
    lines = history_header("Compaction while serving, side by side (issue 36)", command, load_before)
    lines += [f"- busy: {args.records:,} records over {args.keys:,} keys, {args.value_bytes} B values, one partition, "
              f"segment.bytes {SEGMENT_BYTES}; probe: {args.rate:g} records/s of {args.value_bytes} B, acks=1, "
              f"linger.ms=0, open loop; log.cleaner.backoff.ms={BACKOFF_MS} on both", "", rendered, "", summary]
    append_history("\n".join(lines))
    ours, theirs = _by_broker(runs)
    if not ours:
        return
    figures = ratios(runs)

    def figure(label: str, metric: str, unit: str) -> BenchResult:
        measure_of = MEASURES[label]
        return result("compaction-while-serving", metric, statistics.median(map(measure_of, ours)), unit,
                      statistics.median(map(measure_of, theirs)) if theirs else None, figures.get(label),
                      command=command)

    append_results([figure("cleaning p99", f"produce p99 while cleaning, {args.rate:g} records/s", "ms"),
                    figure("cleaning s", f"cleaning time, {ours[0].mib_before:.0f} MiB partition", "s")])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction_serving", description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=200)
    parser.add_argument("--rate", type=float, default=2000.0, help="probe records per second")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", choices=BROKERS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    lib_dir = ensure_kafka_jars()
    names = [name for name in BROKERS if args.only in (None, name)]
    runs: list[Run] = []
    for round_index in range(args.rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            with tempfile.TemporaryDirectory(prefix="compaction-serving-") as work:
                print(f"round {round_index + 1}/{args.rounds}: {name}", flush=True)
                runs.append(run_broker(name, Path(work), lib_dir, args))
                print(table(runs[-1:]).splitlines()[-1], flush=True)
    rendered = table(runs)
    summary = "minikafka / Kafka (median of the rounds' ratios): " + (", ".join(
        f"{label} {value:.2f}x" for label, value in ratios(runs).items()) or "n/a, one broker only")
    print(rendered)
    print(summary)
    if not args.no_record:
        record(this_command() if argv is None else "python -m bench.compaction_serving " + " ".join(argv),
               rendered, summary, runs, args, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`append_results()`: every benchmark run's figures, one JSON object a line, in `bench/results/results.jsonl`.

Each line is one measured figure: `goal` (a stable id from `GOALS`), `metric` (what was measured, with its case),
`value` and `unit` (minikafka's figure), `kafka_value` (Apache Kafka's in the same run, or null), `ratio` (as the
goal reads it, e.g. minikafka MB/s / Kafka MB/s; null when there is nothing to compare with), `target`, `command`,
`machine`, `timestamp` (ISO 8601, UTC) and an optional `note`. Appending needs no parsing of what is there, and a
file of lines survives two runs appending at once. `python -m bench.plot` draws one plot per goal from it.

The scripts' Markdown write-ups go to `bench/results/HISTORY.md` (`append_history`); BENCHMARKS.md is curated by
hand. Not thread-safe: one benchmark process appends at a time per call.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.machine import machine_description

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "results.jsonl"
HISTORY_MD = RESULTS_DIR / "HISTORY.md"

#: goal id -> (title as BENCHMARKS.md names it, target)
GOALS: dict[str, tuple[str, str]] = {
    "produce-throughput-1k": ("produce throughput, 1 KiB records (issue 2)", ">= 0.5x Apache Kafka (goal 1x)"),
    "consume-throughput-1k": ("consume throughput, 1 KiB records (issue 2)", ">= 0.5x Apache Kafka (goal 1x)"),
    "throughput-100b": ("produce / consume, 100 B records (issue 2)", "1x Apache Kafka"),
    "cleaner-throughput": ("cleaner throughput per thread (issue 4)", ">= 0.5x Apache Kafka (goal 1x)"),
    "offset-map-density": ("offset-map density (issue 4)", ">= 1.5x Apache Kafka's keys per MiB"),
    "cleaner-crash-safety": ("cleaner crash safety (issue 4)", "no loss, no resurrection"),
    "produce-p99-while-cleaning": ("produce p99 while cleaning (issue 4)", "event loop stays responsive"),
    "startup-time": ("start-up time", "<= 1 s median and <= 0.2x Apache Kafka"),
    "kill-loop": ("kill -9 at scale (reliability)", "no acknowledged record, committed offset or transaction lost"),
    "soak": ("soak, 30 min mixed load (reliability)", "RSS and open files plateau"),
    "exact-compaction": ("exact vs. ordinary compaction (issue 10)", "one exact round; a key count several times "
                         "the map"),
    "exact-kill-loop": ("kill -9 during an exact round (issue 10)", "nothing acknowledged lost, nothing superseded "
                        "reappears"),
    "spark-pipeline": ("Spark on minikafka: batch read and snapshot (issue 9)", ">= 1x Apache Kafka"),
    "storage-fault-matrices": ("storage fault matrices (reliability)", "zero inconsistencies"),
    "connection-memory": ("connections and request memory (reliability)", "bounded"),
    "sasl-ssl-cost": ("SASL_SSL cost vs PLAINTEXT (issue 11)", "ratio no worse than Apache Kafka's"),
    "client-quota": ("1 MiB/s producer quota over 20 s (issue 12)", "within 10%"),
    "broker-cpu-throughput": ("broker CPU-s/GB and throughput, side by side (issue 14)",
                              "CPU <= 0.8x, MB/s >= 1x Apache Kafka"),
    "e2e-latency": ("end-to-end latency, 1,000 msg/s of 200 B (issue 14)", "p99, p99.9 no worse than Apache Kafka"),
    "cleaner-shapes": ("cleaner records/s per thread by batch shape (issue 14)", ">= 1.2x Apache Kafka on every "
                       "shape"),
    "flush-latency": ("produce latency with log.flush.interval.ms=200 (issue 28)",
                      "p99.9 within 2x (or +10 ms) of no flushing; max < 50 ms"),
    "coordinator-load": ("Produce answered while loading 1M commits of __consumer_offsets (issue 28)",
                         "every Produce within 100 ms"),
    "index-memory": ("index memory, many segments (issue 28)", "<= 1.2x the index files' size"),
    "static-join": ("two static members joining a new group at delay 0 (issue 30)", "one rebalance, as on Kafka"),
    "share-throughput": ("share group, one partition, 1 KiB records, explicit ACCEPT (issue 23)",
                         ">= 1x Apache Kafka's records/s at <= 1x its broker CPU"),
    "share-kill-loop": ("share consumption under kill -9 (issue 23)", "nothing acknowledged delivered again"),
    "compaction-while-serving": ("compaction while serving, side by side (issue 36)",
                                 "produce p99 while cleaning and cleaning time no worse than Apache Kafka's"),
    "cluster-startup": ("MiniKafka(brokers=3) start-up (issue 39)", "<= 1.5x one broker's; Apache Kafka's 3 nodes "
                        "beside it"),
}


@dataclass(frozen=True)
class BenchResult:
    """One measured figure of one run (a line of results.jsonl)."""

    goal: str
    metric: str
    value: float
    unit: str
    kafka_value: float | None
    ratio: float | None
    target: str
    command: str
    machine: str
    timestamp: str
    note: str = ""


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def this_command() -> str:
    """How the running benchmark was started, as it would be typed from the repo root."""
    module = Path(sys.argv[0]).resolve()
    name = f"bench.{module.stem}" if module.parent == REPO_ROOT / "bench" else sys.argv[0]
    return shlex.join(["python", "-m", name, *sys.argv[1:]])


def result(goal: str, metric: str, value: float, unit: str, kafka_value: float | None = None,
           ratio: float | None = None, *, command: str | None = None, note: str = "",
           timestamp: str | None = None, machine: str | None = None) -> BenchResult:
    """A figure of this run; `ratio` defaults to value / kafka_value when both are there."""
    if goal not in GOALS:
        raise ValueError(f"unknown benchmark goal {goal!r}; add it to bench.results_log.GOALS")
    if ratio is None and kafka_value:
        ratio = value / kafka_value
    return BenchResult(goal, metric, float(value), unit, None if kafka_value is None else float(kafka_value),
                       None if ratio is None else round(float(ratio), 4), GOALS[goal][1],
                       command or this_command(), machine or machine_description(), timestamp or now_utc(), note)


def append_results(results: Iterable[BenchResult], path: Path = RESULTS_FILE) -> int:
    """Append each result as one JSON line; returns how many were written."""
    lines = [json.dumps(asdict(item), ensure_ascii=False) for item in results]
    if lines:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
    return len(lines)


def load_results(path: Path = RESULTS_FILE) -> list[BenchResult]:
    """Every result in the file, in file order; a line that does not parse names its line number."""
    if not path.exists():
        return []
    results = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            results.append(BenchResult(**json.loads(line)))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a benchmark result: {error}") from None
    return results


def history_header(title: str, command: str, load_before: float | None = None) -> list[str]:
    """The first lines of a HISTORY.md section: the title with the time, the command and the machine with its load
    (at start and at the end when `load_before` was taken at the start)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_now = os.getloadavg()[0]
    load = (f"load average {load_now:.1f}" if load_before is None
            else f"load average {load_before:.1f} at start, {load_now:.1f} at the end")
    return [f"\n## {title}, {stamp}\n", f"- command: `{command}` (from the repo root, with `.venv/bin/python`)",
            f"- machine: {machine_description()}; {load}"]


def append_history(section: str, path: Path = HISTORY_MD) -> None:
    """Append a run's Markdown write-up to the long history (BENCHMARKS.md holds the curated summary)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark history\n"
    path.write_text(text.rstrip("\n") + "\n\n" + section.strip("\n") + "\n", encoding="utf-8")

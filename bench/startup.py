"""Start-up time of minikafka vs. Apache Kafka (one KRaft node from the official jars), measured side by side.

    .venv/bin/python -m bench.startup [--runs 7] [--kafka-runs 5] [--only minikafka|apache] [--override K=V ...]

Two measures for each broker, medians over fresh data directories (every poll below is a Metadata v4 request
sent by `minikafka.testing.mini_kafka.metadata_broker_count` every 5 ms, for both brokers):

1. start -> Metadata: wall time in this process from `MiniKafka().start()` (spawns `python -m minikafka.broker
   serve`) until the broker answered Metadata. Apache Kafka: from `ApacheKafka.start()` (spawns the kafka.Kafka
   JVM) until Metadata lists a broker; `kafka-storage format` runs before and is not in that number (the
   conservative one, used for the ratio). It is reported on its own and added up as "incl. format".
2. `python -c` -> first acknowledged produce: a fresh `python -c` process (cwd: the repo) imports confluent_kafka,
   starts the broker exactly as in 1, produces one record (acks=all, to a new topic: auto-created) and waits for
   its delivery report. Timed from just before this process spawns the child to the delivery callback in the
   child (both read CLOCK_MONOTONIC, which is system-wide on Linux), so it covers interpreter start, imports,
   broker start, topic creation and the produce. Stopping the broker afterwards is not timed. For Apache Kafka
   the child imports bench.startup (a few ms more of Kafka's number) and its log dir is formatted beforehand.

minikafka runs twice: "as configured" (this environment; with PYTHONDONTWRITEBYTECODE=1, as on the project's
machine, MiniKafka's broker keeps its bytecode under the user's cache directory, testing/mini_kafka.py
`broker_environment`: the first start compiles minikafka from source, the next ones read the cache) and "with .pyc"
(PYTHONPYCACHEPREFIX pointing at a warmed cache, as after `pip install`, which compiles them).
Goals: with .pyc, median <= 0.5 s and <= 0.1x Apache Kafka's time (issue 36); as configured, <= 1 s and <= 0.2x
(the first start-up issue). Prints PASS/FAIL per measure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bench.machine import machine_description
from bench.results_log import BenchResult, append_results, result
from minikafka.testing.mini_kafka import MiniKafka
from tests.apache_kafka import ApacheKafka, KafkaHarnessError
from tests.kafka_jars import KAFKA_VERSION, REPO_ROOT, ensure_kafka_jars, find_main_class, java_command

POLL_INTERVAL_S = 0.005  # the same as MiniKafka's
#: (median seconds, ratio to Apache Kafka) per mode: with .pyc files (as after `pip install`) issue 36's goal; as
#: configured (minikafka compiled from source at every start when PYTHONDONTWRITEBYTECODE=1) the first start-up goal
GOALS = {True: (0.5, 0.1), False: (1.0, 0.2)}
CHILD_TIMEOUT_S = 180.0
TOPIC = "startup-bench"
PYCACHE_DIR = REPO_ROOT / ".cache" / "startup-pycache"

# The child of measure 2 for minikafka: what a test suite does. Prints one JSON line of CLOCK_MONOTONIC stamps.
MINIKAFKA_CHILD = """\
import json, sys, time
t_main = time.monotonic()
from confluent_kafka import Producer
from minikafka.testing import MiniKafka
t_imports = time.monotonic()
with MiniKafka(json.loads(sys.argv[1])) as kafka:
    t_ready = time.monotonic()
    acks = []
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
    producer.produce(sys.argv[2], b"value", key=b"key",
                     on_delivery=lambda err, msg: acks.append((None if err is None else str(err), time.monotonic())))
    producer.flush(60)
    error, t_ack = acks[0] if acks else ("no delivery report in 60 s", 0.0)
    print(json.dumps({"main": t_main, "imports": t_imports, "ready": t_ready, "ack": t_ack, "error": error}),
          flush=True)
"""

# The same for Apache Kafka; argv: work dir (formatted), port, controller port, lib dir, topic.
APACHE_CHILD = """\
import json, sys, time
t_main = time.monotonic()
from pathlib import Path
from confluent_kafka import Producer
from bench.startup import FineApacheKafka
t_imports = time.monotonic()
kafka = FineApacheKafka(Path(sys.argv[1]), int(sys.argv[2]), lib_dir=Path(sys.argv[4]))
kafka.controller_port = int(sys.argv[3])
with kafka:
    t_ready = time.monotonic()
    acks = []
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "all"})
    producer.produce(sys.argv[5], b"value", key=b"key",
                     on_delivery=lambda err, msg: acks.append((None if err is None else str(err), time.monotonic())))
    producer.flush(60)
    error, t_ack = acks[0] if acks else ("no delivery report in 60 s", 0.0)
    print(json.dumps({"main": t_main, "imports": t_imports, "ready": t_ready, "ack": t_ack, "error": error}),
          flush=True)
"""


class FineApacheKafka(ApacheKafka):
    """ApacheKafka that polls Metadata every 5 ms (ApacheKafka polls every 0.25 s), as MiniKafka does."""

    ready_poll_s = POLL_INTERVAL_S


def format_kafka(kafka: ApacheKafka, lib_dir: Path) -> float:
    """Write server.properties and run `kafka-storage format` as ApacheKafka.start() would; returns its seconds."""
    kafka.work_dir.mkdir(parents=True, exist_ok=True)
    config = kafka.work_dir / "server.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in kafka.server_properties().items()))
    tool = find_main_class(lib_dir, "kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool")
    cluster_id = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    command = java_command(lib_dir, tool, ["format", f"--cluster-id={cluster_id}", "-c", str(config)], heap="256m")
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise KafkaHarnessError(f"kafka-storage format failed:\n{done.stdout}\n{done.stderr}")
    return elapsed


@dataclass
class Series:
    """One measure's samples (seconds) and, per sample, named phases (seconds) for the breakdown."""

    label: str
    samples: list[float] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)

    def add(self, seconds: float, phases: dict[str, float] | None = None) -> None:
        self.samples.append(seconds)
        self.phases.append(phases or {})

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    def summary(self) -> str:
        if not self.samples:
            return f"{self.label:<50} (not measured)"
        text = (f"{self.label:<50} median {self.median:6.3f} s  (min {min(self.samples):.3f}, "
                f"max {max(self.samples):.3f}, n={len(self.samples)})")
        names = [name for name in self.phases[0] if all(name in p for p in self.phases)] if self.phases else []
        if names:
            parts = ", ".join(f"{name} {statistics.median(p[name] for p in self.phases):.3f}" for name in names)
            text += f"\n{'':<50} phases (medians): {parts}"
        return text


_LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ (.*)$")


def broker_log_phases(log_text: str, spawned_wall: float, ready_wall: float) -> dict[str, float]:
    """Phases of one minikafka start from its log's timestamps (ms resolution, wall clock): spawn -> logs loaded
    (interpreter, imports, config, KafkaServer(), log recovery), -> "minikafka started" (coordinators, listener,
    admin HTTP), -> Metadata answered to the poller."""
    stamps: dict[str, float] = {}
    for line in log_text.splitlines():
        match = _LOG_LINE.match(line)
        if match is None:
            continue
        wall = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        message = match.group(2)
        if message.startswith("Loaded ") and " logs from " in message:
            stamps.setdefault("loaded", wall)
        elif message.startswith("minikafka started"):
            stamps.setdefault("started", wall)
    if "loaded" not in stamps or "started" not in stamps:
        return {}
    return {
        "spawn->logs loaded": stamps["loaded"] - spawned_wall,
        "->listening": stamps["started"] - stamps["loaded"],
        "->Metadata answered": ready_wall - stamps["started"],
    }


def measure_minikafka_start(config: dict[str, str], runs: int, series: Series) -> None:
    for _ in range(runs):
        kafka = MiniKafka(config)
        spawned_wall = time.time()
        started = time.monotonic()
        kafka.start()
        elapsed = time.monotonic() - started
        ready_wall = time.time()
        time.sleep(0.05)  # let the "started" line reach the log file
        series.add(elapsed, broker_log_phases(kafka.read_log(), spawned_wall, ready_wall))
        kafka.stop()


def run_child(script: str, args: list[str], env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Spawn `python -c script args`; seconds from just before the spawn to the child's delivery report, and
    the phases from its stamps."""
    spawned = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO_ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        stdout, stderr = process.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    lines = [line for line in stdout.decode(errors="replace").splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"child exited with {process.returncode}:\n{stdout.decode(errors='replace')[-2000:]}"
                           f"\n{stderr.decode(errors='replace')[-2000:]}")
    stamps = json.loads(lines[-1])
    if stamps["error"] is not None:
        raise RuntimeError(f"the produce failed: {stamps['error']}")
    phases = {
        "interpreter": stamps["main"] - spawned,
        "imports": stamps["imports"] - stamps["main"],
        "broker start": stamps["ready"] - stamps["imports"],
        "produce (topic auto-create + ack)": stamps["ack"] - stamps["ready"],
    }
    return stamps["ack"] - spawned, phases


def measure_minikafka_produce(config: dict[str, str], runs: int, env: dict[str, str], series: Series) -> None:
    for index in range(runs):
        seconds, phases = run_child(MINIKAFKA_CHILD, [json.dumps(config), f"{TOPIC}-{index}"], env)
        series.add(seconds, phases)


def measure_apache(lib_dir: Path, runs: int, start: Series, fmt: Series, with_format: Series,
                   produce: Series) -> None:
    for index in range(runs):
        with tempfile.TemporaryDirectory(prefix="startup-apache-") as work:
            kafka = FineApacheKafka(Path(work), lib_dir=lib_dir)
            format_s = format_kafka(kafka, lib_dir)
            started = time.monotonic()
            try:
                kafka.start()
                elapsed = time.monotonic() - started
            finally:
                kafka.stop()
            start.add(elapsed)
            fmt.add(format_s)
            with_format.add(format_s + elapsed)
        with tempfile.TemporaryDirectory(prefix="startup-apache-") as work:
            kafka = FineApacheKafka(Path(work), lib_dir=lib_dir)
            format_kafka(kafka, lib_dir)
            args = [work, str(kafka.port), str(kafka.controller_port), str(lib_dir), f"{TOPIC}-{index}"]
            seconds, phases = run_child(APACHE_CHILD, args, dict(os.environ))
            produce.add(seconds, phases)
        print(f"  Apache Kafka run {index + 1}/{runs}: start {elapsed:.3f} s, format {format_s:.3f} s, "
              f"python -c -> ack {seconds:.3f} s", flush=True)


def bytecode_env(cached: bool) -> dict[str, str]:
    """The environment for minikafka's processes: as configured, or with a .pyc cache they may write to."""
    env = dict(os.environ)
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE_DIR)
    return env


def as_configured_label() -> str:
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        return "as configured: PYTHONDONTWRITEBYTECODE=1, the broker's bytecode in the user's cache (MiniKafka)"
    return "as configured"


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """os.environ replaced by `env` inside the block (MiniKafka's broker inherits this process's environment)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def verdict(ours: float, theirs: float, cached: bool) -> str:
    goal_s, goal_ratio = GOALS[cached]
    ratio = ours / theirs if theirs > 0 else float("nan")
    ok = ours <= goal_s and ratio <= goal_ratio
    return (f"ratio {ratio:.3f}x  [{'PASS' if ok else 'FAIL'}: median {ours:.3f} s "
            f"{'<=' if ours <= goal_s else '>'} {goal_s} s, ratio {'<=' if ratio <= goal_ratio else '>'} "
            f"{goal_ratio}x]")


def startup_results(minikafka: dict[bool, tuple[Series, Series]], apache_start: Series,
                    apache_produce: Series) -> list[BenchResult]:
    """The medians of every measured mode against Apache Kafka's, for bench/results/results.jsonl."""
    figures = []
    for cached, (start, produce) in minikafka.items():
        mode = " (with .pyc)" if cached else ""
        for metric, ours, theirs in (("start -> Metadata, median", start, apache_start),
                                     ("python -c -> first acknowledged produce, median", produce, apache_produce)):
            figures.append(result("startup-time", metric + mode, ours.median, "s",
                                  theirs.median if theirs.samples else None))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="minikafka runs per measure and mode (default 7)")
    parser.add_argument("--kafka-runs", type=int, default=5, help="Apache Kafka runs per measure (default 5)")
    parser.add_argument("--only", choices=["minikafka", "apache"], help="measure one broker only (no ratio)")
    parser.add_argument("--bytecode", choices=["both", "as-configured", "cached"], default="both",
                        help="minikafka with the environment as configured, with a warmed .pyc cache, or both")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a minikafka broker property for every minikafka run (experiments)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args(argv)
    config = dict(pair.split("=", 1) for pair in args.override)
    print(f"machine: {machine_description()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    wall_started = time.monotonic()

    modes = {"both": [False, True], "as-configured": [False], "cached": [True]}[args.bytecode]
    minikafka: dict[bool, tuple[Series, Series]] = {}
    if args.only != "apache":
        for cached in modes:
            name = "with .pyc" if cached else "as configured"
            env = bytecode_env(cached)
            if cached:  # warm the cache (untimed): one broker start and one child produce
                with environment(env):
                    measure_minikafka_start(config, 1, Series("warm-up"))
                measure_minikafka_produce(config, 1, env, Series("warm-up"))
            start = Series(f"minikafka start -> Metadata ({name})")
            produce = Series(f"minikafka python -c -> first ack ({name})")
            print(f"[minikafka, {as_configured_label() if not cached else 'with .pyc in ' + str(PYCACHE_DIR)}]",
                  flush=True)
            with environment(env):
                measure_minikafka_start(config, args.runs, start)
            measure_minikafka_produce(config, args.runs, env, produce)
            minikafka[cached] = (start, produce)
            print(start.summary())
            print(produce.summary(), flush=True)

    apache_start = Series("Apache Kafka start -> Metadata (format before)")
    apache_format = Series("Apache Kafka kafka-storage format")
    apache_with_format = Series("Apache Kafka format + start -> Metadata")
    apache_produce = Series("Apache Kafka python -c -> first ack")
    if args.only != "minikafka":
        print(f"[Apache Kafka {KAFKA_VERSION}, one KRaft node, -Xmx512m]", flush=True)
        measure_apache(ensure_kafka_jars(), args.kafka_runs, apache_start, apache_format, apache_with_format,
                       apache_produce)
        for series in (apache_start, apache_format, apache_with_format, apache_produce):
            print(series.summary())

    print()
    if minikafka and apache_start.samples:
        print(f"goals: with .pyc median <= {GOALS[True][0]} s and <= {GOALS[True][1]}x Apache Kafka, as configured "
              f"<= {GOALS[False][0]} s and <= {GOALS[False][1]}x (server start alone, format excluded: the "
              f"conservative denominator)")
        for cached, (start, produce) in minikafka.items():
            name = "with .pyc" if cached else "as configured"
            print(f"start -> Metadata, {name:<14} {start.median:.3f} s / {apache_start.median:.3f} s  "
                  f"{verdict(start.median, apache_start.median, cached)}")
            print(f"python -c -> ack,  {name:<14} {produce.median:.3f} s / {apache_produce.median:.3f} s  "
                  f"{verdict(produce.median, apache_produce.median, cached)}")
    if not args.no_record and minikafka:
        append_results(startup_results(minikafka, apache_start, apache_produce))
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"wall time {time.monotonic() - wall_started:.0f} s")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        print("note: the machine was loaded during the run; re-measure for stable numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())

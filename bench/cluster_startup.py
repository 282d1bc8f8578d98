"""Start-up of several brokers: `MiniKafka(brokers=3)` against `MiniKafka()` and a three-node Apache Kafka 4.3.1
KRaft cluster (tests/apache_kafka_cluster.py), side by side in one run.

    .venv/bin/python -m bench.cluster_startup [--runs 5] [--kafka-runs 2] [--brokers 3]

minikafka: wall time of `MiniKafka(brokers=N).start()` until every broker's port answers a Metadata listing all N
(one broker: `MiniKafka().start()`), fresh data directories, the one- and N-broker runs interleaved, with .pyc (as
after `pip install`); and the broker process's peak RSS (VmHWM) once started. Apache Kafka: from launching the N JVMs
(each formatted beforehand, not timed) until every node's Metadata lists all N brokers.
Goal (issue 39): N brokers start in at most 1.5x the time of one. Prints PASS/FAIL and the Kafka time beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.machine import machine_description
from bench.results_log import append_results, result
from bench.startup import bytecode_env, environment
from minikafka.testing.mini_kafka import LOOPBACK, MiniKafka, metadata_broker_count
from tests.apache_kafka_cluster import ApacheKafkaCluster
from tests.kafka_jars import KAFKA_VERSION, ensure_kafka_jars

GOAL_RATIO = 1.5
POLL_INTERVAL_S = 0.005


def start_minikafka(brokers: int) -> tuple[float, int]:
    """Seconds from `start()` until every broker answers Metadata listing all of them; the process's peak RSS (KiB)."""
    kafka = MiniKafka(brokers=brokers)
    started = time.monotonic()
    kafka.start()
    try:
        for address in kafka.bootstrap_servers.split(","):
            port = int(address.rsplit(":", 1)[1])
            while metadata_broker_count(LOOPBACK, port) < brokers:
                time.sleep(POLL_INTERVAL_S)
        elapsed = time.monotonic() - started
        assert kafka.process is not None
        status = Path(f"/proc/{kafka.process.pid}/status").read_text()
        peak_kib = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
    finally:
        kafka.stop()
    return elapsed, peak_kib


def start_apache(brokers: int) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-kafka-cluster-") as work_dir:
        cluster = ApacheKafkaCluster(Path(work_dir), brokers, lib_dir=ensure_kafka_jars())
        try:
            cluster.start()
            assert cluster.start_s is not None
            return cluster.start_s
        finally:
            cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="minikafka runs per broker count (default 5)")
    parser.add_argument("--kafka-runs", type=int, default=2, help="Apache Kafka cluster starts (default 2; 0: none)")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args(argv)
    print(machine_description(), flush=True)
    one: list[float] = []
    several: list[float] = []
    peaks: dict[int, list[int]] = {1: [], args.brokers: []}
    with environment(bytecode_env(cached=True)):
        start_minikafka(1)  # warms the .pyc cache; not counted
        for run in range(args.runs):
            for count, samples in ((1, one), (args.brokers, several)) if run % 2 == 0 else \
                    ((args.brokers, several), (1, one)):
                seconds, peak_kib = start_minikafka(count)
                samples.append(seconds)
                peaks[count].append(peak_kib)
            print(f"  run {run + 1}/{args.runs}: 1 broker {one[-1]:.3f} s, {args.brokers} brokers {several[-1]:.3f} s",
                  flush=True)
    kafka = [start_apache(args.brokers) for _ in range(args.kafka_runs)]
    for index, seconds in enumerate(kafka):
        print(f"  Apache Kafka {KAFKA_VERSION}, {args.brokers} nodes, start {index + 1}: {seconds:.3f} s", flush=True)
    one_s, several_s = statistics.median(one), statistics.median(several)
    ratio = several_s / one_s
    print(f"minikafka, 1 broker:  median {one_s:.3f} s, peak RSS {statistics.median(peaks[1]) / 1024:.1f} MiB")
    print(f"minikafka, {args.brokers} brokers: median {several_s:.3f} s, peak RSS "
          f"{statistics.median(peaks[args.brokers]) / 1024:.1f} MiB  ratio {ratio:.2f}x "
          f"[{'PASS' if ratio <= GOAL_RATIO else 'FAIL'}: {'<=' if ratio <= GOAL_RATIO else '>'} {GOAL_RATIO}x]")
    kafka_s = statistics.median(kafka) if kafka else None
    if kafka_s is not None:
        print(f"Apache Kafka {KAFKA_VERSION}, {args.brokers} nodes: median {kafka_s:.3f} s "
              f"({several_s / kafka_s:.3f}x of it)")
    if not args.no_record:
        append_results([result("cluster-startup", f"{args.brokers} brokers start -> Metadata, median", several_s, "s",
                               kafka_s),
                        result("cluster-startup", "1 broker start -> Metadata, median", one_s, "s", None)])
    return 0


if __name__ == "__main__":
    sys.exit(main())

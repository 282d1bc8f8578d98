"""The broker's own CPU from spawn to its first Metadata answer: this checkout against a baseline source tree, in
paired, interleaved runs (issue 36). Wall-clock ratios to Apache Kafka (bench/startup.py) move with the machine's
load; the CPU a start costs does much less.

    .venv/bin/python -m bench.startup_cpu --baseline-src BASE/src [--runs 16] [--metrics-port-off]

BASE is a checkout of the commit to compare with (`git worktree add --detach BASE <commit>`). Each run spawns
`python -m minikafka.broker serve` as `MiniKafka` does (a fresh data dir, free loopback ports, the metrics/admin port
on unless `--metrics-port-off`), with PYTHONPATH naming the tree and one warmed PYTHONPYCACHEPREFIX (".pyc"), and
sends a Metadata v4 request every 5 ms; at the first answer it reads the broker's user+sys CPU (/proc, all threads;
`bench.proc_cpu`) and the wall time since the spawn. The two trees alternate which goes first. Prints medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.proc_cpu import tree_cpu_seconds
from minikafka.testing.mini_kafka import LOOPBACK, free_port, metadata_broker_count

REPO_SRC = Path(__file__).resolve().parent.parent / "src"
POLL_INTERVAL_S = 0.005


def start_once(src: Path, pycache: Path, metrics_port_on: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one broker from spawn to its first Metadata answer."""
    root = Path(tempfile.mkdtemp(prefix="startup-cpu-"))
    port = free_port()
    metrics_port = free_port() if metrics_port_on else -1
    (root / "data").mkdir()
    command = [sys.executable, "-m", "minikafka.broker", "serve",
               "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT",
               "--override", f"listeners=PLAINTEXT://{LOOPBACK}:{port}", "--override", f"log.dirs={root / 'data'}",
               "--override", f"minikafka.metrics.port={metrics_port}"]
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        with open(root / "broker.log", "wb") as log:
            started = time.monotonic()
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       cwd=root / "data", env=env)
            try:
                while True:
                    if process.poll() is not None:
                        raise RuntimeError(f"the broker exited: {(root / 'broker.log').read_text()[-2000:]}")
                    try:
                        metadata_broker_count(LOOPBACK, port)
                        break
                    except (OSError, ConnectionError):
                        time.sleep(POLL_INTERVAL_S)
                wall_s = time.monotonic() - started
                cpu_s = tree_cpu_seconds(process.pid)
            finally:
                process.terminate()
                process.wait(30)
        return wall_s, cpu_s
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-src", type=Path, required=True, help="the baseline checkout's src directory")
    parser.add_argument("--runs", type=int, default=16, help="runs per tree (default 16)")
    parser.add_argument("--metrics-port-off", action="store_true", help="minikafka.metrics.port=-1")
    args = parser.parse_args(argv)
    trees = {"baseline": args.baseline_src.resolve(), "this": REPO_SRC}
    pycache = Path(tempfile.mkdtemp(prefix="startup-cpu-pycache-"))
    try:
        for src in trees.values():  # compiles the .pyc files
            start_once(src, pycache, not args.metrics_port_off)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for run in range(args.runs):
            for name in (list(trees) if run % 2 == 0 else list(reversed(trees))):
                samples[name].append(start_once(trees[name], pycache, not args.metrics_port_off))
    finally:
        shutil.rmtree(pycache, ignore_errors=True)
    print(f"load average at the end: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    for name, rows in samples.items():
        walls, cpus = [row[0] for row in rows], [row[1] for row in rows]
        print(f"{name:8} ({trees[name]}): spawn -> Metadata median {statistics.median(walls):.3f} s "
              f"(min {min(walls):.3f}), broker CPU median {statistics.median(cpus):.3f} s (min {min(cpus):.3f}), "
              f"n={len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

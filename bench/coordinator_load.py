"""Produce latency while a restarting broker loads a large `__consumer_offsets` (issue 28, item 2).

    .venv/bin/python -m bench.coordinator_load [--commits 1000000] [--rate 200] [--no-record]

Writes `--commits` offset commits (1,000 groups x 10 partitions, the rest repeats of those keys: one record per
commit, 1,000 per batch) into a one-partition `__consumer_offsets` and creates a topic `other`, with the storage
layer, as a broker would have left them; then starts a broker subprocess on that log dir. From the moment it listens,
one raw-socket client produces one 100 B record per request to `other` at `--rate` requests/s (open loop: latency
from each request's due time; service time: from its actual send), until the broker logs that the consumer groups are
loaded. Reports the load time and
the produce latency during it; the goal (issue 28): every Produce answered within 100 ms throughout the load.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path

from bench.produce_latency import LatencyProbe, Phase
from bench.results_log import HISTORY_MD, RESULTS_FILE, append_history, append_results, history_header, result
from minikafka.broker.groups.coordinator_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from minikafka.protocol.records import Record, build_batch
from minikafka.storage.clock import SystemClock
from minikafka.storage.log_manager import LogManager
from tests.broker_process import BrokerProcess

OFFSETS_TOPIC = "__consumer_offsets"
GROUPS = 1000
PARTITIONS_PER_GROUP = 10
RECORDS_PER_BATCH = 1000
_LOADED = re.compile(r"Loaded (\d+) consumer groups in (\d+) ms")


def write_commits(data_dir: Path, commits: int) -> float:
    """The log dir a broker with `commits` offset commits would leave; returns seconds taken."""
    started = time.monotonic()
    manager = LogManager(data_dir, {}, SystemClock())
    manager.startup()
    manager.create_topic(OFFSETS_TOPIC, 1, {"cleanup.policy": "compact", "segment.bytes": str(100 << 20),
                                           "compression.type": "producer"})
    manager.create_topic("other", 1, {})
    log = manager.get_log(OFFSETS_TOPIC, 0)
    assert log is not None
    now_ms = int(time.time() * 1000)
    keys = [encode_offset_commit_key(OffsetCommitKey(f"group-{g}", "orders", p))
            for g in range(GROUPS) for p in range(PARTITIONS_PER_GROUP)]
    for first in range(0, commits, RECORDS_PER_BATCH):
        records = [Record(i - first, now_ms, keys[i % len(keys)],
                          encode_offset_commit_value(OffsetCommitValue(i, -1, "", now_ms)))
                   for i in range(first, min(commits, first + RECORDS_PER_BATCH))]
        log.append_as_leader(build_batch(records, base_offset=0))
    manager.shutdown()
    return time.monotonic() - started


def measure(commits: int, rate: float) -> tuple[Phase, int, int, float]:
    with tempfile.TemporaryDirectory(prefix="coordinator-load-") as work:
        data_dir = Path(work) / "data"
        write_s = write_commits(data_dir, commits)
        print(f"wrote {commits:,} commits in {write_s:.1f} s", flush=True)
        broker = BrokerProcess(data_dir, {"log.cleaner.enable": "false", "offsets.topic.num.partitions": "1"})
        broker.start()
        try:
            probe = LatencyProbe(broker.bootstrap, rate, topic="other")
            loaded: list[tuple[int, int]] = []
            checks = 0

            def load_done() -> bool:
                nonlocal checks
                checks += 1
                if checks % 20 == 0:
                    found = _LOADED.search(broker.read_log())
                    if found:
                        loaded.append((int(found.group(1)), int(found.group(2))))
                return bool(loaded)

            phase = probe.run(Phase("during the load"), load_done)
            probe.close()
        finally:
            broker.stop()
        groups, load_ms = loaded[0]
        return phase, groups, load_ms, write_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, default=100.0, help="produce requests per second")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    phase, groups, load_ms, _ = measure(args.commits, args.rate)
    worst = max(range(len(phase.service_ms)), key=phase.service_ms.__getitem__)
    table = "\n".join([
        "| commits | groups loaded | load (broker log) | produce requests during it | p50 ms | p99 ms | max ms "
        "| service p99 ms | service max ms (request #) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {args.commits:,} | {groups:,} | {load_ms:,} ms | {len(phase.latencies_ms):,} | {phase.percentile(0.5):.2f} "
        f"| {phase.percentile(0.99):.2f} | {max(phase.latencies_ms):.2f} | {phase.percentile(0.99, service=True):.2f} "
        f"| {phase.service_ms[worst]:.2f} (#{worst + 1}) |",
    ])
    verdict = (f"max produce latency during the load {max(phase.latencies_ms):.1f} ms "
               f"({'under' if max(phase.latencies_ms) < 100 else 'NOT under'} 100 ms)")
    print(table)
    print(verdict)
    if not args.no_record:
        command = "python -m bench.coordinator_load " + shlex.join(argv if argv is not None else sys.argv[1:])
        section = [
            *history_header("Produce while a restarting broker loads __consumer_offsets (issue 28)", command.strip(),
                            load_before),
            f"- one-partition `__consumer_offsets` of {args.commits:,} commit records ({GROUPS:,} groups x "
            f"{PARTITIONS_PER_GROUP} partitions), cleaner off; Produce v9 acks=1 of one 100 B record to `other` at "
            f"{args.rate:g} requests/s open loop from the moment the broker listens until it logs the groups loaded",
            f"- verdict: {verdict}",
            "",
            table,
            "",
        ]
        append_history("\n".join(section))
        append_results([result("coordinator-load", "max Produce latency while loading "
                               f"{args.commits:,} commits", max(phase.latencies_ms), "ms", command=command.strip())])
        print(f"appended to {HISTORY_MD} and {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

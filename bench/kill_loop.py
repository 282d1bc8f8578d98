"""kill -9 at scale: producers, transactions, a consumer group and the cleaner, killed at random moments.

    .venv/bin/python -m bench.kill_loop [--kills 1000] [--max-minutes 60] [--seed 1] [--work-dir DIR]

One broker (`minikafka.testing.MiniKafka`) on one data dir; each cycle a child process (`bench.kill_loop_workload`,
forked from a forkserver) runs an idempotent producer (acks=all) on a plain topic (2 partitions) and on a
compacted topic (1 partition, 24 KiB segments, `min.cleanable.dirty.ratio=0.01`, `delete.retention.ms=500`, ~10%
tombstones), a transactional producer (commits ~70%, aborts the rest; each transaction also writes one key of the
compacted topic and commits a group offset), and a static group member committing its positions. After a random
0.3-2 s (seeded) the broker gets SIGKILL, then the client process; the broker restarts on the same data dir and,
before the next cycle starts, the check runs:

1. a transactional producer with the same `transactional.id` calls `init_transactions`, which completes or
   aborts whatever the kill left open;
2. every partition is read from offset 0 with one read_committed consumer (to its last stable offset), and the
   groups' committed offsets are fetched;
3. plain and transaction topics (delete policy): every record read at the previous check is still there with the
   same value (so every acknowledged record, once read, stays checked), every record acknowledged since is at its
   offset with its value, and no value appears twice (idempotence);
4. transactions: a transaction whose commit returned is visible whole, one whose abort returned (or that never
   reached commit) is invisible, one killed during its commit is all or nothing (the outcome is then fixed); the
   transactional group offset is the last committed transaction's; on the compacted topic a committed
   transaction's key counts as acknowledged and an aborted one's must not be visible;
5. compacted topic (`bench.crash_checks.CompactedLogModel`, shared with `bench.cleaner_crash`): per key versions
   increase with the offset, the latest acknowledged version (or a later one, or a later tombstone's absence) is
   there, nothing absent at the previous check reappears, and below the `cleaner-offset-checkpoint` each key
   appears at most once;
6. the group's committed offset per partition is >= the last one whose commit was acknowledged, <= the highest
   one sent, and <= the high watermark.

A violation prints the topic, partition, offset, expected and found, keeps the data dir as it was right after the
kill (`pre-restart`, a copy made each cycle) and after the check, and ends the run with exit code 1. Kills are
classified from the client events and the broker log: inside a cleaning round ("Beginning cleaning" without its
statistics block), inside a transaction (begun, no outcome yet), during `commit_transaction`, during a group commit.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.crash_checks import killed_inside_cleaning_round
from bench.kill_loop_checks import Checker, KillLoopModel, Phases
from bench.kill_loop_workload import (
    COMPACT_TOPIC,
    PLAIN_PARTITIONS,
    PLAIN_TOPIC,
    TXN_TOPIC,
    WorkloadParams,
    run_workload,
)
from bench.machine import machine_description
from bench.results_log import append_results, result
from minikafka.testing import BrokerStartError, MiniKafka

BROKER_CONFIG: dict[str, str | int] = {
    "log.cleaner.backoff.ms": 100,
    "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
    "offsets.topic.num.partitions": 1,
    "offsets.topic.segment.bytes": 64 * 1024,  # __consumer_offsets is compacted too: let the cleaner work on it
    "transaction.state.log.num.partitions": 1,
    "transaction.state.log.segment.bytes": 64 * 1024,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,
    "auto.create.topics.enable": "false",
    # Kafka's default of 60 s would never checkpoint the recovery point in a broker that lives ~2 s, so every
    # restart would re-validate every segment ever written and restarts would grow with the run.
    "log.flush.offset.checkpoint.interval.ms": 500,
}
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    PLAIN_TOPIC: (PLAIN_PARTITIONS, {"retention.ms": "-1", "segment.bytes": str(256 * 1024)}),
    TXN_TOPIC: (1, {"retention.ms": "-1", "segment.bytes": str(64 * 1024)}),
    COMPACT_TOPIC: (1, {"cleanup.policy": "compact", "segment.bytes": str(24 * 1024), "segment.ms": "1000",
                        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "500",
                        "min.compaction.lag.ms": "0"}),
}


class EventReader(threading.Thread):
    """Applies the workload's event lines to the model until the pipe closes (the child died)."""

    def __init__(self, conn: Connection, model: KillLoopModel) -> None:
        super().__init__(daemon=True)
        self.conn = conn
        self.model = model
        self.events = 0

    def run(self) -> None:
        while True:
            try:
                line = self.conn.recv_bytes().decode()
            except (EOFError, OSError):
                return
            self.events += 1
            self.model.apply(line)


def _create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config)
                                   for name, (partitions, config) in TOPICS.items()])
    for future in futures.values():
        future.result(30)


def _copy_data_dir(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)


@dataclass
class RunSettings:
    kills: int
    max_minutes: float
    seed: int
    work_dir: Path
    comp_keys: int
    plain_rate: float
    comp_rate: float
    min_cycle_s: float
    max_cycle_s: float
    snapshot: bool
    keep_going: bool
    progress_every: int


def run(settings: RunSettings) -> tuple[KillLoopModel, list[str], float]:
    rng = random.Random(settings.seed)
    data_dir = settings.work_dir / "data"
    pre_restart = settings.work_dir / "pre-restart"
    model = KillLoopModel(settings.comp_keys)
    checker = Checker(model, data_dir)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["confluent_kafka", "bench.kill_loop_workload"])
    broker = MiniKafka(BROKER_CONFIG, data_dir=data_dir)
    broker.start()
    _create_topics(broker.bootstrap_servers)
    started = time.monotonic()
    deadline = started + settings.max_minutes * 60
    violations: list[str] = []
    last_progress = started
    cycle_times: list[float] = []
    try:
        while model.counts.kills < settings.kills and time.monotonic() < deadline:
            cycle_started = time.monotonic()
            phase = Phases(model.counts.phase_s)
            cycle = model.counts.kills + 1
            model.start_cycle()
            log_offset = broker.log_path.stat().st_size
            params = WorkloadParams(broker.bootstrap_servers, rng.randrange(2**31), model.plain_next, model.comp_next,
                                    model.txn_next, settings.comp_keys, settings.plain_rate, settings.comp_rate, 0.7)
            receiver, sender = context.Pipe(duplex=False)
            worker = context.Process(target=run_workload, args=(params, sender), daemon=True)
            worker.start()
            sender.close()
            reader = EventReader(receiver, model)
            reader.start()
            phase("start the workload process")
            time.sleep(rng.uniform(settings.min_cycle_s, settings.max_cycle_s))
            phase("workload until the kill")
            broker.kill()
            worker.kill()
            worker.join(10)
            reader.join(10)
            receiver.close()
            phase("kill broker and workload")
            model.classify_kill()
            with open(broker.log_path, "rb") as log_file:
                log_file.seek(log_offset)
                log_text = log_file.read().decode(errors="replace")
            model.counts.kills_in_cleaning_round += killed_inside_cleaning_round(log_text)
            model.counts.cleaning_rounds_completed += log_text.count("cleaned log")
            if settings.snapshot:
                _copy_data_dir(data_dir, pre_restart)
            phase("copy the data dir")
            label = f"kill {cycle}"
            try:
                broker.start()
                phase("restart (recovery until Metadata answers)")
                failures = checker.check(broker.bootstrap_servers, label)
            except (BrokerStartError, TimeoutError, RuntimeError) as exc:
                failures = [f"{label}: restart or check failed: {exc}"]
            except Exception as exc:  # a client error during the check: report it with the data kept
                failures = [f"{label}: check raised {type(exc).__name__}: {exc}"]
            cycle_times.append(time.monotonic() - cycle_started)
            if failures:
                violations += failures
                _keep_failure(settings.work_dir, broker, cycle, failures)
                if not settings.keep_going:
                    break
                broker.start()
            now = time.monotonic()
            if cycle % settings.progress_every == 0 or now - last_progress > 60:
                last_progress = now
                _progress(model, violations, now - started, cycle_times)
    finally:
        try:
            broker.stop()
        except Exception as exc:
            print(f"broker stop failed: {exc}", flush=True)
    return model, violations, time.monotonic() - started


def _keep_failure(work_dir: Path, broker: MiniKafka, cycle: int, failures: list[str]) -> None:
    """Print the violations and keep the data dir as it was after the kill and as it is now (the broker is killed
    first, so the cleaner does not swap files under the copy)."""
    target = Path(tempfile.gettempdir()) / f"kill-loop-failure-{os.getpid()}-kill{cycle}"
    target.mkdir(parents=True, exist_ok=True)
    (target / "violations.txt").write_text("\n".join(failures) + "\n")
    print(f"VIOLATIONS at kill {cycle} (data kept in {target}):\n  " + "\n  ".join(failures[:50]), flush=True)
    broker.kill()
    if (work_dir / "pre-restart").exists():
        _copy_data_dir(work_dir / "pre-restart", target / "pre-restart")
    _copy_data_dir(broker.data_dir, target / "after-check")
    shutil.copy(broker.log_path, target / "broker.log")


def _progress(model: KillLoopModel, violations: list[str], elapsed_s: float, cycle_times: list[float]) -> None:
    c = model.counts
    recent = cycle_times[-50:]
    load = os.getloadavg()[0]
    print(f"[{elapsed_s:6.0f}s] kills {c.kills} (cleaning {c.kills_in_cleaning_round}, txn {c.kills_in_transaction}, "
          f"txn commit {c.kills_in_txn_commit}, group commit {c.kills_in_group_commit}); acked plain {c.plain_acked} "
          f"compacted {c.comp_acked} txn records {c.txn_records_acked}; group commits {c.group_commits_acked}; txns "
          f"committed {c.txn_committed + c.txn_in_doubt_committed} aborted {c.txn_aborted + c.txn_in_doubt_aborted}; "
          f"cycle {sum(recent) / max(1, len(recent)):.2f}s; load {load:.1f}; violations {len(violations)}", flush=True)


def _summary(model: KillLoopModel, violations: list[str], wall_s: float, settings: RunSettings) -> str:
    c = model.counts
    lines = [
        f"kills: {c.kills} (requested {settings.kills}, limit {settings.max_minutes:g} min, seed {settings.seed})",
        f"  inside a cleaning round: {c.kills_in_cleaning_round} (cleaning rounds completed between kills: "
        f"{c.cleaning_rounds_completed})",
        f"  inside a transaction: {c.kills_in_transaction}, of which during commit_transaction: "
        f"{c.kills_in_txn_commit}",
        f"  during a group offset commit: {c.kills_in_group_commit}",
        f"  before the cycle's first acknowledgement: {c.kills_before_first_ack}",
        f"records acknowledged: {c.plain_acked + c.comp_acked + c.txn_records_acked} (plain {c.plain_acked}, "
        f"compacted {c.comp_acked}, transactional {c.txn_records_acked})",
        f"group offset commits acknowledged: {c.group_commits_acked}",
        f"transactions committed: {c.txn_committed} (+{c.txn_in_doubt_committed} killed during the commit and "
        f"found committed), aborted: {c.txn_aborted} (+{c.txn_in_doubt_aborted} killed during the commit and found "
        f"aborted)",
        f"checks after restart: {c.checks}, records read by them: {c.records_read}",
        f"workload errors (reported, not violations): {dict(c.worker_errors) or 'none'}",
        f"violations: {len(violations)}",
        f"wall time: {wall_s:.0f} s ({wall_s / max(1, c.kills):.2f} s per kill)",
        f"machine: {machine_description()}",
        "time per phase (s per kill): " + ", ".join(f"{name} {total / max(1, c.kills):.3f}"
                                                     for name, total in c.phase_s.items()),
    ]
    return "\n".join(lines)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--max-minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, default=None, help="kept afterwards (default: a temporary dir)")
    parser.add_argument("--keys", type=int, default=200, help="key space of the idempotent compacted writes")
    parser.add_argument("--plain-rate", type=float, default=100.0, help="records/s to the plain topic")
    parser.add_argument("--compacted-rate", type=float, default=600.0, help="records/s to the compacted topic")
    parser.add_argument("--min-cycle", type=float, default=0.3, help="shortest time between start and kill (s)")
    parser.add_argument("--max-cycle", type=float, default=2.0, help="longest time between start and kill (s)")
    parser.add_argument("--no-snapshot", action="store_true", help="do not copy the data dir after each kill")
    parser.add_argument("--keep-going", action="store_true", help="continue after a violation")
    parser.add_argument("--progress-every", type=int, default=25)
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args()
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="minikafka-kill-loop-"))
    settings = RunSettings(args.kills, args.max_minutes, args.seed, work_dir, args.keys, args.plain_rate,
                           args.compacted_rate, args.min_cycle, args.max_cycle, not args.no_snapshot,
                           args.keep_going, args.progress_every)
    print(f"kill loop: {' '.join(sys.argv[1:]) or '(defaults)'}; work dir {work_dir}; {machine_description()}",
          flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # stop the broker on `kill PID` (SIGINT is ignored under nohup &)
    model, violations, wall_s = run(settings)
    print(_summary(model, violations, wall_s, settings), flush=True)
    if not args.no_record:
        c = model.counts
        append_results([result(
            "kill-loop", f"violations after {c.kills:,} kill -9s", len(violations), "violations",
            note=f"{c.kills_in_cleaning_round} kills inside a cleaning round, {c.kills_in_transaction} inside a "
                 f"transaction; {c.plain_acked + c.comp_acked + c.txn_records_acked:,} acknowledged records, "
                 f"{c.group_commits_acked:,} group commits, {c.txn_committed:,} committed / {c.txn_aborted:,} "
                 f"aborted transactions checked; {wall_s:.0f} s")])
    if violations:
        print("VIOLATIONS:\n  " + "\n  ".join(violations), flush=True)
        raise SystemExit(1)
    if args.work_dir is None:
        shutil.rmtree(work_dir, ignore_errors=True)
    print("OK: every acknowledged record, committed offset and committed transaction found after every restart; "
          "no aborted record visible, no superseded value reappeared", flush=True)


if __name__ == "__main__":
    main()

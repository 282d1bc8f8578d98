"""Soak: mixed load on one broker for a long time, sampling RSS, open files and latency (Reliability, item 5).

    .venv/bin/python -m bench.soak [--minutes 30] [--sample-seconds 10] [--work-dir DIR]
        [--plain-rate 300] [--compacted-rate 200] [--keys 500] [--delete-retention-ms MS]

One broker (`minikafka.testing.MiniKafka`) with a fast cleaner (`log.cleaner.backoff.ms=1000`) and a 5 s
retention check. Topics: `soak-plain` (2 partitions, delete policy, `retention.ms=120000`, `segment.ms=15000`, so
segments are deleted all the time), `soak-txn` (1 partition, the same retention), `soak-compact` (1 partition,
compacted, 64 KiB segments, `segment.ms=5000`, `min.cleanable.dirty.ratio=0.1`, `delete.retention.ms=1000`);
`__consumer_offsets` and `__transaction_state` have one partition and 64 KiB segments, so the cleaner compacts them
too. For the whole run, in this process (client threads, confluent-kafka):

- an idempotent producer (acks=all, linger 5 ms) writing `--plain-rate` records/s (100 B) to `soak-plain` and
  `--compacted-rate` records/s to `soak-compact` over `--keys` keys (`i<n>`, ~5% tombstones), paced open-loop;
  the acks=all delivery latency (produce() to delivery callback) of each record is recorded;
- a transactional producer running ~5 transactions/s (3 records to `soak-txn`, 1 to a `t<n>` key of
  `soak-compact`, `send_offsets_to_transaction` for `soak-txn-group`), committing 80% and aborting the rest;
- a consumer group `soak-group` of 2 members reading `soak-plain` and `soak-txn` read_committed and committing
  their positions synchronously every second;
- every sample: a fresh AdminClient (connection churn) listing topics and groups, and a GET of `/metrics`.

Every `--sample-seconds` one line is printed and a row added to `samples.csv` in the work dir: broker RSS (VmRSS
summed over the broker process and all its descendants, e.g. the cleaner's worker processes, from /proc), open file
descriptors (entries of /proc/<pid>/fd over the same tree), broker threads, data dir size, records produced /
acknowledged / consumed in the interval, p50 / p99 / max acks=all delivery latency over the interval, the group's
lag (high watermark minus committed offset, summed), transactions committed / aborted, cleaning rounds finished
(broker log lines "cleaned log"), and the log start offset of `soak-plain` (rises as retention deletes segments).

Verdict at the end (`summary.json` in the work dir; exit code 1 if any part fails):

- plateau: the samples are cut into thirds by time (the first third is warm-up). A metric plateaus if both the
  last third's maximum exceeds the middle third's, and its least-squares trend over the last two thirds adds, by at
  most the allowance: for total RSS the smaller of 10% and 20 MiB, for open fds max(5, 10%) descriptors. The trend
  catches a steady drift that the max-vs-max comparison lets through.
  The data dir size is reported, not judged.
- correctness, after the producers stopped: the group's committed offsets reach the end of every partition (the
  high watermark; on `soak-txn` the last offset may be a commit marker, so high watermark - 1 is accepted) within
  60 s; `soak-compact` read from offset 0 read_committed has, for every key, the latest acknowledged value of the
  idempotent producer (absent or a tombstone if the latest was a tombstone) and for every `t<n>` key the value of the
  last committed transaction that wrote it; no client reported an error (delivery failures, transaction errors).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.machine import machine_description
from bench.results_log import append_results, result
from bench.soak_workload import (
    BROKER_CONFIG,
    COMPACT_TOPIC,
    GROUP,
    LOG_LEVEL,
    MIB,
    PLAIN_TOPIC,
    TOPICS,
    TXN_TOPIC,
    Load,
    Stats,
    comp_value,
    group_member,
    guarded,
    idempotent_producer,
    transactions,
)
from minikafka.testing import MiniKafka

# ---------------------------------------------------------------- /proc sampling


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (from /proc/<pid>/task/*/children); vanished processes are skipped."""
    tree: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except OSError:
                continue
            pending += [int(child) for child in children]
    return tree


def _status_fields(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def rss_bytes(pid: int) -> int:
    value = _status_fields(pid).get("VmRSS", "0 kB").split()[0]
    return int(value) * 1024


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def fd_kinds(pid: int) -> tuple[int, int]:
    """(sockets, regular files under a data dir or elsewhere) among /proc/<pid>/fd."""
    sockets = files = 0
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0, 0
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:"):
            sockets += 1
        elif target.startswith("/"):
            files += 1
    return sockets, files


def pss_bytes(pid: int) -> int:
    """Proportional set size (shared pages divided among the processes sharing them), from smaps_rollup."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def thread_count(pid: int) -> int:
    return int(_status_fields(pid).get("Threads", "0").strip() or 0)


def dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass  # deleted under the walk (retention, the cleaner's swap)
    return total


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# ---------------------------------------------------------------- sampling


class Sampler:
    """One row per call: broker tree RSS / fds / threads, data dir size, the interval's client counters."""

    def __init__(self, broker: MiniKafka, stats: Stats, work_dir: Path) -> None:
        from confluent_kafka import Consumer

        self.broker = broker
        self.stats = stats
        self.rows: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.previous = stats.take_interval()
        self.previous_time = self.started
        self.log_offset = 0
        self.cleaning_rounds = 0
        self.csv_path = work_dir / "samples.csv"
        self.watcher = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP,
                                 "enable.auto.commit": False, "log_level": LOG_LEVEL})

    def group_lag(self) -> tuple[int, int]:
        """(lag summed over the group's partitions, log start offset of soak-plain partition 0)."""
        from confluent_kafka import TopicPartition

        partitions = [TopicPartition(PLAIN_TOPIC, 0), TopicPartition(PLAIN_TOPIC, 1), TopicPartition(TXN_TOPIC, 0)]
        committed = self.watcher.committed(partitions, timeout=10)
        lag = 0
        start = -1
        for tp in committed:
            low, high = self.watcher.get_watermark_offsets(tp, timeout=10)
            lag += high - max(tp.offset, low)
            if tp.topic == PLAIN_TOPIC and tp.partition == 0:
                start = low
        return lag, start

    def admin_calls(self) -> float:
        """A fresh AdminClient (connection churn): list topics and groups; a GET of /metrics. Returns seconds."""
        from confluent_kafka.admin import AdminClient

        started = time.perf_counter()
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap_servers, "log_level": LOG_LEVEL})
        topics = admin.list_topics(timeout=10).topics
        if PLAIN_TOPIC not in topics:
            self.stats.error(f"metadata lists no {PLAIN_TOPIC}")
        admin.list_consumer_groups(request_timeout=10).result(10)
        with urllib.request.urlopen(self.broker.metrics_url, timeout=10) as response:
            response.read()
        return time.perf_counter() - started

    def new_cleaning_rounds(self) -> int:
        with open(self.broker.log_path, "rb") as log_file:
            log_file.seek(self.log_offset)
            text = log_file.read()
        self.log_offset += len(text)
        return text.count(b"cleaned log")

    def sample(self) -> dict[str, Any]:
        assert self.broker.pid is not None
        tree = process_tree(self.broker.pid)
        rss = [rss_bytes(pid) for pid in tree]
        pss = sum(pss_bytes(pid) for pid in tree)
        kinds = [fd_kinds(pid) for pid in tree]
        try:
            admin_s = self.admin_calls()
        except Exception as exc:
            admin_s = float("nan")
            self.stats.error(f"admin calls: {type(exc).__name__}: {exc}")
        try:
            lag, plain_start = self.group_lag()
        except Exception as exc:
            lag, plain_start = -1, -1
            self.stats.error(f"lag: {type(exc).__name__}: {exc}")
        now = time.monotonic()
        current = self.stats.take_interval()
        seconds = now - self.previous_time
        latencies = current["latencies"]
        rounds = self.new_cleaning_rounds()
        self.cleaning_rounds += rounds
        row = {
            "t_s": round(now - self.started, 1),
            "rss_mib": round(sum(rss) / MIB, 1),
            "rss_main_mib": round(rss[0] / MIB, 1),
            "rss_children_mib": round(sum(rss[1:]) / MIB, 1),
            "processes": len(tree),
            "pss_mib": round(pss / MIB, 1),
            "fds": sum(fd_count(pid) for pid in tree),
            "fd_sockets": sum(kind[0] for kind in kinds),
            "fd_files": sum(kind[1] for kind in kinds),
            "threads": thread_count(self.broker.pid),
            "data_mib": round(dir_size(self.broker.data_dir) / MIB, 2),
            "produced_per_s": round((current["produced"] - self.previous["produced"]) / seconds, 1),
            "acked_per_s": round((current["acked"] - self.previous["acked"]) / seconds, 1),
            "consumed_per_s": round((current["consumed"] - self.previous["consumed"]) / seconds, 1),
            "p50_ms": round(percentile(latencies, 0.5), 2),
            "p99_ms": round(percentile(latencies, 0.99), 2),
            "max_ms": round(max(latencies), 2) if latencies else float("nan"),
            "txn_commit_p50_ms": round(percentile(current["txn_commit_ms"], 0.5), 2),
            "txns_committed": current["txn_committed"] - self.previous["txn_committed"],
            "txns_aborted": current["txn_aborted"] - self.previous["txn_aborted"],
            "group_commits": current["group_commits"] - self.previous["group_commits"],
            "lag": lag,
            "plain_log_start": plain_start,
            "cleaning_rounds": rounds,
            "admin_s": round(admin_s, 3),
            "load1": round(os.getloadavg()[0], 2),
            "client_rss_mib": round(rss_bytes(os.getpid()) / MIB, 1),
        }
        self.previous, self.previous_time = current, now
        self.rows.append(row)
        self._write_csv()
        return row

    def _write_csv(self) -> None:
        with open(self.csv_path, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(self.rows[0]))
            writer.writeheader()
            writer.writerows(self.rows)

    def close(self) -> None:
        self.watcher.close()


def format_row(row: dict[str, Any]) -> str:
    return (f"[{row['t_s']:7.1f}s] rss {row['rss_mib']:6.1f} MiB (main {row['rss_main_mib']:.1f}, children "
            f"{row['rss_children_mib']:.1f}, {row['processes']} procs; pss {row['pss_mib']:.1f}) "
            f"fds {row['fds']} (sockets {row['fd_sockets']}, files {row['fd_files']}) threads {row['threads']} "
            f"data {row['data_mib']:.1f} MiB | acked {row['acked_per_s']:.0f}/s consumed {row['consumed_per_s']:.0f}/s "
            f"p50 {row['p50_ms']:.1f} p99 {row['p99_ms']:.1f} max {row['max_ms']:.0f} ms | txn {row['txns_committed']}"
            f"+{row['txns_aborted']}a commit p50 {row['txn_commit_p50_ms']:.1f} ms | lag {row['lag']} | plain start "
            f"{row['plain_log_start']} | cleaned {row['cleaning_rounds']} | admin {row['admin_s']:.2f}s | load "
            f"{row['load1']}")


# ---------------------------------------------------------------- verdict


@dataclass
class Plateau:
    """A metric's trend after warm-up: the least-squares slope over the last two thirds of the run, and what that
    slope adds over those two thirds (a steady drift shows there, where a max-vs-max comparison can miss it)."""

    metric: str
    middle_max: float
    last_max: float
    slope_per_h: float
    trend_growth: float
    allowed_growth: float

    @property
    def growth(self) -> float:
        return self.last_max - self.middle_max

    @property
    def ok(self) -> bool:
        return self.growth <= self.allowed_growth and self.trend_growth <= self.allowed_growth

    def describe(self) -> str:
        return (f"{self.metric}: middle-third max {self.middle_max:g}, last-third max {self.last_max:g}, growth "
                f"{self.growth:+g}; trend {self.slope_per_h:+.1f}/h = {self.trend_growth:+.1f} over the last two "
                f"thirds (allowed {self.allowed_growth:g}): {'plateau' if self.ok else 'GROWING'}")


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (x, y) points; 0 for fewer than two distinct x."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    variance = sum((x - mean_x) ** 2 for x, _ in points)
    return 0.0 if variance == 0 else sum((x - mean_x) * (y - mean_y) for x, y in points) / variance


def plateaus(rows: list[dict[str, Any]], total_s: float) -> list[Plateau]:
    middle = [row for row in rows if total_s / 3 <= row["t_s"] < 2 * total_s / 3]
    last = [row for row in rows if row["t_s"] >= 2 * total_s / 3]
    if len(middle) < 2 or len(last) < 2:
        return [Plateau("too few samples", 0, 1, 0, 0, 0)]
    verdicts = []
    for metric, allowed in (("rss_mib", lambda m: min(0.1 * m, 20.0)), ("fds", lambda m: max(5.0, 0.1 * m))):
        middle_max = max(row[metric] for row in middle)
        per_s = slope([(row["t_s"], row[metric]) for row in middle + last])
        span_s = (middle + last)[-1]["t_s"] - middle[0]["t_s"]
        verdicts.append(Plateau(metric, middle_max, max(row[metric] for row in last), per_s * 3600,
                                per_s * span_s, allowed(middle_max)))
    return verdicts


def drain_and_check(broker: MiniKafka, stats: Stats, load: Load, sampler: Sampler) -> list[str]:
    """After the producers stopped (members still running): lag to zero, then the compacted topic's contents."""
    from confluent_kafka import Consumer, TopicPartition

    failures: list[str] = []
    deadline = time.monotonic() + 60
    partitions = [TopicPartition(PLAIN_TOPIC, 0), TopicPartition(PLAIN_TOPIC, 1), TopicPartition(TXN_TOPIC, 0)]
    while True:
        behind = []
        for tp in sampler.watcher.committed(partitions, timeout=10):
            _low, high = sampler.watcher.get_watermark_offsets(tp, timeout=10)
            slack = 1 if tp.topic == TXN_TOPIC else 0
            if tp.offset < high - slack:
                behind.append(f"{tp.topic}[{tp.partition}] committed {tp.offset}, high watermark {high}")
        if not behind:
            break
        if time.monotonic() > deadline:
            failures += [f"group {GROUP} did not reach the end in 60 s: {text}" for text in behind]
            break
        time.sleep(1)

    reader = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "soak-check",
                       "enable.auto.commit": False, "isolation.level": "read_committed", "log_level": LOG_LEVEL,
                       "enable.partition.eof": True})
    _low, high = reader.get_watermark_offsets(TopicPartition(COMPACT_TOPIC, 0), timeout=10)
    reader.assign([TopicPartition(COMPACT_TOPIC, 0, 0)])
    latest: dict[str, bytes | None] = {}
    records = 0
    deadline = time.monotonic() + 120
    done = False
    while not done and time.monotonic() < deadline:
        for message in reader.consume(num_messages=5000, timeout=1):
            error = message.error()
            if error is not None:
                if error.code() == -191:  # _PARTITION_EOF
                    done = True
                    continue
                failures.append(f"reading {COMPACT_TOPIC}: {error}")
                done = True
                break
            records += 1
            latest[(message.key() or b"").decode()] = message.value()
    reader.close()
    if not done:
        failures.append(f"reading {COMPACT_TOPIC} did not reach its end ({high}) in 120 s")
    with stats.lock:
        comp_latest = dict(stats.comp_latest)
        txn_latest = dict(stats.txn_latest)
    for key, (version, tombstone) in sorted(comp_latest.items()):
        found = latest.get(key)
        if tombstone:
            if found is not None:
                failures.append(f"{COMPACT_TOPIC} key {key}: latest acknowledged write {version} is a tombstone, "
                                f"found {found[:20]!r}")
        elif found != comp_value(version):
            failures.append(f"{COMPACT_TOPIC} key {key}: expected version {version}, found "
                            f"{found[:20] if found is not None else None!r}")
    for key, txn_id in sorted(txn_latest.items()):
        if latest.get(key) != comp_value(txn_id):
            failures.append(f"{COMPACT_TOPIC} key {key}: expected committed transaction {txn_id}, found "
                            f"{(latest.get(key) or b'')[:20]!r}")
    print(f"check: {COMPACT_TOPIC} read from offset 0: {records} records (high watermark {high}) for "
          f"{len(latest)} keys; {len(comp_latest)} idempotent keys and {len(txn_latest)} transactional keys checked",
          flush=True)
    return failures


# ---------------------------------------------------------------- main


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config)
                                   for name, (partitions, config) in TOPICS.items()])
    for future in futures.values():
        future.result(30)


def run(args: argparse.Namespace, work_dir: Path) -> int:
    config = dict(BROKER_CONFIG)
    if args.delete_retention_ms is not None:
        config["log.cleaner.delete.retention.ms"] = args.delete_retention_ms
    broker = MiniKafka(config, data_dir=work_dir / "data")
    broker.start()
    print(f"broker pid {broker.pid} on {broker.bootstrap_servers}, log {broker.log_path}", flush=True)
    create_topics(broker.bootstrap_servers)
    stats = Stats()
    load = Load(broker.bootstrap_servers, args.plain_rate, args.compacted_rate, args.keys, args.seed)
    stop_producers = threading.Event()
    stop_members = threading.Event()
    producers = [threading.Thread(target=guarded, args=(idempotent_producer, load, stats, stop_producers)),
                 threading.Thread(target=guarded, args=(transactions, load, stats, stop_producers))]
    members = [threading.Thread(target=guarded, args=(group_member, load, stats, stop_members, index))
               for index in range(2)]
    sampler = Sampler(broker, stats, work_dir)
    total_s = args.minutes * 60
    failures: list[str] = []
    try:
        for thread in producers + members:
            thread.start()
        next_sample = sampler.started + args.sample_seconds
        while True:
            time.sleep(max(0.0, next_sample - time.monotonic()))
            if broker.process is None or broker.process.poll() is not None:
                failures.append("the broker exited during the soak")
                break
            print(format_row(sampler.sample()), flush=True)
            next_sample += args.sample_seconds
            if time.monotonic() - sampler.started >= total_s:
                break
        stop_producers.set()
        for thread in producers:
            thread.join(90)
        if not failures:
            failures += drain_and_check(broker, stats, load, sampler)
        stop_members.set()
        for thread in members:
            thread.join(30)
    finally:
        sampler.close()
        stop_producers.set()
        stop_members.set()
        code = broker.stop()
        if code != 0:
            failures.append(f"the broker exited with {code} on SIGTERM")

    rows = sampler.rows
    verdicts = plateaus(rows, rows[-1]["t_s"] if rows else 0.0)
    failures += [verdict.describe() for verdict in verdicts if not verdict.ok]
    if stats.errors:
        failures += [f"client error: {text}" for text in stats.errors]
    log_text = broker.read_log()
    tracebacks = log_text.count("Traceback")
    if tracebacks:
        failures.append(f"the broker log has {tracebacks} tracebacks")

    def mean(name: str, part: list[dict[str, Any]]) -> float:
        values = [row[name] for row in part if row[name] == row[name]]
        return sum(values) / len(values) if values else float("nan")

    print("plateau:\n  " + "\n  ".join(verdict.describe() for verdict in verdicts), flush=True)
    thirds = [rows[k * len(rows) // 3:(k + 1) * len(rows) // 3] for k in range(3)]
    for name, part in zip(("first", "middle", "last"), thirds, strict=True):
        if not part:
            continue
        print(f"{name} third: rss {min(r['rss_mib'] for r in part):.1f}-{max(r['rss_mib'] for r in part):.1f} MiB, "
              f"fds {min(r['fds'] for r in part)}-{max(r['fds'] for r in part)}, data "
              f"{min(r['data_mib'] for r in part):.1f}-{max(r['data_mib'] for r in part):.1f} MiB, acked "
              f"{mean('acked_per_s', part):.0f}/s, consumed {mean('consumed_per_s', part):.0f}/s, p50 "
              f"{mean('p50_ms', part):.1f} ms (mean of samples), p99 {mean('p99_ms', part):.1f} ms (mean), worst p99 "
              f"{max(r['p99_ms'] for r in part):.1f} ms, cleaning rounds {sum(r['cleaning_rounds'] for r in part)}",
              flush=True)
    summary = {
        "command": " ".join(sys.argv), "machine": machine_description(), "minutes": args.minutes,
        "samples": len(rows), "plateaus": [asdict(verdict) | {"ok": verdict.ok} for verdict in verdicts],
        "totals": {"produced": stats.produced, "acked": stats.acked, "consumed": stats.consumed,
                   "txn_committed": stats.txn_committed, "txn_aborted": stats.txn_aborted,
                   "group_commits": stats.group_commits, "cleaning_rounds": sampler.cleaning_rounds},
        "failures": failures,
    }
    (work_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if not args.no_record:
        verdict_note = "PASSED" if not failures else f"FAILED ({len(failures)} failures)"
        names = {"rss_mib": ("RSS", "MiB/h"), "fds": ("open files", "fds/h")}
        append_results([result("soak", f"{names[v.metric][0]} trend over {args.minutes:g} min", v.slope_per_h,
                               names[v.metric][1], note=f"{v.describe()}; {verdict_note}") for v in verdicts])
    print(f"totals: {json.dumps(summary['totals'])}", flush=True)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:50]), flush=True)
        return 1
    print("OK: RSS and open fds plateaued; the group reached the end; every key's latest acknowledged value is "
          "in the compacted topic", flush=True)
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--sample-seconds", type=float, default=10.0)
    parser.add_argument("--work-dir", type=Path, default=None, help="kept afterwards (default: a temporary dir)")
    parser.add_argument("--plain-rate", type=float, default=300.0, help="records/s to soak-plain")
    parser.add_argument("--compacted-rate", type=float, default=200.0, help="records/s to soak-compact")
    parser.add_argument("--keys", type=int, default=500, help="key space of the idempotent compacted writes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--delete-retention-ms", type=int, default=60_000,
                        help="broker log.cleaner.delete.retention.ms (default 60000, not Kafka's 24 h: the transaction "
                             "markers in __consumer_offsets/__transaction_state are kept that long, so with 24 h a "
                             "30-minute run only sees the window filling, never its plateau)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args()
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="minikafka-soak-"))
    shutil.rmtree(work_dir / "data", ignore_errors=True)  # a fresh broker each run
    (work_dir / "data-broker.log").unlink(missing_ok=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    print(f"soak: {' '.join(sys.argv[1:]) or '(defaults)'}; work dir {work_dir}; {machine_description()}",
          flush=True)
    signal.signal(signal.SIGTERM, _interrupt)
    raise SystemExit(run(args, work_dir))


if __name__ == "__main__":
    main()

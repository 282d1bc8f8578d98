"""Exact compaction (Spark plan + one broker round) vs. the ordinary multi-round cleaner, on the same data.

    .venv/bin/python -m bench.exact_compaction [--records 1000000] [--keys 200000] [--value-bytes 100]
        [--quick] [--work-dir DIR] [--spark-memory 2g]

One broker (`minikafka.testing.MiniKafka`) with a tiny offset map: `log.cleaner.dedupe.buffer.size` = 1 MiB + 1
(the least one cleaner thread may have) at `log.cleaner.io.buffer.load.factor` 0.05, a map of ~3,400 keys (the
setting of tests/pipeline/test_exact_compaction.py), and `log.cleaner.backoff.ms` of a day so that nothing is
cleaned until asked. The SAME records go to two compacted single-partition topics (1 MiB segments): `--records`
updates, record i to key i mod `--keys` (value `v<i>` padded to `--value-bytes`), then a tombstone for every 10th
key, then a committed transaction (keys 0-4) and an aborted one (keys 5-9). Then, one after the other:

- exact: `GET /admin/cleaner-state`, the retained-offset plan computed on Spark (`pipeline.exact_plan.write_plans`,
  a `local[2]` session from `build_spark_session`, not fast_start; the session's start-up is timed apart), then
  the plan streamed to `POST /admin/compact?exact=true&wait=true` (`submit_plan`): one round. Plan and apply
  are timed separately; their sum is the time to one record per key.
- ordinary: `POST /admin/compact?topic=T&wait=true`, which runs rounds until the cleanable range is done; the
  reply counts them.

For each: wall time, broker peak RSS during the operation (the sum of VmRSS over the broker and its descendants,
i.e. the cleaner's worker process, sampled every 20 ms; VmRSS, not VmHWM, because the worker outlives one
operation), the Spark driver JVM's peak RSS (the exact side only), bytes the cleaner wrote (the reply's
`bytes_written`, summed over rounds) and `write_bytes` of /proc/<pid>/io over the broker tree (includes the
uploaded plan file) and of the Spark JVM. Each result is verified by a read_committed confluent-kafka consumer
from offset 0: every key exactly once, with its latest value (a tombstone for deleted keys: they stay until
`delete.retention.ms`, a day), the aborted values nowhere; the exact result also by `minikafka audit` (its
`run_audit` on the same Spark session: no key twice below the cleaner checkpoint). Prints a table and ratios; exit
status 1 if a verification fails. `--quick` is 100k records over 20k keys.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.machine import machine_description
from bench.results_log import append_results, result
from minikafka.testing import MiniKafka

REPO = Path(__file__).resolve().parents[1]
TINY_MAP: dict[str, str | int] = {
    "log.cleaner.dedupe.buffer.size": 1024 * 1024 + 1,
    "log.cleaner.io.buffer.load.factor": "0.05",
    "log.cleaner.backoff.ms": 86_400_000,
    "auto.create.topics.enable": "false",
}
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.99", "segment.bytes": str(1024 * 1024)}
TXN_COMMITTED = b"txn-committed"
TXN_ABORTED = b"txn-aborted"


# ---------------------------------------------------------------------------------------------- process sampling
def _ppid_map() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """`root` and every process below it."""
    parents = _ppid_map() if parents is None else parents
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def write_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak summed VmRSS of the process trees rooted at `roots()` (re-read every sample: workers come and go)."""

    def __init__(self, roots: Callable[[], list[int]], interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.roots = roots
        self.interval_s = interval_s
        self.peak = 0
        self.peak_processes = 0
        self._stop_event = threading.Event()

    def pids(self) -> list[int]:
        parents = _ppid_map()
        return sorted({pid for root in self.roots() for pid in descendants(root, parents)})

    def run(self) -> None:
        while not self._stop_event.is_set():
            pids = self.pids()
            total = sum(rss_bytes(pid) for pid in pids)
            if total > self.peak:
                self.peak, self.peak_processes = total, len(pids)
            self._stop_event.wait(self.interval_s)

    def stop(self) -> int:
        self._stop_event.set()
        self.join(10)
        return self.peak


class WriteCounter:
    """write_bytes of a process tree since construction (a process born later counts from 0)."""

    def __init__(self, roots: Callable[[], list[int]]) -> None:
        self.roots = roots
        self.start = {pid: write_bytes(pid) for pid in self._pids()}
        self.last = dict(self.start)

    def _pids(self) -> list[int]:
        parents = _ppid_map()
        return sorted({pid for root in self.roots() for pid in descendants(root, parents)})

    def sample(self) -> None:
        for pid in self._pids():
            self.last[pid] = write_bytes(pid)

    def total(self) -> int:
        self.sample()
        return sum(value - self.start.get(pid, 0) for pid, value in self.last.items())


# ---------------------------------------------------------------------------------------------------- the data
def value_of(i: int, size: int) -> bytes:
    head = b"v%d:" % i
    return head + b"." * max(0, size - len(head))


def create_topics(bootstrap: str, topics: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1, config=COMPACTED) for t in topics]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, records: int, keys: int, value_bytes: int) -> dict[bytes, bytes | None]:
    """The history (updates, tombstones for every 10th key) and the two transactions; each key's latest value."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.messages": 500_000})
    errors: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    latest: dict[bytes, bytes | None] = {}

    def send(key: bytes, value: bytes | None) -> None:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        latest[key] = value

    for i in range(records):
        send(b"key-%07d" % (i % keys), value_of(i, value_bytes))
        if i % 10_000 == 0:
            producer.poll(0)
    for k in range(0, keys, 10):
        send(b"key-%07d" % k, None)
    if producer.flush(120) != 0 or errors:
        raise RuntimeError(f"produce to {topic} failed: {producer.flush(0)} undelivered, errors {errors[:5]}")
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-exact-{uuid.uuid4().hex[:8]}",
                    "linger.ms": 5})
    txn.init_transactions(30)
    for keys_range, value, commit in ((range(5), TXN_COMMITTED, True), (range(5, 10), TXN_ABORTED, False)):
        txn.begin_transaction()
        for k in keys_range:
            txn.produce(topic, key=b"key-%07d" % k, value=value, on_delivery=report)
        if txn.flush(30) != 0 or errors:
            raise RuntimeError(f"transactional produce failed: {errors[:5]}")
        if commit:
            txn.commit_transaction(30)
            latest.update({b"key-%07d" % k: value for k in keys_range})
        else:
            txn.abort_transaction(30)
    return latest


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from offset 0 to the end (read_committed)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 50,
                         "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.2):
                error = msg.error()
                if error is None:
                    got.append((int(msg.offset() or 0), msg.key(), msg.value()))
                elif error.code() == KafkaError._PARTITION_EOF:
                    return got
                else:
                    raise RuntimeError(f"consumer error: {error}")
        raise RuntimeError(f"no end of {topic} after 600 s ({len(got)} records read)")
    finally:
        consumer.close()


def verify(bootstrap: str, topic: str, latest: dict[bytes, bytes | None]) -> tuple[int, list[str]]:
    """(records read, problems): every key once, with its latest value."""
    records = consume_all(bootstrap, topic)
    problems: list[str] = []
    seen: dict[bytes | None, int] = {}
    wrong = 0
    for offset, key, value in records:
        if key in seen:
            if len(problems) < 5:
                problems.append(f"key {key!r} at offsets {seen[key]} and {offset}")
            continue
        seen[key] = offset
        if key not in latest:
            problems.append(f"unknown key {key!r} at offset {offset}")
        elif latest[key] != value:
            wrong += 1
            if wrong <= 5:
                problems.append(f"key {key!r} at offset {offset}: value {value!r:.40} instead of {latest[key]!r:.40}")
    if wrong:
        problems.append(f"{wrong} keys with a value other than their latest")
    duplicates = len(records) - len(seen)
    if duplicates:
        problems.append(f"{duplicates} records beyond one per key")
    missing = set(latest) - set(seen)
    if missing:
        problems.append(f"{len(missing)} keys missing, e.g. {sorted(missing)[:3]}")
    return len(records), problems


# ------------------------------------------------------------------------------------------------- the two runs
@dataclass
class Outcome:
    name: str
    seconds: float = 0.0
    plan_seconds: float = 0.0
    apply_seconds: float = 0.0
    rounds: int = 0
    broker_peak_rss: int = 0
    spark_peak_rss: int = 0
    cleaner_bytes_read: int = 0
    cleaner_bytes_written: int = 0
    broker_io_written: int = 0
    spark_io_written: int = 0
    records_removed: int = 0
    plan_offsets: int = 0
    records_after: int = 0
    problems: list[str] = field(default_factory=list)


def broker_roots(kafka: MiniKafka) -> Callable[[], list[int]]:
    return lambda: [kafka.pid] if kafka.pid is not None else []


def run_exact(kafka: MiniKafka, spark: Any, spark_pid: int, topic: str) -> Outcome:
    from minikafka.pipeline.audit import fetch_cleaner_state
    from minikafka.pipeline.exact_plan import cleanable_ranges, submit_plan, write_plans

    out = Outcome("exact")
    broker_rss = TreeSampler(broker_roots(kafka))
    spark_rss = TreeSampler(lambda: [spark_pid])
    broker_io, spark_io = WriteCounter(broker_roots(kafka)), WriteCounter(lambda: [spark_pid])
    broker_rss.start()
    spark_rss.start()
    started = time.monotonic()
    state = fetch_cleaner_state(kafka.admin_url, topic)
    assert state is not None
    ranges = cleanable_ranges(state, [0])
    with tempfile.TemporaryDirectory(prefix="bench-exact-plan-") as directory:
        [plan] = write_plans(spark, kafka.bootstrap_servers, topic, uuid.UUID(state["topic_id_uuid"]), ranges,
                             Path(directory))
        planned = time.monotonic()
        reply = submit_plan(kafka.admin_url, topic, plan, wait=True, timeout_s=3600)
    done = time.monotonic()
    out.broker_peak_rss, out.spark_peak_rss = broker_rss.stop(), spark_rss.stop()
    out.broker_io_written, out.spark_io_written = broker_io.total(), spark_io.total()
    out.seconds, out.plan_seconds, out.apply_seconds = done - started, planned - started, done - planned
    [result] = reply["results"]
    if result["status"] != "cleaned":
        out.problems.append(f"exact round: {json.dumps(reply)[:500]}")
    out.rounds = result["rounds"]
    out.cleaner_bytes_read, out.cleaner_bytes_written = result["bytes_read"], result["bytes_written"]
    out.records_removed, out.plan_offsets = result["records_removed"], plan.retained
    return out


def run_ordinary(kafka: MiniKafka, topic: str) -> Outcome:
    out = Outcome("ordinary")
    broker_rss = TreeSampler(broker_roots(kafka))
    broker_io = WriteCounter(broker_roots(kafka))
    broker_rss.start()
    started = time.monotonic()
    request = urllib.request.Request(f"{kafka.admin_url}/admin/compact?topic={topic}&wait=true&timeout_ms=36000000",
                                     data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=36_100) as response:
        reply = json.loads(response.read())
    out.seconds = out.apply_seconds = time.monotonic() - started
    out.broker_peak_rss = broker_rss.stop()
    out.broker_io_written = broker_io.total()
    [result] = reply["results"]
    if result["status"] != "cleaned" or not reply["done"]:
        out.problems.append(f"ordinary compaction: {json.dumps(reply)[:500]}")
    out.rounds = result["rounds"]
    out.cleaner_bytes_read, out.cleaner_bytes_written = result["bytes_read"], result["bytes_written"]
    out.records_removed = result["records_removed"]
    return out


def audit_problems(kafka: MiniKafka, spark: Any, topic: str) -> list[str]:
    """`minikafka audit` on the exactly compacted topic: no key twice below the cleaner checkpoint."""
    from minikafka.pipeline.audit import run_audit

    report = run_audit(spark, kafka.bootstrap_servers, topic, admin_url=kafka.admin_url)
    [partition] = report.partitions
    print(f"audit: ok={report.ok}, {partition.records:,} records, {partition.distinct_keys:,} distinct keys, "
          f"checkpoint {partition.cleaner_checkpoint_offset}, "
          f"{partition.duplicates_below_checkpoint} duplicates below it", flush=True)
    problems = [f"audit: {v.rule} at offset {v.offset} (key {v.key})" for v in report.violations]
    if partition.cleaner_checkpoint_offset is None:
        problems.append("audit: no cleaner checkpoint after the exact round")
    return problems if report.ok else problems or ["audit failed"]


def spark_session(memory: str) -> tuple[Any, int, float]:
    from minikafka.pipeline.session import build_spark_session
    from minikafka.pipeline.spark_jars import ensure_spark_jars

    started = time.monotonic()
    spark = build_spark_session("local[2]", app_name="bench-exact-compaction", jars=ensure_spark_jars(REPO / ".cache"),
                                conf={"spark.driver.memory": memory})
    pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]
    return spark, pid, time.monotonic() - started


def mib(n: int) -> str:
    return f"{n / 2**20:,.1f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:,.2f}x" if b else "n/a"


def report(exact: Outcome, ordinary: Outcome, spark_start_s: float) -> str:
    rows = [
        ("rounds", str(exact.rounds), str(ordinary.rounds), ratio(ordinary.rounds, exact.rounds)),
        ("time to one record per key, s", f"{exact.seconds:,.1f}", f"{ordinary.seconds:,.1f}",
         ratio(ordinary.seconds, exact.seconds)),
        ("  of which plan (Spark), s", f"{exact.plan_seconds:,.1f}", "-", ""),
        ("  of which apply (broker), s", f"{exact.apply_seconds:,.1f}", f"{ordinary.apply_seconds:,.1f}",
         ratio(ordinary.apply_seconds, exact.apply_seconds)),
        ("broker peak RSS (+ cleaner worker), MiB", mib(exact.broker_peak_rss), mib(ordinary.broker_peak_rss),
         ratio(ordinary.broker_peak_rss, exact.broker_peak_rss)),
        ("Spark driver JVM peak RSS, MiB", mib(exact.spark_peak_rss), "-", ""),
        ("cleaner bytes read, MiB", mib(exact.cleaner_bytes_read), mib(ordinary.cleaner_bytes_read),
         ratio(ordinary.cleaner_bytes_read, exact.cleaner_bytes_read)),
        ("cleaner bytes written, MiB", mib(exact.cleaner_bytes_written), mib(ordinary.cleaner_bytes_written),
         ratio(ordinary.cleaner_bytes_written, exact.cleaner_bytes_written)),
        ("broker tree write_bytes (/proc), MiB", mib(exact.broker_io_written), mib(ordinary.broker_io_written),
         ratio(ordinary.broker_io_written, exact.broker_io_written)),
        ("Spark JVM write_bytes (/proc), MiB", mib(exact.spark_io_written), "-", ""),
        ("records removed", f"{exact.records_removed:,}", f"{ordinary.records_removed:,}", ""),
        ("records after (consumer from 0)", f"{exact.records_after:,}", f"{ordinary.records_after:,}", ""),
        ("verified: each key once, latest value", "yes" if not exact.problems else "NO",
         "yes" if not ordinary.problems else "NO", ""),
    ]
    lines = ["| | exact (Spark plan + 1 round) | ordinary (multi-round) | ordinary / exact |", "|---|---:|---:|---:|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines.append(f"\nSpark session start-up (not counted above): {spark_start_s:.1f} s; plan offsets: "
                 f"{exact.plan_offsets:,}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="100k records over 20k keys")
    parser.add_argument("--spark-memory", default="2g", help="spark.driver.memory")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the broker's data and log here")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args()
    if args.quick:
        args.records, args.keys = 100_000, 20_000
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    print(f"machine: {machine_description()}; load average {os.getloadavg()[0]:.2f}", flush=True)
    data_dir = None if args.work_dir is None else args.work_dir / "data"
    kafka = MiniKafka(TINY_MAP, data_dir=data_dir).start()
    try:
        exact_topic, ordinary_topic = "exact", "ordinary"
        create_topics(kafka.bootstrap_servers, [exact_topic, ordinary_topic])
        started = time.monotonic()
        latest = produce(kafka.bootstrap_servers, exact_topic, args.records, args.keys, args.value_bytes)
        if produce(kafka.bootstrap_servers, ordinary_topic, args.records, args.keys, args.value_bytes) != latest:
            raise AssertionError("the two topics' data differ")
        print(f"produced {args.records:,} records over {args.keys:,} keys (+{len(range(0, args.keys, 10)):,} "
              f"tombstones, 2 transactions) to each of 2 topics in {time.monotonic() - started:.0f} s", flush=True)
        spark, spark_pid, spark_start_s = spark_session(args.spark_memory)
        try:
            exact = run_exact(kafka, spark, spark_pid, exact_topic)
            exact.problems += audit_problems(kafka, spark, exact_topic)
        finally:
            spark.stop()
        print(f"exact: plan {exact.plan_seconds:.1f} s + apply {exact.apply_seconds:.1f} s; verifying", flush=True)
        exact.records_after, problems = verify(kafka.bootstrap_servers, exact_topic, latest)
        exact.problems += problems
        print(f"load average {os.getloadavg()[0]:.2f}; ordinary compaction ...", flush=True)
        ordinary = run_ordinary(kafka, ordinary_topic)
        print(f"ordinary: {ordinary.rounds} rounds in {ordinary.seconds:.1f} s; verifying", flush=True)
        ordinary.records_after, problems = verify(kafka.bootstrap_servers, ordinary_topic, latest)
        ordinary.problems += problems
    finally:
        kafka.stop()
    print(f"\n{args.records:,} records over {args.keys:,} keys, {args.value_bytes} B values, map of ~3,400 keys "
          f"(1 MiB + 1 dedupe buffer, load factor 0.05); load average at the end {os.getloadavg()[0]:.2f}\n")
    print(report(exact, ordinary, spark_start_s))
    if not args.no_record:
        exact_s = exact.plan_seconds + exact.apply_seconds
        shape = f"{args.records:,} records, {args.keys:,} keys"
        problem_counts = f"; problems: exact {len(exact.problems)}, ordinary {len(ordinary.problems)}"
        append_results([
            result("exact-compaction", f"exact round time vs ordinary rounds ({shape})", exact_s, "s",
                   note=f"ordinary: {ordinary.rounds} rounds in {ordinary.seconds:.1f} s{problem_counts}"),
            result("exact-compaction", f"speed-up of exact over ordinary compaction ({shape})",
                   ordinary.seconds / exact_s if exact_s > 0 else float("nan"), "x"),
            result("exact-compaction", f"cleaner bytes written, ordinary / exact ({shape})",
                   ordinary.cleaner_bytes_written / max(1, exact.cleaner_bytes_written), "x")])
    for outcome in (exact, ordinary):
        for problem in outcome.problems:
            print(f"{outcome.name}: PROBLEM: {problem}")
    if exact.problems or ordinary.problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

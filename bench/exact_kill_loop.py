"""kill -9 during an exact compaction round (issue 10): nothing acknowledged lost, nothing superseded reappears.

    .venv/bin/python -m bench.exact_kill_loop [--iterations 100] [--keys 20000] [--records 4000] [--seed 1]
        [--max-kill-delay-ms 500] [--max-minutes 60] [--work-dir DIR]

One broker (`minikafka.testing.MiniKafka`) with the tiny offset map of bench/exact_compaction.py (~3,400 keys, the
periodic cleaner idle: `log.cleaner.backoff.ms` of a day) and one compacted partition (256 KiB segments, so a
round swaps many groups; `delete.retention.ms` 2 s, so tombstones are stamped and removed along the way). The
plan is computed in PURE PYTHON, not Spark: a read_committed confluent-kafka consumer reads [log start,
`exact_end_offset_limit`) (from `GET /admin/cleaner-state`) and `tests.cleaner.retained_offset_plans`
(`latest_offsets`, `write_plan`) keeps each key's highest offset, in the broker's plan format — the rule and the
file format of the Spark job (pipeline/exact_plan.py), far faster for a loop. Each iteration:

1. produce `--records` records (idempotent producer, acks=all; ~5% tombstones; the version, a run-wide counter,
   rides in a header) over `--keys` keys, and in half the iterations one transaction of 20 records (committed
   with probability 0.6, else aborted);
2. compute the plan of [log start, limit); in a quarter of the iterations submit instead the plan computed in the
   previous iteration (made before the last kill, restart and full compaction: a very late plan);
3. start a background producer (~2,000 records/s, acks=all) so the plan is late relative to new appends, then
   `POST /admin/compact?topic=T&partition=0&exact=true` with the plan as body WITHOUT wait;
4. after a random 0-`--max-kill-delay-ms` ms, SIGKILL the broker; restart it on the same data dir (the background
   producer's queued records are retried into the restarted broker), stop the producer;
5. check A (right after the restart, nothing compacted since): the whole partition read from offset 0 with a
   read_committed consumer to the end (the log is readable end to end) and `bench.crash_checks.CompactedLogModel`:
   per key versions increase with the offset, every key's latest acknowledged version (or a later one, or its
   absence after a later tombstone) is there, nothing absent at the previous check reappears, below the
   `cleaner-offset-checkpoint` each key appears at most once; and no record of an aborted transaction is visible;
6. check B: a completed compaction (an exact round with a fresh plan and wait=true, or in every 4th iteration the
   ordinary manual compaction, `POST /admin/compact?wait=true`), then the same checks and, strictly, every key at
   most once in the whole partition (nothing is produced meanwhile, so the plan's end is the log end).

Kills are classified from the broker log written since the submission: before the exact round began (no
"Beginning exact cleaning" line), inside the round (begun, no statistics block) — and of those, after at least one
group was swapped in — or after the round finished. Exit status 1 on any violation (the broker's data dir is kept
under --work-dir, or printed). `--sabotage-plan` (checker sensitivity) leaves every 100th offset out of the killed
round's plan: a wrong plan the broker cannot detect (DESIGN.md: the group-by is trusted), so the checks must report
lost acknowledged values.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.crash_checks import CompactedLogModel, CompactedRecord, read_cleaner_checkpoint
from bench.machine import machine_description
from bench.results_log import append_results, result
from minikafka.testing import MiniKafka
from tests.cleaner.retained_offset_plans import latest_offsets, write_plan

TOPIC = "exact-crash"
BROKER_CONFIG: dict[str, str | int] = {
    "log.cleaner.dedupe.buffer.size": 1024 * 1024 + 1,
    "log.cleaner.io.buffer.load.factor": "0.05",
    "log.cleaner.backoff.ms": 86_400_000,
    "auto.create.topics.enable": "false",
    "transaction.state.log.num.partitions": 1,
    "offsets.topic.num.partitions": 1,
    "log.flush.offset.checkpoint.interval.ms": 500,
}
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": str(256 * 1024), "min.cleanable.dirty.ratio": "0.99",
                "delete.retention.ms": "2000", "min.compaction.lag.ms": "0"}
VALUE = b"x" * 200


@dataclass
class Plan:
    path: Path
    start: int
    end: int
    count: int
    made_in_iteration: int


@dataclass
class Report:
    iterations: int = 0
    kills_before_round: int = 0
    kills_inside_round: int = 0
    kills_inside_after_a_swap: int = 0
    kills_after_round: int = 0
    late_plans_submitted: int = 0
    refused: list[str] = field(default_factory=list)
    exact_full: int = 0
    ordinary_full: int = 0
    ordinary_rounds: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    violations: list[str] = field(default_factory=list)


class Workload:
    """Writes with versions, and the model of what a correct partition holds (touched under `lock`)."""

    def __init__(self, keys: int, rng: random.Random) -> None:
        self.keys = keys
        self.rng = rng
        self.model = CompactedLogModel(TOPIC)
        self.version = 0
        self.aborted: set[tuple[str, int]] = set()
        self.delivery_errors: list[str] = []
        self.lock = threading.Lock()

    def next_record(self) -> tuple[str, int, bool]:
        with self.lock:
            self.version += 1
            key, version = f"k{self.rng.randrange(self.keys)}", self.version
            tombstone = self.rng.random() < 0.05
            self.model.record_write(key, version, tombstone=tombstone)
        return key, version, tombstone

    def producer(self, bootstrap: str) -> Any:
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 10_000, "batch.size": 64 * 1024, "log_level": 2})

    def send(self, producer: Any, key: str, version: int, tombstone: bool) -> None:
        def on_delivery(err: Any, _msg: Any) -> None:
            with self.lock:
                if err is None:
                    self.model.record_ack(key, version)
                else:
                    self.delivery_errors.append(str(err))

        while True:
            try:
                producer.produce(TOPIC, key=key.encode(), value=None if tombstone else VALUE,
                                 headers=[("v", b"%d" % version)], on_delivery=on_delivery)
                return
            except BufferError:
                producer.poll(0.05)

    def produce(self, bootstrap: str, count: int) -> None:
        producer = self.producer(bootstrap)
        self.delivery_errors.clear()
        for _ in range(count):
            self.send(producer, *self.next_record())
            producer.poll(0)
        if producer.flush(30) != 0 or self.delivery_errors:
            raise RuntimeError(f"records undelivered with the broker up: {self.delivery_errors[:3]}")

    def transaction(self, bootstrap: str, commit: bool) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "exact-crash-txn", "linger.ms": 5,
                             "batch.size": 64 * 1024, "log_level": 2})
        producer.init_transactions(30)
        producer.begin_transaction()
        written: list[tuple[str, int]] = []
        for _ in range(20):
            with self.lock:
                self.version += 1
                key, version = f"k{self.rng.randrange(self.keys)}", self.version
                self.model.record_write(key, version, tombstone=False)
            written.append((key, version))
            producer.produce(TOPIC, key=key.encode(), value=b"txn", headers=[("v", b"%d" % version)])
        if producer.flush(30) != 0:
            raise RuntimeError("transactional records undelivered")
        if commit:
            producer.commit_transaction(30)
            with self.lock:
                for key, version in written:
                    self.model.record_ack(key, version)
        else:
            producer.abort_transaction(30)
            with self.lock:
                self.aborted.update(written)


class BackgroundProducer(threading.Thread):
    """Produces at ~`rate` records/s until `stop` is set, then flushes (the broker may be restarting meanwhile)."""

    def __init__(self, workload: Workload, bootstrap: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.workload, self.bootstrap, self.rate = workload, bootstrap, rate
        self.stop_event = threading.Event()
        self.undelivered = 0

    def run(self) -> None:
        producer = self.workload.producer(self.bootstrap)
        step = 20
        while not self.stop_event.is_set():
            for _ in range(step):
                self.workload.send(producer, *self.workload.next_record())
            producer.poll(0)
            self.stop_event.wait(step / self.rate)
        self.undelivered = producer.flush(30)


def _version(header: str | bytes | None) -> int:
    if header is None:
        raise RuntimeError("a record without its version header")
    return int(header)


def read_partition(bootstrap: str, high_timeout_s: float = 120) -> list[tuple[int, str, int, bool]]:
    """(offset, key, version, tombstone) of every record from offset 0 to the end, read_committed; raises if the
    end is not reached (the log must be readable end to end)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 50,
                         "isolation.level": "read_committed", "log_level": 2})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=20)
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        got: list[tuple[int, str, int, bool]] = []
        deadline = time.monotonic() + high_timeout_s
        while time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.2):
                error = msg.error()
                if error is None:
                    headers = dict(msg.headers() or [])
                    got.append((int(msg.offset() or 0), (msg.key() or b"").decode(), _version(headers.get("v")),
                                msg.value() is None))
                elif error.code() == KafkaError._PARTITION_EOF:
                    position = consumer.position([TopicPartition(TOPIC, 0)])[0].offset
                    if 0 <= position < high:
                        raise RuntimeError(f"end of partition at {position}, below the high watermark {high}")
                    return got
                else:
                    raise RuntimeError(f"consumer error: {error}")
        raise RuntimeError(f"the partition was not read to its end ({high}) in {high_timeout_s} s")
    finally:
        consumer.close()


def admin_json(url: str, data: bytes | None = None, timeout_s: float = 600) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def make_plan(kafka: MiniKafka, directory: Path, iteration: int, name: str = "plan", sabotage: bool = False) -> Plan:
    """The plan of [log start, exact_end_offset_limit), from a read_committed consumer (pure Python). `sabotage`
    leaves out every 100th offset but the last (a wrong plan the broker cannot detect: the checks must)."""
    _, state = admin_json(f"{kafka.admin_url}/admin/cleaner-state?topic={TOPIC}")
    [entry] = state["partitions"]
    start, end = int(entry["log_start_offset"]), int(entry["exact_end_offset_limit"])
    offsets = latest_offsets((offset, key.encode()) for offset, key, _v, _t in read_partition(kafka.bootstrap_servers)
                             if start <= offset < end)
    if sabotage:
        offsets = [o for i, o in enumerate(offsets) if i % 100 != 1 or i == len(offsets) - 1]
    path = directory / f"{name}-{iteration}"
    write_plan(path, uuid.UUID(hex=state["topic_id_hex"]).bytes, 0, start, end, offsets)
    return Plan(path, start, end, len(offsets), iteration)


def submit(kafka: MiniKafka, plan: Plan, wait: bool) -> tuple[int, dict[str, Any]]:
    query = {"topic": TOPIC, "partition": "0", "exact": "true"}
    if wait:
        query.update(wait="true", timeout_ms="600000")
    return admin_json(f"{kafka.admin_url}/admin/compact?{urllib.parse.urlencode(query)}", plan.path.read_bytes())


def check(workload: Workload, kafka: MiniKafka, label: str, strict_once: bool) -> list[str]:
    cleaned_up_to = read_cleaner_checkpoint(kafka.data_dir, TOPIC, 0)  # before the read: cleaning only removes
    try:
        rows = read_partition(kafka.bootstrap_servers)
    except RuntimeError as exc:
        return [f"{label}: log not readable end to end: {exc}"]
    records = [CompactedRecord(offset, key, version, tombstone) for offset, key, version, tombstone in rows]
    with workload.lock:
        failures = workload.model.check(records, cleaned_up_to, label=f"{label}: ")
        visible_aborted = [r for r in records if (r.key, r.version) in workload.aborted]
    if visible_aborted:
        failures.append(f"{label}: {len(visible_aborted)} records of aborted transactions visible, e.g. "
                        f"{visible_aborted[:3]}")
    if strict_once:
        counts = Counter(r.key for r in records)
        repeated = [(k, n) for k, n in counts.items() if n > 1]
        if repeated:
            failures.append(f"{label}: after a completed compaction {len(repeated)} keys appear more than once, "
                            f"e.g. {repeated[:5]}")
    return failures


def classify(log_text: str, report: Report) -> str:
    begin = log_text.rfind("Beginning exact cleaning of log")
    if begin < 0:
        report.kills_before_round += 1
        return "before the round"
    if "cleaned log" in log_text[begin:]:
        report.kills_after_round += 1
        return "after the round"
    report.kills_inside_round += 1
    if "Swapping in cleaned segment" in log_text[begin:]:
        report.kills_inside_after_a_swap += 1
        return "inside the round, after a swap"
    return "inside the round"


def run(args: argparse.Namespace, work_dir: Path) -> Report:
    rng = random.Random(args.seed)
    report = Report()
    data_dir = work_dir / "data"
    plans_dir = work_dir / "plans"
    plans_dir.mkdir(parents=True, exist_ok=True)
    kafka = MiniKafka(BROKER_CONFIG, data_dir=data_dir).start()
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers, "log_level": 2})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIG)])[TOPIC].result(30)
    workload = Workload(args.keys, rng)
    workload.produce(kafka.bootstrap_servers, args.keys * 2)
    previous_plan: Plan | None = None
    deadline = time.monotonic() + args.max_minutes * 60
    started = time.monotonic()
    try:
        for iteration in range(1, args.iterations + 1):
            if time.monotonic() > deadline:
                break
            workload.produce(kafka.bootstrap_servers, args.records)
            if rng.random() < 0.5:
                commit = rng.random() < 0.6
                workload.transaction(kafka.bootstrap_servers, commit)
                if commit:
                    report.transactions_committed += 1
                else:
                    report.transactions_aborted += 1
            fresh = make_plan(kafka, plans_dir, iteration, sabotage=args.sabotage_plan)
            plan = fresh
            if previous_plan is not None and rng.random() < 0.25:
                plan = previous_plan
                report.late_plans_submitted += 1
            background = BackgroundProducer(workload, kafka.bootstrap_servers, args.background_rate)
            background.start()
            time.sleep(0.05)
            log_offset = kafka.log_path.stat().st_size
            status, reply = submit(kafka, plan, wait=False)
            if status >= 400:
                report.refused.append(f"iteration {iteration}: {status} {reply.get('error')}")
            time.sleep(rng.uniform(0, args.max_kill_delay_ms / 1000))
            kafka.kill()
            background.stop_event.set()
            with open(kafka.log_path, "rb") as log:
                log.seek(log_offset)
                where = classify(log.read().decode(errors="replace"), report)
            kafka.start()
            background.join(60)
            report.iterations += 1
            label = f"iteration {iteration} (killed {where}, plan of iteration {plan.made_in_iteration} " \
                    f"[{plan.start}, {plan.end}) {plan.count} offsets)"
            failures = check(workload, kafka, f"{label}, after restart", strict_once=False)
            if iteration % 4 == 0:
                status, reply = admin_json(f"{kafka.admin_url}/admin/compact?topic={TOPIC}&wait=true&"
                                           "timeout_ms=600000", b"")
                report.ordinary_full += 1
                report.ordinary_rounds += sum(r["rounds"] for r in reply.get("results", []))
                how = "ordinary compaction"
            else:
                full = make_plan(kafka, plans_dir, iteration, "full")
                status, reply = submit(kafka, full, wait=True)
                report.exact_full += 1
                how = "a completed exact round"
                full.path.unlink()
            if status != 200 or reply.get("results", [{}])[0].get("status") != "cleaned":
                failures.append(f"{label}: {how} did not complete: {status} {json.dumps(reply)[:400]}")
            failures += check(workload, kafka, f"{label}, after {how}", strict_once=True)
            if previous_plan is not None and previous_plan is not plan:
                previous_plan.path.unlink(missing_ok=True)
            if plan is not fresh:
                plan.path.unlink(missing_ok=True)
            previous_plan = fresh
            report.violations += failures
            if iteration % 10 == 0 or failures:
                print(f"[{time.monotonic() - started:5.0f}s] iteration {iteration}: kills before/inside(after a "
                      f"swap)/after the round {report.kills_before_round}/{report.kills_inside_round}"
                      f"({report.kills_inside_after_a_swap})/{report.kills_after_round}, acks {workload.model.acks:,}, "
                      f"violations {len(report.violations)}; load {os.getloadavg()[0]:.1f}", flush=True)
            if failures and not args.keep_going:
                break
    finally:
        kafka.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=4_000, help="records produced per iteration before the plan")
    parser.add_argument("--background-rate", type=float, default=2_000.0, help="records/s during the round")
    parser.add_argument("--max-kill-delay-ms", type=float, default=500.0)
    parser.add_argument("--max-minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sabotage-plan", action="store_true",
                        help="checker sensitivity: submit plans missing every 100th offset (must be reported)")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the first violation")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the data dir and broker log here")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/results.jsonl")
    args = parser.parse_args()
    print(f"machine: {machine_description()}; load average {os.getloadavg()[0]:.2f}", flush=True)
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="minikafka-exact-kill-"))
    started = time.monotonic()
    report = run(args, work_dir)
    print(f"\niterations: {report.iterations}; kills before the exact round began: {report.kills_before_round}, "
          f"inside it: {report.kills_inside_round} (after >= 1 swapped group: {report.kills_inside_after_a_swap}), "
          f"after it finished: {report.kills_after_round}; late plans (previous iteration's): "
          f"{report.late_plans_submitted}; plans refused: {len(report.refused)}; completed compactions checked: "
          f"{report.exact_full} exact, {report.ordinary_full} ordinary ({report.ordinary_rounds} rounds); "
          f"transactions {report.transactions_committed} committed / {report.transactions_aborted} aborted; "
          f"{time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.2f}")
    for refused in report.refused[:10]:
        print(f"  refused: {refused}")
    if not args.no_record and not args.sabotage_plan:
        append_results([result(
            "exact-kill-loop", f"violations after {report.iterations} kill -9s", len(report.violations),
            "violations", note=f"{report.kills_inside_round} kills inside an exact round, "
                               f"{report.late_plans_submitted} late plans")])
    if report.violations:
        print(f"VIOLATIONS ({len(report.violations)}), data dir kept in {work_dir}:\n  " +
              "\n  ".join(report.violations[:30]))
        raise SystemExit(1)
    if args.work_dir is None:
        shutil.rmtree(work_dir, ignore_errors=True)
    print("OK: nothing acknowledged lost, no aborted record visible, nothing superseded reappeared, one record per "
          "key after every completed compaction")


if __name__ == "__main__":
    main()

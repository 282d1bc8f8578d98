"""Share-group consumption side by side (issue 23): records/s and broker CPU seconds per GB of 1 KiB records
consumed by 1 and 4 confluent-kafka ShareConsumers of one partition with explicit ACCEPT, minikafka and Apache
Kafka 4.3.1 with the same client and workload.

    .venv/bin/python -m bench.share_throughput [--records 100000] [--consumers 1 4] [--brokers minikafka apache]
        [--rounds 3] [--warm-up-rounds 1] [--no-record]

Both brokers run at once. Each round runs every consumer count on each broker in turn (interleaved, so a change
in the machine's load hits both), after a warm-up round that is not counted (Kafka's JIT: its second round is
faster); the medians over the rounds are compared and, unless --no-record, appended to bench/results/results.jsonl
and bench/results/HISTORY.md. Per broker, consumer count and round: a fresh topic and share group; the consumers
warm up (markers until each received one: both brokers start a share partition at `latest`), stop polling,
`--records` records are produced, then the clock and the broker's CPU reading (its process tree, /proc) run while
the consumers poll, ACCEPT and commit until every record was accepted once. Prints one line per run; records
delivered twice are counted and reported.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.proc_cpu import ProcessTreeCpu, cpu_seconds_per_gb
from bench.results_log import HISTORY_MD, RESULTS_FILE, append_history, append_results, history_header, result

RECORD_BYTES = 1024


def run(bootstrap: str, pid: int, records: int, consumers: int) -> dict[str, Any]:
    from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = f"share-bench-{uuid.uuid4().hex[:8]}", f"sg-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    members = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"}) for _ in range(consumers)]
    for member in members:
        member.subscribe([topic])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000, "acks": 1})
    warm: set[int] = set()
    deadline = time.monotonic() + 120
    while len(warm) < consumers:
        assert time.monotonic() < deadline, "share consumers never received a record"
        producer.produce(topic, b"marker", partition=0)
        producer.flush(10)
        for index, member in enumerate(members):
            for message in member.poll(0.3):
                warm.add(index)
                member.acknowledge(message, AcknowledgeType.ACCEPT)
            member.commit_sync()
    for member in members:  # drain the markers
        for message in member.poll(1.0):
            member.acknowledge(message, AcknowledgeType.ACCEPT)
        member.commit_sync()
    value = os.urandom(RECORD_BYTES)
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    seen: list[int] = [0] * consumers
    duplicates = [0]
    offsets: set[int] = set()
    lock = threading.Lock()
    done = threading.Event()

    def consume(index: int) -> None:
        member = members[index]
        while not done.is_set():
            for message in member.poll(0.5):
                if message.error() is not None or message.value() == b"marker":
                    member.acknowledge(message, AcknowledgeType.ACCEPT)
                    continue
                member.acknowledge(message, AcknowledgeType.ACCEPT)
                offset = int(message.offset() or 0)
                with lock:
                    if offset in offsets:
                        duplicates[0] += 1
                    offsets.add(offset)
                    seen[index] += 1
                    if len(offsets) >= records:
                        done.set()
            member.commit_sync()

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(consumers)]
    with ProcessTreeCpu(pid) as cpu:
        started = time.monotonic()
        for thread in threads:
            thread.start()
        done.wait(600)
        elapsed = time.monotonic() - started
    done.set()
    for thread in threads:
        thread.join(30)
    for member in members:
        member.close()
    return {"records": len(offsets), "seconds": elapsed, "records_per_s": len(offsets) / elapsed,
            "cpu_s_per_gb": cpu_seconds_per_gb(cpu.seconds, len(offsets) * RECORD_BYTES),
            "per_consumer": seen, "duplicates": duplicates[0]}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(runs: dict[tuple[str, int], list[dict[str, Any]]], consumer_counts: list[int],
           brokers: list[str]) -> tuple[str, list[str]]:
    """A Markdown table of every round and the medians, and one verdict line per consumer count."""
    lines = ["| consumers | round | broker | records/s | CPU-s/GB | per consumer | duplicates |",
             "|---|---|---|---|---|---|---|"]
    verdicts = []
    for consumers in consumer_counts:
        for broker in brokers:
            for index, run_result in enumerate(runs.get((broker, consumers), []), start=1):
                lines.append(f"| {consumers} | {index} | {broker} | {run_result['records_per_s']:,.0f} | "
                             f"{run_result['cpu_s_per_gb']:.2f} | {run_result['per_consumer']} | "
                             f"{run_result['duplicates']} |")
        medians = {broker: (_median([r["records_per_s"] for r in runs.get((broker, consumers), [])]),
                            _median([r["cpu_s_per_gb"] for r in runs.get((broker, consumers), [])]))
                   for broker in brokers}
        for broker, (rate, cpu) in medians.items():
            lines.append(f"| {consumers} | median | {broker} | {rate:,.0f} | {cpu:.2f} | | |")
        if {"minikafka", "apache"} <= set(medians):
            (mk_rate, mk_cpu), (ak_rate, ak_cpu) = medians["minikafka"], medians["apache"]
            met = mk_rate >= ak_rate and mk_cpu <= ak_cpu
            verdicts.append(f"{consumers} consumer(s): {mk_rate / ak_rate:.2f}x Kafka's records/s at "
                            f"{mk_cpu / ak_cpu:.2f}x its CPU-s/GB (medians) -> goal {'met' if met else 'NOT met'}")
    return "\n".join(lines), verdicts


def record(command: str, runs: dict[tuple[str, int], list[dict[str, Any]]], consumer_counts: list[int],
           table: str, verdicts: list[str], rounds: int, warm_up_rounds: int, records: int,
           load_before: float) -> None:
    """Append the figures to bench/results/results.jsonl and the write-up to bench/results/HISTORY.md."""
    append_history("\n".join([
        *history_header("Share group side by side (issue 23)", command, load_before),
        f"- one partition, {records:,} x {RECORD_BYTES} B records produced after the consumers warmed up; "
        "confluent-kafka ShareConsumers in explicit mode ACCEPT every record and commit after every poll; "
        f"both brokers up at once, {rounds} interleaved round(s) after {warm_up_rounds} uncounted warm-up "
        "round(s); broker CPU = its process tree's utime + stime "
        "over the consumption",
        *(f"- verdict: {line}" for line in verdicts),
        "",
        table,
        "",
    ]))
    results = []
    for consumers in consumer_counts:
        mk, ak = runs.get(("minikafka", consumers), []), runs.get(("apache", consumers), [])
        if not mk or not ak:
            continue
        case = f"{consumers} consumer(s), median of {len(mk)}"
        results.append(result("share-throughput", f"records/s, {case}",
                              _median([r["records_per_s"] for r in mk]), "records/s",
                              _median([r["records_per_s"] for r in ak]), command=command))
        results.append(result("share-throughput", f"broker CPU-s/GB, {case}",
                              _median([r["cpu_s_per_gb"] for r in mk]), "CPU-s/GB",
                              _median([r["cpu_s_per_gb"] for r in ak]), command=command))
    append_results(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--consumers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--brokers", nargs="+", default=["minikafka", "apache"])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per broker and consumer count")
    parser.add_argument("--warm-up-rounds", type=int, default=1,
                        help="rounds run first and not counted (Kafka's JIT warms up: its second round is faster)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    with contextlib.ExitStack() as stack:
        servers: dict[str, tuple[str, int]] = {}
        for broker in args.brokers:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"share-bench-{broker}-")))
            if broker == "minikafka":
                from minikafka.testing import MiniKafka

                mini = stack.enter_context(MiniKafka(data_dir=work / "data"))
                assert mini.pid is not None
                servers[broker] = (mini.bootstrap_servers, mini.pid)
            else:
                from bench.apache_kafka import ApacheKafka
                from bench.kafka_jars import ensure_kafka_jars

                apache = stack.enter_context(ApacheKafka(work, lib_dir=ensure_kafka_jars()))
                assert apache.process is not None
                servers[broker] = (apache.bootstrap, int(apache.process.pid))
        for round_number in range(1 - args.warm_up_rounds, args.rounds + 1):
            for consumers in args.consumers:
                for broker, (bootstrap, pid) in servers.items():
                    run_result = run(bootstrap, pid, args.records, consumers)
                    if round_number > 0:
                        runs.setdefault((broker, consumers), []).append(run_result)
                    label = round_number if round_number > 0 else "warm-up"
                    print(f"round {label} {broker:10s} consumers={consumers} records={run_result['records']} "
                          f"records/s={run_result['records_per_s']:.0f} cpu-s/GB={run_result['cpu_s_per_gb']:.2f} "
                          f"per-consumer={run_result['per_consumer']} duplicates={run_result['duplicates']}",
                          flush=True)
    table, verdicts = report(runs, args.consumers, args.brokers)
    print(table)
    print("\n".join(verdicts))
    if not args.no_record and {"minikafka", "apache"} <= set(args.brokers):
        command = "python -m bench.share_throughput " + shlex.join(argv if argv is not None else sys.argv[1:])
        record(command.strip(), runs, args.consumers, table, verdicts, args.rounds, args.warm_up_rounds, args.records,
               load_before)
        print(f"appended to {HISTORY_MD} and {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Produce latency of minikafka with the cleaner idle vs. busy on another topic (issue 4 item 3).

    .venv/bin/python -m bench.produce_latency [--records 1000000] [--rate 200] [--idle-seconds 20]
        [--cleaner-threads 1] [--no-record]

A real broker subprocess (tests/broker_process.py). First a compacted topic `busy` is loaded with `--records`
records over `--records / 10` keys (100 B values, 5% tombstones) with `min.cleanable.dirty.ratio=1.0`, so the
cleaner leaves it alone. Then one raw-socket client sends Produce v9, acks=1, one 100-byte record per request,
to the delete-policy topic `latency` at a fixed request rate (open loop: request i is due at t0 + i / rate and
its latency is measured from that due time, so a stalled broker is not hidden by a client that waits),
- idle: for `--idle-seconds` with nothing to clean;
- cleaning: while `POST /admin/compact?topic=busy&wait=true` runs on the cleaner threads (the whole window of
  the compaction, however long it takes).
p50 / p99 / p99.9 / max of each phase are printed and appended to bench/results/ (results.jsonl, HISTORY.md) with
the command and machine.
The cleaner threads starve the event loop if the cleaning-phase p99 is far above idle (the cleaner runs as
Python threads in the broker process and competes for the GIL).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka.protocol.producer.produce import ProduceRequest

from bench.results_log import HISTORY_MD, append_history, append_results, history_header, result
from minikafka.protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

BENCHMARKS_MD = HISTORY_MD  # the Markdown write-ups; the figures go to bench/results/results.jsonl
BUSY_TOPIC = "busy"
LATENCY_TOPIC = "latency"
VALUE = b"x" * 100


@dataclass
class Phase:
    """Latencies (ms, from each request's due time) of one measured phase."""

    name: str
    latencies_ms: list[float] = field(default_factory=list)
    #: send-to-response times (ms), without the wait behind earlier late requests
    service_ms: list[float] = field(default_factory=list)
    late_sends: int = 0
    seconds: float = 0.0
    note: str = ""

    def percentile(self, fraction: float, service: bool = False) -> float:
        ordered = sorted(self.service_ms if service else self.latencies_ms)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def row(self) -> str:
        return (
            f"| {self.name} | {len(self.latencies_ms):,} | {self.seconds:.1f} | {self.percentile(0.5):.2f} | "
            f"{self.percentile(0.99):.2f} | {self.percentile(0.999):.2f} | {max(self.latencies_ms):.2f} | "
            f"{self.percentile(0.99, service=True):.2f} | {self.late_sends:,} | {self.note} |"
        )


class LatencyProbe:
    """One connection producing one small record per request at a fixed rate. Not thread-safe."""

    def __init__(self, bootstrap: str, rate_per_s: float, topic: str = LATENCY_TOPIC) -> None:
        self.client = WireClient(bootstrap, timeout_s=30)
        self.topic = topic
        self.interval_s = 1.0 / rate_per_s
        self.sequence = 0

    def _request(self) -> Any:
        self.sequence += 1
        batch = build_batch(
            [Record(offset=0, timestamp=int(time.time() * 1000), key=b"%d" % self.sequence, value=VALUE)],
            base_offset=0,
        )
        data = ProduceRequest.TopicProduceData
        return ProduceRequest[9](
            transactional_id=None,
            acks=1,
            timeout_ms=30_000,
            topic_data=[
                data(name=self.topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])
            ],
        )

    def run(self, phase: Phase, until: Any) -> Phase:
        """Send at the fixed rate until `until()` is true; record each latency from the request's due time."""
        started = time.perf_counter()
        due = started
        while not until():
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)
            elif now - due > self.interval_s:
                phase.late_sends += 1
            request = self._request()
            sent = time.perf_counter()
            response = self.client.request(request)
            done = time.perf_counter()
            code = response.responses[0].partition_responses[0].error_code
            if code != 0:
                raise RuntimeError(f"produce failed with error {code}")
            phase.latencies_ms.append((done - due) * 1000)
            phase.service_ms.append((done - sent) * 1000)
            due += self.interval_s
        phase.seconds = time.perf_counter() - started
        return phase

    def close(self) -> None:
        self.client.close()


def create_topic(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=30)


def load_busy_topic(bootstrap: str, records: int, seed: int) -> float:
    """Produce the data the cleaner will chew on; returns seconds taken."""
    from confluent_kafka import Producer

    keys = max(records // 10, 1)
    rng = random.Random(seed)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    started = time.monotonic()
    for i in range(records):
        key = b"key-%08d" % rng.randrange(keys)
        value = None if rng.random() < 0.05 else b"%08d" % i + VALUE[:92]
        while True:
            try:
                producer.produce(BUSY_TOPIC, key=key, value=value)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300) != 0:
        raise RuntimeError("loading the busy topic did not finish")
    return time.monotonic() - started


def compact(admin_url: str, result: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{admin_url}/admin/compact?topic={BUSY_TOPIC}&wait=true&timeout_ms=3600000", method="POST"
    )
    with urllib.request.urlopen(request, timeout=3600) as response:
        result.update(json.loads(response.read()))


def measure(
    records: int, rate: float, idle_s: float, cleaner_threads: int, seed: int
) -> tuple[list[Phase], str]:
    with tempfile.TemporaryDirectory(prefix="produce-latency-") as work:
        broker = BrokerProcess(
            Path(work) / "data",
            {
                "log.cleaner.threads": str(cleaner_threads),
                "log.cleaner.backoff.ms": "100",
                "log.cleaner.dedupe.buffer.size": str(64 * 1024 * 1024),
            },
        )
        broker.start()
        try:
            create_topic(broker.bootstrap, LATENCY_TOPIC, {"cleanup.policy": "delete"})
            create_topic(
                broker.bootstrap,
                BUSY_TOPIC,
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(8 << 20),
                    "min.cleanable.dirty.ratio": "1.0",
                },
            )
            load_s = load_busy_topic(broker.bootstrap, records, seed)
            print(f"loaded {records:,} records into {BUSY_TOPIC!r} in {load_s:.1f}s", flush=True)
            probe = LatencyProbe(broker.bootstrap, rate)
            try:
                warm_until = time.monotonic() + 3
                probe.run(Phase("warm-up"), lambda: time.monotonic() > warm_until)
                idle_until = time.monotonic() + idle_s
                idle = probe.run(
                    Phase("idle", note="nothing to clean"), lambda: time.monotonic() > idle_until
                )
                print(idle.row(), flush=True)
                result: dict[str, Any] = {}
                worker = threading.Thread(
                    target=compact, args=(f"http://127.0.0.1:{broker.metrics_port}", result)
                )
                worker.start()
                cleaning = probe.run(Phase("cleaning"), lambda: not worker.is_alive())
                worker.join()
                cleaning.note = (
                    f"compacting {BUSY_TOPIC}-0: {result.get('records_removed', 0):,} records / "
                    f"{result.get('bytes_removed', 0) / 1e6:.1f} MB removed"
                )
                print(cleaning.row(), flush=True)
            finally:
                probe.close()
            stats = [
                line.strip()
                for line in broker.read_log().splitlines()
                if "processed in" in line or "cleaned log" in line
            ]
            return [idle, cleaning], "\n".join(stats)
        finally:
            broker.stop()


def verdict(idle: Phase, cleaning: Phase) -> str:
    idle_p99, busy_p99 = idle.percentile(0.99), cleaning.percentile(0.99)
    ratio = busy_p99 / idle_p99 if idle_p99 > 0 else float("inf")
    starved = busy_p99 > 2 * idle_p99 + 2.0
    return f"p99 cleaning / idle = {ratio:.1f}x ({busy_p99:.2f} ms vs {idle_p99:.2f} ms): " + (
        "the cleaner threads DO starve the event loop (GIL contention in the broker process); moving the "
        "heavy passes into worker processes is indicated"
        if starved
        else "the cleaner threads do not starve the event loop at this request rate"
    )


def render(phases: list[Phase]) -> str:
    lines = [
        "| phase | requests | seconds | p50 ms | p99 ms | p99.9 ms | max ms | service p99 ms | late sends "
        "| note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    return "\n".join(lines + [phase.row() for phase in phases])


def record(command: str, args: argparse.Namespace, table: str, summary: str, stats: str) -> None:
    section = [
        *history_header("Produce latency, cleaner idle vs. cleaning", command),
        f"- one minikafka broker subprocess, log.cleaner.threads={args.cleaner_threads}; probe: one "
        f"connection, Produce v9 acks=1, one 100 B record per request, {args.rate:g} requests/s open loop, "
        "latency from each request's due time (service p99: from the actual send); cleaning = the whole "
        "window of a manual compaction of "
        f"topic `{BUSY_TOPIC}` ({args.records:,} records, {args.records // 10:,} keys, 100 B values, 5% "
        "tombstones) on the cleaner threads",
        f"- verdict: {summary}",
        "",
        table,
        "",
        "<details><summary>cleaner log lines</summary>",
        "",
        "```",
        stats,
        "```",
        "</details>",
        "",
    ]
    append_history("\n".join(section))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records loaded into the busy topic")
    parser.add_argument("--rate", type=float, default=200.0, help="produce requests per second of the probe")
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--cleaner-threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    phases, stats = measure(args.records, args.rate, args.idle_seconds, args.cleaner_threads, args.seed)
    table = render(phases)
    summary = verdict(*phases)
    print(table)
    print(summary)
    if not args.no_record:
        command = "python -m bench.produce_latency " + shlex.join(argv if argv is not None else sys.argv[1:])
        record(command.strip(), args, table, summary, stats)
        idle, cleaning = phases
        append_results([
            result("produce-p99-while-cleaning", f"produce p99 while the cleaner runs, {args.rate:g} req/s",
                   cleaning.percentile(0.99), "ms", command=command.strip()),
            result("produce-p99-while-cleaning", f"produce p99 idle, {args.rate:g} req/s", idle.percentile(0.99),
                   "ms", command=command.strip())])
        print(f"appended to {BENCHMARKS_MD} and bench/results/results.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How closely a 1 MiB/s producer_byte_rate quota holds a producer, per 20 s window, on Apache Kafka and minikafka,
with Kafka's default `quota.window.num=11` and with 2.

    .venv/bin/python -m bench.quota_window [--seconds 70] [--windows 11,2] [--no-record]

For each broker and window count: a fresh broker with `quota.window.num` set, a 1 MiB/s `producer_byte_rate`
quota on one client id (AlterClientQuotas), then a confluent-kafka producer with that client id sending 10 kB
records as fast as it may for `--seconds`. The bytes acknowledged each second give, for every 20 s span starting
on a whole second (from the first second, and from the end of the first quota window), the span's rate as a
multiple of the quota: the issue's goal is a producer held within 10% of the quota over 20 s. Results are
appended to bench/results/ (results.jsonl, HISTORY.md) unless --no-record.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest

from bench.machine import machine_description
from bench.results_log import BenchResult, append_history, append_results, result
from bench.throughput import create_topic
from minikafka.testing import MiniKafka
from tests.apache_kafka import ApacheKafka
from tests.kafka_jars import KAFKA_VERSION, ensure_kafka_jars
from tests.wire_client import WireClient

QUOTA_BYTES_PER_S = 1_048_576
SPAN_S = 20
CLIENT_ID = "quota-bench"
TOPIC = "quota-bench"
RECORD = b"v" * 10_000


@contextmanager
def started(name: str, work: Path, window_num: int, lib_dir: Path) -> Iterator[str]:
    """A fresh broker with `quota.window.num=window_num`; yields its bootstrap."""
    properties = {"quota.window.num": str(window_num)}
    if name == "apache":
        with ApacheKafka(work / f"apache-{window_num}", lib_dir=lib_dir, properties=properties) as kafka:
            yield kafka.bootstrap
    else:
        with MiniKafka({**properties, "num.partitions": 1}) as kafka:
            yield kafka.bootstrap_servers


def set_quota(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.request(AlterClientQuotasRequest[1](
            entries=[([("client-id", CLIENT_ID)], [("producer_byte_rate", float(QUOTA_BYTES_PER_S), False)])],
            validate_only=False))
    if response.entries[0].error_code != 0:
        raise RuntimeError(f"AlterClientQuotas failed: {response.entries[0]}")


def acknowledged_per_second(bootstrap: str, seconds: int) -> tuple[list[int], list[int]]:
    """Run the producer for `seconds`; returns (bytes acknowledged in each second, throttle times reported in ms)."""
    from confluent_kafka import Producer

    per_second = [0] * (seconds + 1)
    throttles: list[int] = []
    lock = threading.Lock()
    started_s = time.monotonic()

    def on_delivery(error: Any, message: Any) -> None:
        if error is None:
            second = int(time.monotonic() - started_s)
            with lock:
                if second < len(per_second):
                    per_second[second] += len(message.value())

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": CLIENT_ID, "linger.ms": 5,
                         "batch.size": 65_536, "queue.buffering.max.kbytes": 2048, "on_delivery": on_delivery,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    producer.list_topics(timeout=10)
    started_s = time.monotonic()
    while time.monotonic() - started_s < seconds:
        try:
            producer.produce(TOPIC, RECORD)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    with lock:
        counted = per_second[:seconds]
    producer.purge()
    producer.flush(5)
    return counted, throttles


def span_rates(per_second: list[int], first_second: int) -> list[float]:
    """The rate of every SPAN_S-second span starting at `first_second` or later, as a multiple of the quota."""
    return [sum(per_second[start:start + SPAN_S]) / SPAN_S / QUOTA_BYTES_PER_S
            for start in range(first_second, len(per_second) - SPAN_S + 1)]


def describe(rates: list[float]) -> str:
    if not rates:
        return "n/a"
    within = sum(1 for rate in rates if abs(rate - 1.0) <= 0.1)
    return (f"{min(rates):.2f} / {statistics.median(rates):.2f} / {max(rates):.2f}; "
            f"{within} of {len(rates)} within 10%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quota_window", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=70)
    parser.add_argument("--windows", default="11,2", help="comma-separated quota.window.num values")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    command = "python -m bench.quota_window " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    lib_dir = ensure_kafka_jars()
    rows = ["| broker | quota.window.num | 20 s spans from the start: min / median / max x quota | "
            "20 s spans after the first quota window | throttles reported | whole run x quota |",
            "|---|---:|---|---|---:|---:|"]
    started_s = time.monotonic()
    spans: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="minikafka-quota-bench-") as work_dir:
        for window_num in (int(value) for value in args.windows.split(",")):
            for name in ("apache", "minikafka"):
                with started(name, Path(work_dir), window_num, lib_dir) as bootstrap:
                    create_topic(bootstrap, TOPIC, 1)
                    set_quota(bootstrap)
                    per_second, throttles = acknowledged_per_second(bootstrap, args.seconds)
                print(f"[{name}] quota.window.num={window_num}: bytes per second {per_second}", flush=True)
                label = "Apache Kafka" if name == "apache" else "minikafka"
                whole = sum(per_second) / len(per_second) / QUOTA_BYTES_PER_S
                spans[(name, window_num)] = span_rates(per_second, 0)
                rows.append(f"| {label} | {window_num} | {describe(span_rates(per_second, 0))} | "
                            f"{describe(span_rates(per_second, window_num))} | {len(throttles)} | {whole:.2f} |")
    rendered = "\n".join(rows)
    print(rendered)
    if not args.no_record:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        append_history("\n".join([
                f"\n## Client quota: a 1 MiB/s producer per 20 s span, {stamp}\n",
                f"- command: `{command.strip()}` (from the repo root, with `.venv/bin/python`)",
                f"- machine: {machine_description()}",
                f"- Apache Kafka {KAFKA_VERSION} and minikafka, a fresh broker per row; confluent-kafka producer "
                f"(10 kB records, linger.ms=5, batch.size=64 KiB) for {args.seconds} s; quota.window.size.seconds=1",
                f"- wall time: {time.monotonic() - started_s:.0f} s", "", rendered, ""]))
        append_results(quota_results(spans, command))
    return 0


def quota_results(spans: dict[tuple[str, int], list[float]], command: str) -> list[BenchResult]:
    """The lowest and highest 20 s span of minikafka against Kafka's, per quota.window.num, for results.jsonl."""
    figures = []
    for (name, window_num), rates in sorted(spans.items()):
        theirs = spans.get(("apache", window_num), [])
        if name != "minikafka" or not rates:
            continue
        for which, pick in (("lowest", min), ("highest", max)):
            figures.append(result("client-quota", f"{which} 20 s span / quota, quota.window.num={window_num}",
                                  pick(rates), "fraction of quota", pick(theirs) if theirs else None,
                                  command=command.strip()))
    return figures


if __name__ == "__main__":
    sys.exit(main())

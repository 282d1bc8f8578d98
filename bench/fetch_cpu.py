"""Broker CPU per GB consumed (issue 14): CPU seconds the broker process spends serving Fetch, per GiB read.

    .venv/bin/python -m bench.fetch_cpu [--gib 1] [--runs 3] [--data-dir /tmp/minikafka-fetch-cpu] [--partitions 1]

Fills one topic once with `--gib` GiB of 1 KiB records (confluent-kafka producer, kept in `--data-dir` so later runs
reuse it), restarts the broker on it, then `--runs` times: a confluent-kafka consumer (assign() from offset 0, no
group) reads the whole topic, and the broker's CPU time (utime + stime from /proc/<pid>/stat, all its threads) over
the read is divided by the GiB read. CPU time, unlike wall time, hardly moves when other processes share the CPUs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from minikafka.testing import MiniKafka

TOPIC = "fetch-cpu"
RECORD_BYTES = 1024
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` (all threads) in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of proc(5), after "pid (comm)"


def fill(bootstrap: str, partitions: int, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "compression.type": "none", "acks": 1})
    value = os.urandom(RECORD_BYTES)
    for index in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, partition=index % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def consume(bootstrap: str, partitions: int, records: int) -> tuple[int, int]:
    """(records, value bytes) read from offset 0 of every partition."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800})
    consumer.assign([TopicPartition(TOPIC, partition, 0) for partition in range(partitions)])
    received = size = 0
    deadline = time.monotonic() + 600
    try:
        while received < records and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is None:
                    received += 1
                    size += len(message.value() or b"")
    finally:
        consumer.close()
    return received, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/minikafka-fetch-cpu"))
    parser.add_argument("--profile", type=Path, help="also record a py-spy flame graph (SVG) of the broker here")
    args = parser.parse_args(argv)
    records = int(args.gib * 2**30 / RECORD_BYTES)
    data_dir = args.data_dir / f"data-{args.partitions}p-{records}"
    marker = data_dir.parent / f"{data_dir.name}.filled"
    with MiniKafka(data_dir=data_dir) as broker:
        if not marker.exists():
            fill(broker.bootstrap_servers, args.partitions, records)
            marker.touch()
            broker.restart()  # the page cache keeps the data; a fresh process keeps the producer's work out
        pid = broker.pid
        assert pid is not None
        results = []
        spy = None
        if args.profile is not None:
            raw = ["--format", "raw"] if args.profile.suffix == ".txt" else []  # collapsed stacks, else SVG
            spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--native", "-p", str(pid),
                                    "-o", str(args.profile), *raw], stdout=subprocess.DEVNULL)
            time.sleep(1)
        for run in range(args.runs):
            before, started = cpu_seconds(pid), time.monotonic()
            received, size = consume(broker.bootstrap_servers, args.partitions, records)
            used, elapsed = cpu_seconds(pid) - before, time.monotonic() - started
            assert received == records, f"read {received} of {records} records"
            gib = size / 2**30
            results.append(used / gib)
            print(f"run {run + 1}: {received} records, {gib:.3f} GiB of values in {elapsed:.1f} s wall; broker CPU "
                  f"{used:.2f} s = {used / gib:.3f} CPU-s/GiB", flush=True)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
    results.sort()
    print(f"broker CPU per GiB consumed: median {results[len(results) // 2]:.3f}, min {results[0]:.3f}, "
          f"max {results[-1]:.3f} (load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

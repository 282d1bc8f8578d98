"""Recovery time after `kill -9` with GiBs of data: minikafka vs. Apache Kafka (one KRaft node), side by side.

    .venv/bin/python -m bench.recovery_time [--gib 2] [--partitions 4] [--value-bytes 1024] [--batch-bytes 16384]
                                            [--only minikafka|apache]

For each broker: start it on a fresh data dir, create a topic (`--partitions`, default segment.bytes = 1 GiB on
both, so each partition's data sits in its active segment, which is never flushed: both brokers must recover it
all after a crash), fill it with `--gib` GiB of uncompressed records (confluent-kafka, acks=all, `--batch-bytes`
batches: recovery validates and indexes batch by batch, so its cost depends on their count) and wait for every
acknowledgement. Then, on the same data dir:

1. restart after `kill -9`, right after the fill: SIGKILL (Kafka: its whole process group), start again, time it;
2. clean restart: SIGTERM (graceful shutdown, not timed), start again, time it (the baseline: a clean shutdown
   checkpoints the recovery point at the log end, so this one recovers nothing; it must come second).

Each restart is timed from spawning the process to (a) the first Metadata answer (both harnesses poll every 5 ms)
and (b) "data served": ListOffsets (latest) of every partition equals the acknowledged end and the last record of
every partition has been fetched. The recovery cost is the difference between 2 and 1. The page cache is warm in
both cases (the data was just written; `kill -9` does not drop it), as after a process crash; a machine crash would
add the reads from disk. Apache Kafka's numbers include JVM start-up (see bench.startup for that part alone).
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.machine import machine_description
from bench.startup import FineApacheKafka
from minikafka.testing import MiniKafka
from tests.kafka_jars import KAFKA_VERSION, ensure_kafka_jars

TOPIC = "recovery"
POLL_S = 0.01


@dataclass
class Restart:
    metadata_s: float
    data_s: float


@dataclass
class BrokerResult:
    name: str
    fill_s: float
    records: int
    data_bytes: int
    clean: Restart
    after_kill: Restart


def fill(bootstrap: str, partitions: int, total_bytes: int, value_bytes: int,
         batch_bytes: int) -> tuple[dict[int, int], int]:
    """Produce until `total_bytes` of values were acknowledged; returns (end offset per partition, records)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "batch.size": batch_bytes,
                         "queue.buffering.max.kbytes": 256 * 1024, "compression.type": "none"})
    ends: dict[int, int] = {}
    errors: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            partition, offset = msg.partition(), msg.offset()  # type: ignore[attr-defined]
            ends[partition] = max(ends.get(partition, 0), offset + 1)

    value = b"x" * value_bytes
    count = total_bytes // value_bytes
    for index in range(count):
        while True:
            try:
                producer.produce(TOPIC, value=value, partition=index % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 1000 == 0:
            producer.poll(0)
    if producer.flush(300) != 0 or errors:
        raise RuntimeError(f"fill failed: {errors[:3]}")
    return ends, count


def wait_data_served(bootstrap: str, ends: dict[int, int], started: float, timeout_s: float = 600.0) -> float:
    """Seconds since `started` until every partition's latest offset is its acknowledged end and its last record
    was fetched."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "recovery-bench", "enable.auto.commit": False,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50})
    try:
        pending = dict(ends)
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"partitions {sorted(pending)} not served within {timeout_s}s")
            for partition in list(pending):
                try:
                    _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=1,
                                                                cached=False)
                except KafkaException:
                    continue
                if high > pending[partition]:
                    raise RuntimeError(f"partition {partition}: end {high} > acknowledged {pending[partition]}")
                if high == pending[partition]:
                    del pending[partition]
            if pending:
                time.sleep(POLL_S)
        consumer.assign([TopicPartition(TOPIC, p, end - 1) for p, end in ends.items()])
        last: set[int] = set()
        while len(last) < len(ends):
            if time.monotonic() > deadline:
                raise TimeoutError("last records not fetched")
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            partition = int(message.partition() or 0)
            if message.offset() == ends[partition] - 1:
                last.add(partition)
        return time.monotonic() - started
    finally:
        consumer.close()


def measure(name: str, start: Callable[[], str], stop: Callable[[], None], kill: Callable[[], None],
            args: argparse.Namespace) -> BrokerResult:
    bootstrap = start()
    started = time.monotonic()
    value_bytes = args.value_bytes
    ends, records = fill(bootstrap, args.partitions, int(args.gib * 2**30), value_bytes, args.batch_bytes)
    fill_s = time.monotonic() - started
    print(f"{name}: filled {records} records ({records * value_bytes / 2**30:.2f} GiB of values) in {fill_s:.0f}s",
          flush=True)
    restarts = []
    for how, down in (("restart after kill -9", kill), ("clean restart", stop)):
        down()
        started = time.monotonic()
        bootstrap = start()
        metadata_s = time.monotonic() - started
        data_s = wait_data_served(bootstrap, ends, started)
        restarts.append(Restart(metadata_s, data_s))
        print(f"{name}: {how}: Metadata after {metadata_s:.2f}s, data served after {data_s:.2f}s", flush=True)
    stop()
    return BrokerResult(name, fill_s, records, records * value_bytes, clean=restarts[1], after_kill=restarts[0])


def run_minikafka(work: Path, args: argparse.Namespace) -> BrokerResult:
    kafka = MiniKafka({}, data_dir=work / "minikafka" / "data", start_timeout_s=600)

    def start() -> str:
        kafka.start()
        return kafka.bootstrap_servers

    def stop() -> None:
        kafka.stop()

    return measure("minikafka", start, stop, kafka.kill, args)


def run_apache(work: Path, args: argparse.Namespace) -> BrokerResult:
    kafka = FineApacheKafka(work / "apache", heap="1g", lib_dir=ensure_kafka_jars())

    def start() -> str:
        kafka.start()
        return kafka.bootstrap

    def kill() -> None:
        process, kafka.process = kafka.process, None
        if process is not None:
            os.killpg(process.pid, signal.SIGKILL)  # the JVM runs in its own session
            process.wait(30)

    return measure("apache", start, kafka.stop, kill, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--batch-bytes", type=int, default=16384,
                        help="producer batch.size (16 KiB = the Java client's default; recovery works per batch)")
    parser.add_argument("--only", choices=["minikafka", "apache"])
    args = parser.parse_args()
    print(f"recovery time, {args.gib:g} GiB in {args.partitions} partitions, {args.value_bytes} B values in "
          f"batches of up to {args.batch_bytes} B; "
          f"Apache Kafka {KAFKA_VERSION}; {machine_description()}", flush=True)
    results: list[BrokerResult] = []
    with tempfile.TemporaryDirectory(prefix="minikafka-recovery-") as tmp:
        if args.only != "apache":
            results.append(run_minikafka(Path(tmp), args))
        if args.only != "minikafka":
            results.append(run_apache(Path(tmp), args))
    print("| broker | fill | clean restart: Metadata / data served | after kill -9: Metadata / data served | "
          "recovery cost (data served, kill -9 minus clean) |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.name} | {r.fill_s:.0f} s | {r.clean.metadata_s:.2f} s / {r.clean.data_s:.2f} s | "
              f"{r.after_kill.metadata_s:.2f} s / {r.after_kill.data_s:.2f} s | "
              f"{r.after_kill.data_s - r.clean.data_s:.2f} s |")
    if len(results) == 2:
        mini, apache = results
        print(f"ratio minikafka / Apache Kafka, data served after kill -9: "
              f"{mini.after_kill.data_s / apache.after_kill.data_s:.2f}x")


if __name__ == "__main__":
    main()

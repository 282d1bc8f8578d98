"""Share-group consumption side by side (issue 23): records/s and broker CPU seconds per GB of 1 KiB records
consumed by 1 and 4 confluent-kafka ShareConsumers of one partition with explicit ACCEPT, minikafka and Apache
Kafka 4.3.1 with the same client and workload.

    .venv/bin/python -m bench.share_throughput [--records 100000] [--consumers 1 4] [--brokers minikafka apache]

Per broker and consumer count: a fresh topic and share group; the consumers warm up (markers until each received
one: both brokers start a share partition at `latest`), stop polling, `--records` records are produced, then the
clock and the broker's CPU reading (its process tree, /proc) run while the consumers poll, ACCEPT and commit until
every record was accepted once. Prints one line per run; records delivered twice are counted and reported.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.proc_cpu import ProcessTreeCpu, cpu_seconds_per_gb

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--consumers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--brokers", nargs="+", default=["minikafka", "apache"])
    args = parser.parse_args(argv)
    for broker in args.brokers:
        work = Path(tempfile.mkdtemp(prefix=f"share-bench-{broker}-"))
        if broker == "minikafka":
            from minikafka.testing import MiniKafka

            server: Any = MiniKafka(data_dir=work / "data")
        else:
            from bench.apache_kafka import ApacheKafka
            from bench.kafka_jars import ensure_kafka_jars

            server = ApacheKafka(work, lib_dir=ensure_kafka_jars())
        with server:
            bootstrap = server.bootstrap_servers if broker == "minikafka" else server.bootstrap
            pid = server.pid if broker == "minikafka" else server.process.pid
            for consumers in args.consumers:
                result = run(bootstrap, int(pid), args.records, consumers)
                print(f"{broker:10s} consumers={consumers} records={result['records']} "
                      f"records/s={result['records_per_s']:.0f} cpu-s/GB={result['cpu_s_per_gb']:.1f} "
                      f"per-consumer={result['per_consumer']} duplicates={result['duplicates']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

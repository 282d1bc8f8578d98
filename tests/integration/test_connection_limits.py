"""Connection and request-memory limits by Kafka's names, against a broker process over real sockets:
`max.connections.per.ip` (+ overrides), `max.connections`, `connections.max.idle.ms`, and
`queued.max.request.bytes` under thousands of connections, some declaring 100 MiB frames."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minikafka.testing import MiniKafka
from minikafka.testing.mini_kafka import metadata_broker_count

HUNDRED_MIB = 100 * 1024 * 1024
#: what a muted connection can hold: the StreamReader's pause threshold (2 x 64 KiB) plus one socket read (256 KiB)
MUTED_BYTES = 2 * 64 * 1024 + 256 * 1024


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[object]:
    started: list[MiniKafka] = []

    def start(config: dict[str, str | int]) -> MiniKafka:
        kafka = MiniKafka(config, data_dir=tmp_path / f"data-{len(started)}").start()
        started.append(kafka)
        return kafka

    yield start
    for kafka in started:
        kafka.stop()


def connect(kafka: MiniKafka) -> socket.socket:
    host, port = kafka.bootstrap_servers.split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def answers_metadata(kafka: MiniKafka) -> bool:
    host, port = kafka.bootstrap_servers.split(":")
    return metadata_broker_count(host, int(port)) == 1


def closed_by_broker(sock: socket.socket, timeout_s: float = 5.0) -> bool:
    sock.settimeout(timeout_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_max_connections_per_ip_and_its_override_close_the_connection_over_the_limit(start_broker) -> None:
    kafka = start_broker({"max.connections.per.ip": 4, "max.connections.per.ip.overrides": "127.0.0.1:3"})
    held = [connect(kafka) for _ in range(3)]
    extra = connect(kafka)
    assert closed_by_broker(extra), "a 4th connection from 127.0.0.1 (override: 3) was kept"
    assert "max.connections.per.ip 3" in kafka.read_log()
    held.pop().close()
    time.sleep(0.2)
    assert answers_metadata(kafka), "a slot freed by a closed connection was not reused"
    for sock in held:
        sock.close()


def test_max_connections_closes_connections_over_the_broker_wide_limit(start_broker) -> None:
    kafka = start_broker({"max.connections": 5})
    held = [connect(kafka) for _ in range(5)]
    assert closed_by_broker(connect(kafka))
    assert "max.connections 5" in kafka.read_log()
    for sock in held:
        sock.close()
    time.sleep(0.2)
    assert answers_metadata(kafka)


def test_connections_max_idle_ms_closes_idle_connections_only(start_broker) -> None:
    kafka = start_broker({"connections.max.idle.ms": 600})
    idle = connect(kafka)
    busy = connect(kafka)
    deadline = time.monotonic() + 2.0
    client_id = b"busy"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id  # ApiVersions v0
    while time.monotonic() < deadline:
        busy.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", busy.recv(4))[0]
        while size > 0:
            size -= len(busy.recv(size))
        time.sleep(0.1)
    assert closed_by_broker(idle, timeout_s=0.1), "an idle connection outlived connections.max.idle.ms"
    assert not closed_by_broker(busy, timeout_s=0.1), "a connection sending requests was closed as idle"


def test_thousands_of_connections_and_100_mib_frames_stay_within_the_request_pool(start_broker) -> None:
    """2,000 connections: 1,800 silent, 200 declaring 100 MiB frames and sending 4 MiB of each as fast as the
    broker reads, then stalling. A well-behaved producer and consumer are served throughout. Without the pool
    the broker would buffer 800 MiB; with it, one abuser at a time holds a reservation and the other 199 are
    muted, so RSS stays within idle + 4 MiB x the reservations that fit + 199 x MUTED_BYTES + 1,800 x 16 KiB."""
    pool_bytes = 128 * 1024 * 1024
    kafka = start_broker({"queued.max.request.bytes": pool_bytes})
    assert kafka.pid is not None
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "linger.ms": 0})
    producer.produce("served", value=b"warm-up")
    assert producer.flush(10) == 0
    idle_rss = rss_bytes(kafka.pid)

    sockets = [connect(kafka) for _ in range(1800)]
    abusers = [connect(kafka) for _ in range(200)]
    header = struct.pack(">i", HUNDRED_MIB - 16)
    chunk = b"\0" * (4 * 1024 * 1024)
    stop = threading.Event()

    def abuse(sock: socket.socket) -> None:
        sock.settimeout(0.5)
        try:
            sock.sendall(header)
            sent = 0
            while sent < len(chunk) and not stop.is_set():
                try:
                    sent += sock.send(chunk[sent:])
                except TimeoutError:
                    continue  # muted: the broker does not read this socket until the pool has room
        except OSError:
            pass

    threads = [threading.Thread(target=abuse, args=(sock,), daemon=True) for sock in abusers]
    for thread in threads:
        thread.start()

    peak_rss = 0
    latencies_s: list[float] = []
    for n in range(40):
        started = time.monotonic()
        producer.produce("served", key=b"k%d" % n, value=b"v" * 200)
        assert producer.flush(10) == 0, f"a well-behaved produce was not acknowledged within 10 s ({n})"
        latencies_s.append(time.monotonic() - started)
        peak_rss = max(peak_rss, rss_bytes(kafka.pid))
        time.sleep(0.05)
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "served",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition("served", 0, 0)])
    values = []
    while (message := consumer.poll(10)) is not None and message.error() is None:
        values.append(message.value())
    consumer.close()
    stop.set()
    for thread in threads:
        thread.join(5)
    peak_rss = max(peak_rss, rss_bytes(kafka.pid))
    for sock in sockets + abusers:
        sock.close()

    assert values == [b"warm-up"] + [b"v" * 200] * 40
    granted = pool_bytes // HUNDRED_MIB
    bound = idle_rss + granted * len(chunk) + (200 - granted) * MUTED_BYTES + 1800 * 16 * 1024
    print(f"idle RSS {idle_rss / 2**20:.0f} MiB, peak {peak_rss / 2**20:.0f} MiB, bound {bound / 2**20:.0f} MiB, "
          f"produce p50 {sorted(latencies_s)[20] * 1000:.0f} ms, max {max(latencies_s) * 1000:.0f} ms")
    assert peak_rss < bound
    assert answers_metadata(kafka)

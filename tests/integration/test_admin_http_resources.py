"""The admin port cannot starve the broker (broker/admin_workers.py): its requests run on a bounded pool of their own,
so that console key lookups stuck on a disk leave InitProducerId (the default executor's) and Prometheus scrapes (a
thread of their own) answering; shutdown waits for the admin threads once they are released.

A stuck disk is a named pipe with a segment file's name in the partition directory: the key lookup opens every
segment file, and opening a pipe for reading blocks until a writer comes. ADMIN_THREADS + 4 lookups hold every admin
thread (more than the default executor's min(32, cores + 4) threads on this 2-core machine).
"""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.broker.admin_workers import ADMIN_THREADS
from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(180)
STUCK_LOOKUPS = max(ADMIN_THREADS, (os.cpu_count() or 1) + 4) + 4


def release(fifo: Path, lookups: list[threading.Thread]) -> None:
    """Open the pipe's write end and close it until no lookup waits on it (each then reads an empty file)."""
    deadline = time.monotonic() + 60
    while any(thread.is_alive() for thread in lookups) and time.monotonic() < deadline:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader at this instant
            pass
        time.sleep(0.01)


def test_stuck_key_lookups_leave_init_producer_id_and_scrapes_answering() -> None:
    with MiniKafka() as kafka:
        topic = f"stuck-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        fifo = kafka.data_dir / f"{topic}-0" / "00000000000000099999.log.cleaned"
        os.mkfifo(fifo)
        answers: list[int] = []

        def look_up() -> None:
            try:
                with urllib.request.urlopen(f"{kafka.admin_url}/key?topic={topic}&key=k", timeout=120) as response:
                    answers.append(response.status)
            except (urllib.error.URLError, OSError):
                answers.append(-1)

        lookups = [threading.Thread(target=look_up, daemon=True) for _ in range(STUCK_LOOKUPS)]
        try:
            for thread in lookups:
                thread.start()
            time.sleep(2)  # every admin thread is now blocked in open()
            assert all(thread.is_alive() for thread in lookups)

            started = time.monotonic()
            with urllib.request.urlopen(kafka.metrics_url, timeout=10) as response:
                assert response.status == 200
            producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True,
                                 "linger.ms": 0, "message.timeout.ms": 10_000})
            producer.produce(topic, key=b"k", value=b"v")
            assert producer.flush(15) == 0  # InitProducerId answered
            assert time.monotonic() - started < 10
        finally:
            release(fifo, lookups)
            for thread in lookups:
                thread.join(30)
        assert answers == [200] * STUCK_LOOKUPS
        fifo.unlink()
        assert kafka.stop() == 0  # a clean shutdown, not the SIGKILL after 30 s

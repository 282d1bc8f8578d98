"""Issue 3 "Done when" (1): confluent-kafka consumers in one group on a 6-partition topic — 3 members get
two partitions each, a 4th joins and partitions rebalance, one member is SIGKILLed (no LeaveGroup) and its
partitions move after the session timeout; with synchronous commits no record is lost or processed twice.

A record counts as processed only once its synchronous commit succeeded, so the exactly-once check is
about what the coordinator accepted, not about client delivery.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.broker_process import REPO_ROOT, BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.segment_files import batch_bytes

TOPIC = "orders"
PARTITIONS = 6
GROUP = "billing"
BROKER_OVERRIDES = {
    "group.min.session.timeout.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
}
SESSION_TIMEOUT_MS = 2000


def consumer_config(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": GROUP,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 200,
        "topic.metadata.refresh.interval.ms": 1000,
    }


#: The member that gets SIGKILLed: a separate process printing its assignment and processed records as JSON.
VICTIM = """
import json, sys
from confluent_kafka import Consumer
config = json.loads(sys.argv[1])
consumer = Consumer(config)
consumer.subscribe([sys.argv[2]])
last = None
while True:
    message = consumer.poll(0.1)
    assignment = sorted(tp.partition for tp in consumer.assignment())
    if assignment != last:
        last = assignment
        print(json.dumps({"assigned": assignment}), flush=True)
    if message is None or message.error():
        continue
    try:
        consumer.commit(message, asynchronous=False)
    except Exception:
        continue
    print(json.dumps({"processed": [message.partition(), message.offset()]}), flush=True)
"""


class Member:
    """One in-process consumer polling on its own thread; records what it committed."""

    def __init__(self, bootstrap: str, processed: list[tuple[int, int]], lock: threading.Lock) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(consumer_config(bootstrap))
        self.consumer.subscribe([TOPIC])
        self.processed = processed
        self.lock = lock
        self.assignment: list[int] = []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from confluent_kafka import KafkaException

        while self.running:
            message = self.consumer.poll(0.1)
            self.assignment = sorted(tp.partition for tp in self.consumer.assignment())
            if message is None or message.error():
                continue
            try:
                self.consumer.commit(message=message, asynchronous=False)
            except KafkaException:
                continue  # fenced by a rebalance: the next owner re-reads it from the committed offset
            with self.lock:
                self.processed.append((int(message.partition() or 0), int(message.offset() or 0)))
        self.consumer.close()

    def stop(self) -> None:
        self.running = False
        self.thread.join(30)


class Victim:
    def __init__(self, bootstrap: str, processed: list[tuple[int, int]], lock: threading.Lock) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", VICTIM, json.dumps(consumer_config(bootstrap)), TOPIC],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.assignment: list[int] = []
        self.processed = processed
        self.lock = lock
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            if "assigned" in event:
                self.assignment = event["assigned"]
            else:
                with self.lock:
                    self.processed.append((int(event["processed"][0]), int(event["processed"][1])))

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def produce(bootstrap: str, start: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for index in range(start, start + count):
        producer.produce(TOPIC, value=str(index).encode(), partition=index % PARTITIONS)
    assert producer.flush(30) == 0


@pytest.fixture
def group_broker(broker_factory: Callable[..., BrokerProcess]) -> Iterator[BrokerProcess]:
    broker = broker_factory(BROKER_OVERRIDES)
    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    yield broker


@pytest.mark.timeout(180)
def test_three_members_then_a_fourth_then_a_killed_one_exactly_once(group_broker: BrokerProcess) -> None:
    bootstrap = group_broker.bootstrap
    processed: list[tuple[int, int]] = []
    lock = threading.Lock()
    members = [Member(bootstrap, processed, lock) for _ in range(3)]
    victim: Victim | None = None
    try:
        wait_for(lambda: sorted(len(m.assignment) for m in members) == [2, 2, 2], 30, "2 partitions each")
        assert sorted(p for m in members for p in m.assignment) == list(range(PARTITIONS))
        produce(bootstrap, 0, 300)
        wait_for(lambda: len(processed) >= 300, 30, "the first 300 records")

        victim = Victim(bootstrap, processed, lock)
        wait_for(
            lambda: sorted([len(victim.assignment), *(len(m.assignment) for m in members)]) == [1, 1, 2, 2]
            and sorted([*victim.assignment, *(p for m in members for p in m.assignment)]) == list(range(6)),
            30,
            "a rebalance over four members",
        )
        victim_partitions = list(victim.assignment)
        produce(bootstrap, 300, 300)
        wait_for(lambda: len(processed) >= 600, 30, "the second 300 records")
        assert any(partition in victim_partitions for partition, _ in processed[300:])

        victim.kill()  # no LeaveGroup: the coordinator must notice the missing heartbeats
        produce(bootstrap, 600, 300)
        wait_for(
            lambda: sorted(p for m in members for p in m.assignment) == list(range(PARTITIONS)),
            SESSION_TIMEOUT_MS / 1000 + 30,
            "the killed member's partitions to move",
        )
        wait_for(lambda: len(processed) >= 900, 30, "the last 300 records")
        time.sleep(0.5)  # anything processed twice would show up now
    finally:
        for member in members:
            member.stop()
        if victim is not None and victim.process.poll() is None:
            victim.kill()
    counts = Counter(processed)
    duplicates = {record: n for record, n in counts.items() if n > 1}
    assert not duplicates, f"processed more than once: {duplicates}"
    per_partition = Counter(partition for partition, _ in processed)
    assert sum(per_partition.values()) == 900 and set(per_partition.values()) == {150}
    for partition in range(PARTITIONS):
        assert sorted(o for p, o in processed if p == partition) == list(range(150))


@pytest.mark.timeout(180)
def test_consumer_offsets_stays_bounded_after_many_commits(broker_factory: Callable[..., BrokerProcess]) -> None:
    """Many commits for the same partitions: once the cleaner runs, __consumer_offsets stays small."""
    from confluent_kafka import Consumer, TopicPartition

    broker = broker_factory({**BROKER_OVERRIDES, "offsets.topic.segment.bytes": "65536",
                             "log.cleaner.backoff.ms": "100", "log.cleaner.min.cleanable.ratio": "0.01"})
    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    for offset in range(5000):
        consumer.commit(offsets=[TopicPartition(TOPIC, p, offset) for p in range(PARTITIONS)], asynchronous=False)
    consumer.close()
    written_bytes = 5000 * PARTITIONS * 60  # lower bound of what the commits wrote before cleaning
    deadline = time.monotonic() + 60
    while True:
        total_bytes = sum(batch_bytes(path) for path in broker.data_dir.glob("__consumer_offsets-*/*.log"))
        if total_bytes < 256 * 1024 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert total_bytes < 256 * 1024 < written_bytes, total_bytes

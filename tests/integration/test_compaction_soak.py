"""Spec S56: end-to-end compaction torture test in the style of Kafka's LogCompactionTester, against a real
broker subprocess with real clients.

Several idempotent confluent-kafka producers (threads; librdkafka releases the GIL) write `messages` records
over a key space of `messages / 10` keys, the first `percent_deletes` of every 100 messages of each producer
being tombstones, into one compacted partition with a tight `segment.bytes`, a short `max.compaction.lag.ms`
(so the quiet partition rolls and its tail is cleaned too) and a small `delete.retention.ms`, so the cleaner
runs throughout the produce phase. Every acknowledged operation is recorded with its offset; the last
operation of a key is the one with the highest offset. Afterwards a consumer from offset 0 must see exactly
the latest value of every live key, once, no key whose last operation was a delete (its tombstone is past
its horizon), offsets strictly increasing, and the log's bytes on disk within 2x of the live data encoded
as one uncompressed v2 batch.

Scale with `MINIKAFKA_SOAK_MESSAGES` (default 250,000: about 20 s on 2 shared CPUs; 2,000,000 took 138 s) and
`MINIKAFKA_SOAK_PRODUCERS` (default 3).
"""

from __future__ import annotations

import itertools
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Producer

from minikafka.protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import checkpoint_of, consume_all, scrape, wait_for

MESSAGES = int(os.environ.get("MINIKAFKA_SOAK_MESSAGES", "250000"))
PRODUCERS = int(os.environ.get("MINIKAFKA_SOAK_PRODUCERS", "3"))
DUPLICATES = 10
PERCENT_DELETES = 10
SEGMENT_BYTES = 256 * 1024
DELETE_RETENTION_MS = 500
MAX_COMPACTION_LAG_MS = 1000

pytestmark = pytest.mark.timeout(max(180, MESSAGES // 1000))

BrokerFactory = Callable[..., BrokerProcess]


@dataclass
class ProducerLedger:
    """Acknowledged operations of one producer thread: key -> (offset, value or None).

    Owned by that thread (its delivery callbacks run in its own poll/flush)."""

    latest: dict[bytes, tuple[int, bytes | None]] = field(default_factory=dict)
    acked: int = 0
    errors: list[str] = field(default_factory=list)

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        self.acked += 1
        key, offset = msg.key(), int(msg.offset())
        previous = self.latest.get(key)
        if previous is None or previous[0] < offset:
            self.latest[key] = (offset, msg.value())


def run_producer(
    bootstrap: str, topic: str, index: int, count: int, keys: int, ledger: ProducerLedger
) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 64 * 1024,
            "queue.buffering.max.messages": 200_000,
            "message.timeout.ms": 120_000,
        }
    )
    rng = random.Random(index)
    for i in range(count):
        key = b"key-%07d" % rng.randrange(keys)
        value = None if i % 100 < PERCENT_DELETES else b"value-%d-%d" % (index, i)
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=ledger.on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining:
        ledger.errors.append(f"{remaining} records undelivered")


def test_S56_compaction_torture_latest_values_only_and_log_within_twice_live_data(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(
        {
            "log.cleaner.backoff.ms": "100",
            "minikafka.log.roll.check.interval.ms": "100",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        }
    )
    topic = "soak"
    keys = max(MESSAGES // DUPLICATES, 1)
    create_topic(
        broker.bootstrap,
        topic,
        1,
        {
            "cleanup.policy": "compact",
            "segment.bytes": str(SEGMENT_BYTES),
            "min.cleanable.dirty.ratio": "0.1",
            "delete.retention.ms": str(DELETE_RETENTION_MS),
            "max.compaction.lag.ms": str(MAX_COMPACTION_LAG_MS),
        },
    )

    started = time.monotonic()
    ledgers = [ProducerLedger() for _ in range(PRODUCERS)]
    per_producer = MESSAGES // PRODUCERS
    threads = [
        threading.Thread(target=run_producer, args=(broker.bootstrap, topic, i, per_producer, keys, ledger))
        for i, ledger in enumerate(ledgers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    produce_s = time.monotonic() - started
    assert not any(ledger.errors for ledger in ledgers), [ledger.errors[:3] for ledger in ledgers]
    produced = sum(ledger.acked for ledger in ledgers)
    assert produced == per_producer * PRODUCERS
    rounds_while_producing = len(re.findall(r"cleaned log soak-0", broker.read_log()))
    # At least one round overlapped the producers (on a loaded 2-CPU box the produce phase can be ~2 s, about
    # one round plus the worker process's start-up, so asking for two rounds here was flaky).
    assert rounds_while_producing >= 1, "the cleaner did not run while the producers wrote"

    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for ledger in ledgers:
        for key, (offset, value) in ledger.latest.items():
            if key not in latest or latest[key][0] < offset:
                latest[key] = (offset, value)
    live = {key: value for key, (_offset, value) in latest.items() if value is not None}
    deleted = {key for key, (_offset, value) in latest.items() if value is None}
    assert deleted, "the key space should end with some keys deleted"

    # Quiet partition: it rolls after max.compaction.lag.ms, is cleaned to its end, and a horizon round
    # removes the tombstones once delete.retention.ms has passed.
    labels = (("partition", "0"), ("topic", topic))
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == produced, 60, "cleaning up to the log end")
    wait_for(
        lambda: scrape(broker).get(("minikafka_log_cleaner_tombstones_pending", labels)) == 0,
        30,
        "removal of the tombstones past their horizon",
    )
    settle_s = time.monotonic() - started - produce_s

    records = consume_all(broker.bootstrap, topic)
    offsets = [offset for offset, _, _ in records]
    assert all(a < b for a, b in itertools.pairwise(offsets)), "offsets not strictly increasing"
    consumed_keys = [key for _, key, _ in records]
    assert len(consumed_keys) == len(set(consumed_keys)), "a key appears more than once after full compaction"
    tombstones = [key for _, key, value in records if value is None]
    assert not tombstones, f"{len(tombstones)} tombstones still present after their horizon"
    consumed = {key: value for _, key, value in records if key is not None}
    assert not deleted & consumed.keys(), f"{len(deleted & consumed.keys())} deleted keys came back"
    assert consumed.keys() == live.keys(), (
        f"missing {len(live.keys() - consumed.keys())} live keys, {len(consumed.keys() - live.keys())} extra"
    )
    wrong = [key for key, value in live.items() if consumed[key] != value]
    assert not wrong, f"{len(wrong)} keys with a value other than their latest, e.g. {wrong[:3]}"
    assert [(offset, key) for offset, key, _ in records] == sorted((latest[key][0], key) for key in live), (
        "a live value is not at its original offset"
    )

    log_dir = broker.data_dir / f"{topic}-0"
    on_disk_bytes = sum(path.stat().st_size for path in log_dir.glob("*.log"))
    live_bytes = len(
        build_batch(
            [
                Record(offset=i, timestamp=0, key=key, value=value)
                for i, (_, key, value) in enumerate(records)
            ],
            base_offset=0,
        )
    )
    samples = scrape(broker)
    print(
        f"\nS56: {produced:,} records ({PRODUCERS} producers, {keys:,} keys, {PERCENT_DELETES}% deletes) "
        f"produced in {produce_s:.1f}s ({produced / produce_s:,.0f} rec/s); cleaned to the end and "
        f"tombstones gone {settle_s:.1f}s later; {len(re.findall(r'cleaned log soak-0', broker.read_log()))} "
        f"cleaning "
        f"rounds ({rounds_while_producing} while producing); live keys {len(live):,}, "
        f"deleted {len(deleted):,}; "
        f"log {on_disk_bytes:,} B on disk vs {live_bytes:,} B live ({on_disk_bytes / live_bytes:.2f}x), "
        f"{len(list(log_dir.glob('*.log')))} segments"
    )
    assert on_disk_bytes <= 2 * live_bytes, (
        f"log {on_disk_bytes} B is more than twice its live data {live_bytes} B"
    )
    assert samples[("kafka_log_logcleaner_deadthreadcount", ())] == 0
    assert "uncleanable" not in broker.read_log().lower()

"""The soak's workload (bench/soak.py): topics, broker settings and the client threads — an idempotent producer
to a plain and a compacted topic, a transactional producer committing and aborting, a committing consumer group —
with the counters (`Stats`) they share with the sampler. Threads run until `stop` is set; `guarded` turns an
exception into a recorded error instead of a dead thread."""

from __future__ import annotations

import functools
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

PLAIN_TOPIC = "soak-plain"
COMPACT_TOPIC = "soak-compact"
TXN_TOPIC = "soak-txn"
GROUP = "soak-group"
TXN_GROUP = "soak-txn-group"
TRANSACTIONAL_ID = "soak-txn-producer"
TXN_RECORDS = 3
TXN_KEYS = 10
TXN_PER_S = 5.0
COMMIT_PROBABILITY = 0.8
LOG_LEVEL = 3  # librdkafka: errors only
MIB = 1024 * 1024

BROKER_CONFIG: dict[str, str | int] = {
    "log.cleaner.backoff.ms": 1000,
    "log.retention.check.interval.ms": 5000,
    "offsets.topic.num.partitions": 1,
    "offsets.topic.segment.bytes": 64 * 1024,
    "transaction.state.log.num.partitions": 1,
    "transaction.state.log.segment.bytes": 64 * 1024,
    "group.initial.rebalance.delay.ms": 0,
    "auto.create.topics.enable": "false",
}
DELETE_CONFIG = {"retention.ms": "120000", "segment.ms": "15000", "segment.bytes": str(1024 * 1024)}
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    PLAIN_TOPIC: (2, DELETE_CONFIG),
    TXN_TOPIC: (1, DELETE_CONFIG),
    COMPACT_TOPIC: (1, {"cleanup.policy": "compact", "segment.bytes": str(64 * 1024), "segment.ms": "5000",
                        "min.cleanable.dirty.ratio": "0.1", "delete.retention.ms": "1000",
                        "min.compaction.lag.ms": "0"}),
}
VALUE_PAD = b"." * 90


def comp_key(version: int, keys: int) -> str:
    return f"i{(version * 2654435761) % 4294967296 % keys}"


def comp_is_tombstone(version: int) -> bool:
    return (version * 40503) % 65536 % 20 == 0


def comp_value(version: int) -> bytes:
    return b"%d|" % version + VALUE_PAD


@dataclass
class Stats:
    """Counters shared by the client threads and the sampler (under `lock`)."""

    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    produced: int = 0
    acked: int = 0
    consumed: int = 0
    delivery_errors: int = 0
    txn_committed: int = 0
    txn_aborted: int = 0
    group_commits: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    txn_commit_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # the correctness model of soak-compact: key -> (version, tombstone) of the latest acknowledged write
    comp_latest: dict[str, tuple[int, bool]] = field(default_factory=dict)
    txn_latest: dict[str, int] = field(default_factory=dict)  # t<n> -> last committed transaction id

    def error(self, text: str) -> None:
        with self.lock:
            if len(self.errors) < 100:
                self.errors.append(text.replace("\n", " "))

    def take_interval(self) -> dict[str, Any]:
        with self.lock:
            latencies, self.latencies_ms = self.latencies_ms, []
            commits, self.txn_commit_ms = self.txn_commit_ms, []
            return {"produced": self.produced, "acked": self.acked, "consumed": self.consumed,
                    "txn_committed": self.txn_committed, "txn_aborted": self.txn_aborted,
                    "group_commits": self.group_commits, "delivery_errors": self.delivery_errors,
                    "latencies": latencies, "txn_commit_ms": commits}


@dataclass(frozen=True)
class Load:
    bootstrap: str
    plain_rate: float
    comp_rate: float
    keys: int
    seed: int


def idempotent_producer(load: Load, stats: Stats, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": load.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 120_000, "log_level": LOG_LEVEL,
                         # below the compacted topic's 64 KiB segments: a stalled broker lets librdkafka fill
                         # a 1 MB batch, which Kafka refuses as RECORD_LIST_TOO_LARGE
                         "batch.size": 32 * 1024})

    def on_delivery(sent: float, key: str | None, version: int, tombstone: bool, err: Any, msg: Any) -> None:
        latency_ms = (time.perf_counter() - sent) * 1000
        with stats.lock:
            if err is not None:
                stats.delivery_errors += 1
                if len(stats.errors) < 100:
                    stats.errors.append(f"delivery: {err}")
                return
            stats.acked += 1
            stats.latencies_ms.append(latency_ms)
            if key is not None:
                previous = stats.comp_latest.get(key)
                if previous is None or previous[0] < version:
                    stats.comp_latest[key] = (version, tombstone)

    started = time.monotonic()
    sent = {"plain": 0, "comp": 0}
    rates = {"plain": load.plain_rate, "comp": load.comp_rate}
    while not stop.is_set():
        elapsed = time.monotonic() - started
        for stream in ("plain", "comp"):
            while sent[stream] < rates[stream] * elapsed:
                version = sent[stream]
                now = time.perf_counter()
                try:
                    if stream == "plain":
                        producer.produce(PLAIN_TOPIC, value=b"p:%d|" % version + VALUE_PAD, partition=version % 2,
                                         on_delivery=functools.partial(on_delivery, now, None, version, False))
                    else:
                        key = comp_key(version, load.keys)
                        tombstone = comp_is_tombstone(version)
                        producer.produce(COMPACT_TOPIC, key=key.encode(),
                                         value=None if tombstone else comp_value(version), partition=0,
                                         on_delivery=functools.partial(on_delivery, now, key, version, tombstone))
                except BufferError:
                    break
                sent[stream] += 1
                with stats.lock:
                    stats.produced += 1
        producer.poll(0.005)
    if producer.flush(60) != 0:
        stats.error("idempotent producer: flush at the end timed out")


def transactions(load: Load, stats: Stats, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    rng = random.Random(load.seed)
    metadata_consumer = Consumer({"bootstrap.servers": load.bootstrap, "group.id": TXN_GROUP,
                                  "log_level": LOG_LEVEL})
    group_metadata = metadata_consumer.consumer_group_metadata()
    metadata_consumer.close()
    producer = Producer({"bootstrap.servers": load.bootstrap, "transactional.id": TRANSACTIONAL_ID,
                         "linger.ms": 5, "transaction.timeout.ms": 60_000, "log_level": LOG_LEVEL,
                         "batch.size": 32 * 1024})
    producer.init_transactions(30)
    txn_id = 0
    next_due = time.monotonic()
    while not stop.is_set():
        next_due += 1 / TXN_PER_S
        stop.wait(max(0.0, next_due - time.monotonic()))
        key = f"t{txn_id % TXN_KEYS}"
        try:
            producer.begin_transaction()
            for index in range(TXN_RECORDS):
                producer.produce(TXN_TOPIC, value=b"t:%d:%d" % (txn_id, index), partition=0)
            producer.produce(COMPACT_TOPIC, key=key.encode(), value=comp_value(txn_id), partition=0)
            producer.send_offsets_to_transaction([TopicPartition(TXN_TOPIC, 0, txn_id + 1)], group_metadata, 30)
            if rng.random() < COMMIT_PROBABILITY:
                started = time.perf_counter()
                producer.commit_transaction(30)
                with stats.lock:
                    stats.txn_commit_ms.append((time.perf_counter() - started) * 1000)
                    stats.txn_committed += 1
                    stats.txn_latest[key] = txn_id
            else:
                producer.flush(30)
                producer.abort_transaction(30)
                with stats.lock:
                    stats.txn_aborted += 1
        except KafkaException as exc:
            error = exc.args[0]
            stats.error(f"transaction {txn_id}: {error}")
            if not error.txn_requires_abort():
                return
            producer.abort_transaction(30)
        txn_id += 1


def group_member(load: Load, stats: Stats, stop: threading.Event, member: int) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": load.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "client.id": f"soak-member-{member}", "fetch.wait.max.ms": 100, "log_level": LOG_LEVEL})
    consumer.subscribe([PLAIN_TOPIC, TXN_TOPIC])
    next_commit = time.monotonic() + 1.0
    try:
        while not stop.is_set():
            messages = consumer.consume(num_messages=1000, timeout=0.1)
            errors = [message.error() for message in messages if message.error() is not None]
            with stats.lock:
                stats.consumed += len(messages) - len(errors)
            for error in errors:
                stats.error(f"member {member} consume: {error}")
            if time.monotonic() < next_commit:
                continue
            next_commit = time.monotonic() + 1.0
            positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
            if not positions:
                continue
            try:
                consumer.commit(offsets=positions, asynchronous=False)
                with stats.lock:
                    stats.group_commits += 1
            except KafkaException as exc:
                stats.error(f"member {member} commit: {exc.args[0]}")
    finally:
        consumer.close()


def guarded(target: Any, *args: Any) -> None:
    try:
        target(*args)
    except Exception as exc:
        stats: Stats = args[1]
        stats.error(f"{target.__name__} raised {type(exc).__name__}: {exc}")

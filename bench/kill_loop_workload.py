"""The client side of one `bench.kill_loop` cycle, run in a child process that is SIGKILLed with the broker.

`run_workload(params, events)` starts three client threads against the broker and reports through the one-way
pipe `events`, one short text line per event, until it is killed:

- an idempotent producer (acks=all) writes versioned records to the plain topic (2 partitions) and to the
  compacted topic (keys `i<n>`, ~10% tombstones). Before it uses a block of versions it reports the block
  (`R plain|comp <upto>`), so the parent knows every record that may land; each acknowledgement is
  `A plain|comp <version> <partition> <offset>`. Which key a version writes and whether it is a tombstone follow
  from the version (`comp_key`, `comp_is_tombstone`), so the parent needs no per-record write event.
- a transactional producer runs transaction after transaction: `TXN_RECORDS` records to the transaction topic,
  one record to the compacted topic (key `t<n>`, version = transaction id) and `send_offsets_to_transaction` of
  offset id + 1 for `TXN_GROUP`; then commits or aborts at random (records are flushed before an abort, so
  aborted data really is in the log). Events: `TB id` before begin, `AT id index offset` per acknowledged record,
  `TC id` before commit, `TK id` after it returned, `TA id` before abort, `TAK id` after it returned, `TX id
  error` on an error.
- a group consumer (static member of `GROUP`) reads the plain topic read_committed and commits its positions
  synchronously every ~0.1 s: `GC partition offset` before, `GK partition offset` per acknowledged partition,
  `GE error` on a failed commit.

Every event is written to the pipe before the action it announces (or after the answer it reports), so a kill at
any moment leaves the parent a superset of what may have landed and a subset of what was acknowledged.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

PLAIN_TOPIC = "kl-plain"
COMPACT_TOPIC = "kl-compact"
TXN_TOPIC = "kl-txn"
PLAIN_PARTITIONS = 2
GROUP = "kl-group"
TXN_GROUP = "kl-txn-group"
TRANSACTIONAL_ID = "kl-txn-producer"
TXN_RECORDS = 3
TXN_KEYS = 10
VERSION_BLOCK = 16
_VALUE_PAD = b"." * 80
LOG_LEVEL = 2  # librdkafka: critical only (every kill otherwise logs a page of "connection refused")


@dataclass(frozen=True)
class WorkloadParams:
    bootstrap: str
    seed: int
    plain_next: int  # first unused version of each stream
    comp_next: int
    txn_next: int
    comp_keys: int
    plain_rate: float  # records/s
    comp_rate: float
    commit_probability: float


def comp_key(version: int, keys: int) -> str:
    return f"i{(version * 2654435761) % 4294967296 % keys}"


def comp_is_tombstone(version: int) -> bool:
    return (version * 40503) % 65536 % 10 == 0


def txn_key(txn_id: int) -> str:
    return f"t{txn_id % TXN_KEYS}"


def txn_is_tombstone(txn_id: int) -> bool:
    return txn_id % 7 == 0


def plain_value(version: int) -> bytes:
    return b"p:%d" % version


def plain_partition(version: int) -> int:
    return version % PLAIN_PARTITIONS


def txn_value(txn_id: int, index: int) -> bytes:
    return b"t:%d:%d" % (txn_id, index)


def comp_value(version: int) -> bytes:
    return b"%d|" % version + _VALUE_PAD


class _Events:
    """Serialises event lines onto the pipe (one `send_bytes` per line; several threads write)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self._conn.send_bytes(line.encode())


def _idempotent_producer(params: WorkloadParams, emit: _Events, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": params.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60_000, "log_level": LOG_LEVEL})

    def on_delivery(stream: str, version: int, err: Any, msg: Any) -> None:
        if err is None:
            emit(f"A {stream} {version} {msg.partition()} {msg.offset()}")

    reserved = {"plain": params.plain_next, "comp": params.comp_next}
    next_version = dict(reserved)
    rates = {"plain": params.plain_rate, "comp": params.comp_rate}
    started = time.monotonic()
    sent = {"plain": 0, "comp": 0}
    while not stop.is_set():
        elapsed = time.monotonic() - started
        for stream in ("plain", "comp"):
            while sent[stream] < rates[stream] * elapsed:
                version = next_version[stream]
                if version >= reserved[stream]:
                    reserved[stream] = version + VERSION_BLOCK
                    emit(f"R {stream} {reserved[stream]}")
                callback = functools.partial(on_delivery, stream, version)
                try:
                    if stream == "plain":
                        producer.produce(PLAIN_TOPIC, value=plain_value(version), partition=plain_partition(version),
                                         on_delivery=callback)
                    else:
                        tombstone = comp_is_tombstone(version)
                        producer.produce(COMPACT_TOPIC, key=comp_key(version, params.comp_keys).encode(),
                                         value=None if tombstone else comp_value(version),
                                         headers=[("v", b"%d" % version)], partition=0, on_delivery=callback)
                except BufferError:
                    break
                next_version[stream] = version + 1
                sent[stream] += 1
        producer.poll(0.005)
    producer.flush(1)


def _transactions(params: WorkloadParams, emit: _Events, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    rng = random.Random(params.seed)
    group_metadata = Consumer({"bootstrap.servers": params.bootstrap, "group.id": TXN_GROUP,
                               "log_level": LOG_LEVEL}).consumer_group_metadata()
    producer = Producer({"bootstrap.servers": params.bootstrap, "transactional.id": TRANSACTIONAL_ID,
                         "linger.ms": 5, "transaction.timeout.ms": 60_000, "log_level": LOG_LEVEL})
    producer.init_transactions(30)
    emit("TI")

    def on_delivery(txn_id: int, index: int, err: Any, msg: Any) -> None:
        if err is None and msg.topic() == TXN_TOPIC:
            emit(f"AT {txn_id} {index} {msg.offset()}")

    txn_id = params.txn_next
    while not stop.is_set():
        emit(f"TB {txn_id}")
        try:
            producer.begin_transaction()
            for index in range(TXN_RECORDS):
                producer.produce(TXN_TOPIC, value=txn_value(txn_id, index), partition=0,
                                 on_delivery=functools.partial(on_delivery, txn_id, index))
            tombstone = txn_is_tombstone(txn_id)
            producer.produce(COMPACT_TOPIC, key=txn_key(txn_id).encode(), value=None if tombstone else
                             comp_value(txn_id), headers=[("v", b"%d" % txn_id)], partition=0,
                             on_delivery=functools.partial(on_delivery, txn_id, -1))
            producer.send_offsets_to_transaction([TopicPartition(TXN_TOPIC, 0, txn_id + 1)], group_metadata, 30)
            if rng.random() < params.commit_probability:
                emit(f"TC {txn_id}")
                _retrying(producer.commit_transaction, stop)
                emit(f"TK {txn_id}")
            else:
                if producer.flush(30) != 0:
                    raise RuntimeError("flush before abort timed out")
                emit(f"TA {txn_id}")
                _retrying(producer.abort_transaction, stop)
                emit(f"TAK {txn_id}")
        except KafkaException as exc:
            error = exc.args[0]
            emit(f"TX {txn_id} {error}".replace("\n", " "))
            if not error.txn_requires_abort():
                return  # fatal (or retries exhausted): this cycle's transactions end here
            try:
                _retrying(producer.abort_transaction, stop)
            except KafkaException:
                return
        txn_id += 1
        stop.wait(0.03)


def _retrying(operation: Any, stop: threading.Event, attempts: int = 5) -> None:
    """`commit_transaction` / `abort_transaction`, called again on a retriable error (librdkafka's contract)."""
    from confluent_kafka import KafkaException

    for attempt in range(attempts):
        try:
            operation(30)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == attempts - 1 or stop.is_set():
                raise


def _group_consumer(params: WorkloadParams, emit: _Events, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": params.bootstrap, "group.id": GROUP,
                         "group.instance.id": "kill-loop-member", "session.timeout.ms": 6000,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "fetch.wait.max.ms": 50, "log_level": LOG_LEVEL})
    consumer.subscribe([PLAIN_TOPIC])
    next_commit = time.monotonic() + 0.1
    while not stop.is_set():
        consumer.consume(num_messages=1000, timeout=0.05)
        if time.monotonic() < next_commit:
            continue
        next_commit = time.monotonic() + 0.1
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        if not positions:
            continue
        for tp in positions:
            emit(f"GC {tp.partition} {tp.offset}")
        try:
            result = consumer.commit(offsets=positions, asynchronous=False)
        except KafkaException as exc:
            emit(f"GE {exc.args[0]}")
            continue
        for tp in result or []:
            if tp.error is None:
                emit(f"GK {tp.partition} {tp.offset}")


def run_workload(params: WorkloadParams, events: Connection) -> None:
    """Run the three clients until the process is killed (the parent SIGKILLs it right after the broker)."""
    emit = _Events(events)
    stop = threading.Event()
    threads = [threading.Thread(target=_guarded, args=(target, params, emit, stop), daemon=True)
               for target in (_idempotent_producer, _transactions, _group_consumer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _guarded(target: Any, params: WorkloadParams, emit: _Events, stop: threading.Event) -> None:
    try:
        target(params, emit, stop)
    except Exception as exc:  # reported, not raised: the parent decides what an error means
        emit(f"ERR {target.__name__} {type(exc).__name__}: {exc}".replace("\n", " "))

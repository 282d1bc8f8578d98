"""The reference model and the post-restart check of `bench.kill_loop` (its docstring lists the checks).

`KillLoopModel` holds what the workload acknowledged, wrote and what earlier checks read; `EventReader` (in
`bench.kill_loop`) feeds it the workload's event lines while a cycle runs, the main thread uses it between cycles
(never both at once). `Checker.check` reads the restarted broker and returns the violations, each naming topic,
partition, offset, expected and found.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.crash_checks import CompactedLogModel, CompactedRecord, read_cleaner_checkpoint
from bench.kill_loop_workload import (
    COMPACT_TOPIC,
    GROUP,
    LOG_LEVEL,
    PLAIN_PARTITIONS,
    PLAIN_TOPIC,
    TRANSACTIONAL_ID,
    TXN_GROUP,
    TXN_RECORDS,
    TXN_TOPIC,
    comp_is_tombstone,
    comp_key,
    plain_partition,
    plain_value,
    txn_is_tombstone,
    txn_key,
    txn_value,
)

READ_TIMEOUT_S = 60.0


@dataclass
class TxnState:
    txn_id: int
    commit_started: bool = False
    commit_returned: bool = False
    abort_returned: bool = False
    errors: list[str] = field(default_factory=list)
    acked_offsets: dict[int, int] = field(default_factory=dict)  # record index -> offset
    outcome: str | None = None  # "committed" / "aborted" once known


@dataclass
class Counts:
    kills: int = 0
    kills_in_cleaning_round: int = 0
    kills_in_transaction: int = 0
    kills_in_txn_commit: int = 0
    kills_in_group_commit: int = 0
    kills_before_first_ack: int = 0
    plain_acked: int = 0
    comp_acked: int = 0
    txn_records_acked: int = 0
    group_commits_acked: int = 0
    txn_committed: int = 0
    txn_aborted: int = 0
    txn_in_doubt_committed: int = 0
    txn_in_doubt_aborted: int = 0
    cleaning_rounds_completed: int = 0
    checks: int = 0
    records_read: int = 0
    worker_errors: Counter[str] = field(default_factory=Counter)
    phase_s: dict[str, float] = field(default_factory=dict)  # seconds spent per phase of a cycle, summed


class KillLoopModel:
    """Everything acknowledged, written and read so far; fed by the event reader thread while a cycle runs and
    by the main thread between cycles (never both at once)."""

    def __init__(self, comp_keys: int) -> None:
        self.comp_keys = comp_keys
        self.counts = Counts()
        self.plain_next = 0
        self.comp_next = 0
        self.txn_next = 0
        self.plain_acked_since_check: dict[tuple[int, int], int] = {}  # (partition, offset) -> version
        self.plain_previous: dict[tuple[int, int], bytes] = {}
        self.txn_previous: dict[int, bytes] = {}
        self.comp = CompactedLogModel(COMPACT_TOPIC)
        self.txns: dict[int, TxnState] = {}
        self.unresolved: set[int] = set()
        self.aborted_txns: set[int] = set()
        self.last_committed_txn = -1
        self.group_acked: dict[int, int] = {}
        self.group_sent: dict[int, int] = {}
        # state of the running cycle, for classifying the kill
        self.open_txn: int | None = None
        self.pending_group_commit: set[int] = set()
        self.acked_in_cycle = False

    # ---------------------------------------------------------------- events from the workload
    def apply(self, line: str) -> None:
        parts = line.split(" ")
        kind = parts[0]
        if kind in ("A", "AT", "GK"):
            self.acked_in_cycle = True
        if kind == "A":
            stream, version, partition, offset = parts[1], int(parts[2]), int(parts[3]), int(parts[4])
            if stream == "plain":
                self.plain_acked_since_check[(partition, offset)] = version
                self.counts.plain_acked += 1
            else:
                self.comp.record_ack(comp_key(version, self.comp_keys), version)
                self.counts.comp_acked += 1
        elif kind == "R":
            stream, upto = parts[1], int(parts[2])
            if stream == "plain":
                self.plain_next = max(self.plain_next, upto)
            else:
                for version in range(self.comp_next, upto):
                    self.comp.record_write(comp_key(version, self.comp_keys), version, comp_is_tombstone(version))
                self.comp_next = max(self.comp_next, upto)
        elif kind == "TB":
            txn_id = int(parts[1])
            self.txns[txn_id] = TxnState(txn_id)
            self.unresolved.add(txn_id)
            self.txn_next = max(self.txn_next, txn_id + 1)
            self.comp.record_write(txn_key(txn_id), txn_id, tombstone=False)  # its tombstone counts once committed
            self.open_txn = txn_id
        elif kind == "AT":
            self.txns[int(parts[1])].acked_offsets[int(parts[2])] = int(parts[3])
            self.counts.txn_records_acked += 1
        elif kind == "TC":
            self.txns[int(parts[1])].commit_started = True
        elif kind == "TK":
            self.txns[int(parts[1])].commit_returned = True
            self.open_txn = None
        elif kind == "TAK":
            self.txns[int(parts[1])].abort_returned = True
            self.open_txn = None
        elif kind == "TX":
            self.txns[int(parts[1])].errors.append(" ".join(parts[2:]))
            self.counts.worker_errors["transaction error"] += 1
            self.open_txn = None
        elif kind == "GC":
            partition, offset = int(parts[1]), int(parts[2])
            self.group_sent[partition] = max(self.group_sent.get(partition, -1), offset)
            self.pending_group_commit.add(partition)
        elif kind == "GK":
            partition, offset = int(parts[1]), int(parts[2])
            self.group_acked[partition] = max(self.group_acked.get(partition, -1), offset)
            self.pending_group_commit.discard(partition)
            self.counts.group_commits_acked += 1
        elif kind == "GE":
            self.pending_group_commit.clear()
            self.counts.worker_errors["group commit error"] += 1
        elif kind == "ERR":
            self.counts.worker_errors[" ".join(parts[1:3])] += 1
            print(f"  workload error: {line}", flush=True)

    def start_cycle(self) -> None:
        self.open_txn = None
        self.pending_group_commit = set()
        self.acked_in_cycle = False

    def classify_kill(self) -> None:
        self.counts.kills += 1
        if self.open_txn is not None:
            self.counts.kills_in_transaction += 1
            self.counts.kills_in_txn_commit += self.txns[self.open_txn].commit_started
        self.counts.kills_in_group_commit += bool(self.pending_group_commit)
        self.counts.kills_before_first_ack += not self.acked_in_cycle


@dataclass
class ReadResult:
    plain: dict[tuple[int, int], bytes]
    txn: dict[int, bytes]
    comp: list[CompactedRecord]
    comp_corrupt: list[str]
    ends: dict[tuple[str, int], int]


def _read_everything(bootstrap: str) -> ReadResult:
    """Every partition from its start to its last stable offset with one read_committed consumer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kill-loop-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "fetch.wait.max.ms": 50, "max.partition.fetch.bytes": 8 * 1024 * 1024,
                         "fetch.max.bytes": 32 * 1024 * 1024, "log_level": LOG_LEVEL})
    partitions = [(PLAIN_TOPIC, p) for p in range(PLAIN_PARTITIONS)] + [(TXN_TOPIC, 0), (COMPACT_TOPIC, 0)]
    result = ReadResult({}, {}, [], [], {})
    try:
        for topic, partition in partitions:
            result.ends[(topic, partition)] = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=20, cached=False)[1]
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for topic, p in partitions])
        reached: set[tuple[str, int]] = set()
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(reached) < len(partitions):
            if time.monotonic() > deadline:
                missing = sorted(set(partitions) - reached)
                raise TimeoutError(f"read did not reach the end of {missing} within {READ_TIMEOUT_S}s")
            for msg in consumer.consume(num_messages=10_000, timeout=0.2):
                error = msg.error()
                where = (str(msg.topic()), int(msg.partition() or 0))
                offset = int(msg.offset() or 0)
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        if offset >= result.ends[where]:
                            reached.add(where)
                        continue
                    raise RuntimeError(f"consumer error on {where}: {error}")
                value = msg.value()
                if where[0] == PLAIN_TOPIC:
                    result.plain[(where[1], offset)] = bytes(value or b"")
                elif where[0] == TXN_TOPIC:
                    result.txn[offset] = bytes(value or b"")
                else:
                    key = bytes(msg.key() or b"").decode()
                    version = _version_header(msg.headers())
                    if value is not None and not bytes(value).startswith(b"%d|" % version):
                        result.comp_corrupt.append(f"{COMPACT_TOPIC}/0 offset {offset}: key {key} header version "
                                                   f"{version} but value {bytes(value)[:20]!r}")
                    result.comp.append(CompactedRecord(offset, key, version, value is None))
        return result
    finally:
        consumer.close()


def _version_header(headers: Any) -> int:
    for name, value in headers or []:
        if name == "v":
            return int(value)
    return -1


def _committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "log_level": LOG_LEVEL})
    try:
        return {tp.partition: tp.offset
                for tp in consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=20)}
    finally:
        consumer.close()


def _resolve_open_transactions(bootstrap: str) -> None:
    """`init_transactions` with the workload's transactional.id: the coordinator completes a transaction the kill
    left in PrepareCommit/PrepareAbort and aborts an ongoing one before it answers."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID, "log_level": LOG_LEVEL})
    producer.init_transactions(60)
    producer.flush(1)


class Phases:
    """Adds the time since the previous call to `totals[name]`."""

    def __init__(self, totals: dict[str, float]) -> None:
        self.totals = totals
        self.last = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.totals[name] = self.totals.get(name, 0.0) + now - self.last
        self.last = now


class Checker:
    """The post-restart check (the module docstring's steps 1-6) against a `KillLoopModel`."""

    def __init__(self, model: KillLoopModel, data_dir: Path) -> None:
        self.model = model
        self.data_dir = data_dir

    def check(self, bootstrap: str, label: str) -> list[str]:
        m = self.model
        phase = Phases(m.counts.phase_s)
        _resolve_open_transactions(bootstrap)
        phase("check: init_transactions")
        cleaned_up_to = read_cleaner_checkpoint(self.data_dir, COMPACT_TOPIC, 0)  # before the read
        read = _read_everything(bootstrap)
        phase("check: read all partitions")
        group = _committed_offsets(bootstrap, GROUP, PLAIN_TOPIC, PLAIN_PARTITIONS)
        txn_group = _committed_offsets(bootstrap, TXN_GROUP, TXN_TOPIC, 1)
        phase("check: fetch committed offsets")
        m.counts.checks += 1
        m.counts.records_read += len(read.plain) + len(read.txn) + len(read.comp)
        failures: list[str] = list(read.comp_corrupt)
        failures += self._check_plain(read, label)
        failures += self._check_transactions(read, txn_group, label)
        failures += m.comp.check(read.comp, cleaned_up_to, label=f"{label}: ")
        comp_present = {(r.key, r.version) for r in read.comp}
        for txn_id in m.aborted_txns:
            if (txn_key(txn_id), txn_id) in comp_present:
                failures.append(f"{label}: {COMPACT_TOPIC}/0: key {txn_key(txn_id)} version {txn_id} of aborted "
                                f"transaction {txn_id} visible read_committed")
        failures += self._check_group(group, read, label)
        phase("check: compare")
        return failures

    def _check_plain(self, read: ReadResult, label: str) -> list[str]:
        m = self.model
        failures = _check_kept(f"{label}: {PLAIN_TOPIC}", m.plain_previous, read.plain)
        for (partition, offset), version in sorted(m.plain_acked_since_check.items()):
            found = read.plain.get((partition, offset))
            if found != plain_value(version):
                failures.append(f"{label}: {PLAIN_TOPIC}/{partition} offset {offset}: acknowledged "
                                f"{plain_value(version)!r}, found {found!r}")
        seen: dict[bytes, tuple[int, int]] = {}
        for position, value in read.plain.items():
            first = seen.setdefault(value, position)
            if first != position:
                failures.append(f"{label}: {PLAIN_TOPIC}: value {value!r} at {first} and at {position} (duplicate)")
            elif not value.startswith(b"p:") or plain_partition(int(value[2:])) != position[0] \
                    or int(value[2:]) >= m.plain_next:
                failures.append(f"{label}: {PLAIN_TOPIC}/{position[0]} offset {position[1]}: unexpected {value!r}")
        m.plain_acked_since_check = {}
        m.plain_previous = read.plain
        return failures

    def _check_transactions(self, read: ReadResult, txn_group: dict[int, int], label: str) -> list[str]:
        m = self.model
        where = f"{label}: {TXN_TOPIC}/0"
        failures = _check_kept(where, m.txn_previous, read.txn)
        visible: dict[int, list[int]] = {}
        for offset, value in read.txn.items():
            try:
                _, id_text, index_text = value.split(b":")
                visible.setdefault(int(id_text), []).append(int(index_text))
            except ValueError:
                failures.append(f"{where} offset {offset}: unexpected {value!r}")
        for txn_id in sorted(visible):
            if txn_id not in m.txns:
                failures.append(f"{where}: records of transaction {txn_id}, never begun, visible")
            elif txn_id in m.aborted_txns:
                failures.append(f"{where}: records {visible[txn_id]} of aborted transaction {txn_id} visible")
        for txn_id in sorted(m.unresolved):
            txn = m.txns[txn_id]
            indexes = sorted(visible.get(txn_id, []))
            complete = indexes == list(range(TXN_RECORDS))
            if txn.commit_returned:
                if not complete:
                    failures.append(f"{where}: committed transaction {txn_id}: expected records {TXN_RECORDS}, "
                                    f"found indexes {indexes}")
                for index, offset in txn.acked_offsets.items():
                    if read.txn.get(offset) != txn_value(txn_id, index):
                        failures.append(f"{where} offset {offset}: committed {txn_value(txn_id, index)!r}, found "
                                        f"{read.txn.get(offset)!r}")
                outcome = "committed"
                m.counts.txn_committed += 1
            elif txn.commit_started:  # killed (or failed) during the commit: all or nothing
                if indexes and not complete:
                    failures.append(f"{where}: transaction {txn_id} killed during its commit is partly visible: "
                                    f"indexes {indexes}")
                outcome = "committed" if indexes else "aborted"
                if outcome == "committed":
                    m.counts.txn_in_doubt_committed += 1
                else:
                    m.counts.txn_in_doubt_aborted += 1
            else:  # aborted, or killed before its commit: must be invisible
                if indexes:
                    state = "aborted" if txn.abort_returned else "never committed"
                    failures.append(f"{where}: {state} transaction {txn_id} visible: indexes {indexes}")
                outcome = "aborted"
                m.counts.txn_aborted += 1
            txn.outcome = outcome
            if outcome == "committed":
                m.comp.record_ack(txn_key(txn_id), txn_id)
                if txn_is_tombstone(txn_id):
                    m.comp.record_tombstone(txn_key(txn_id), txn_id)
                m.last_committed_txn = max(m.last_committed_txn, txn_id)
            else:
                m.aborted_txns.add(txn_id)
        m.unresolved = set()
        m.txn_previous = read.txn
        found = txn_group.get(0, -1001)
        expected = m.last_committed_txn + 1 if m.last_committed_txn >= 0 else None
        if expected is None and found >= 0:
            failures.append(f"{label}: group {TXN_GROUP} {TXN_TOPIC}/0: no transaction committed, found offset {found}")
        elif expected is not None and found != expected:
            failures.append(f"{label}: group {TXN_GROUP} {TXN_TOPIC}/0: committed offset of the last committed "
                            f"transaction {m.last_committed_txn} is {expected}, found {found}")
        return failures

    def _check_group(self, committed: dict[int, int], read: ReadResult, label: str) -> list[str]:
        m = self.model
        failures = []
        for partition in range(PLAIN_PARTITIONS):
            found = committed.get(partition, -1001)
            acked = m.group_acked.get(partition)
            sent = m.group_sent.get(partition)
            where = f"{label}: group {GROUP} {PLAIN_TOPIC}/{partition}"
            if acked is not None and found < acked:
                failures.append(f"{where}: committed offset {found} < acknowledged commit {acked}")
            if found >= 0 and (sent is None or found > sent):
                failures.append(f"{where}: committed offset {found} > highest sent {sent}")
            if found > read.ends[(PLAIN_TOPIC, partition)]:
                failures.append(f"{where}: committed offset {found} > high watermark "
                                f"{read.ends[(PLAIN_TOPIC, partition)]}")
        return failures


def _check_kept(where: str, previous: dict[Any, bytes], now: dict[Any, bytes]) -> list[str]:
    """Records read at the previous check must still be read at the same offset with the same value."""
    failures = []
    for position, value in previous.items():
        found = now.get(position)
        if found != value:
            failures.append(f"{where} offset {position}: read {value!r} at the previous check, found {found!r}")
            if len(failures) >= 20:
                failures.append(f"{where}: (more not listed)")
                break
    return failures

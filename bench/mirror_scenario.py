"""One MirrorMaker 2 migration, `source -> target`, run in the cut-over order of docs/moving-to-kafka.md and
checked with confluent-kafka.

On the source: an ordinary topic (several partitions, keyed records with two headers), a compacted topic
(overwritten keys and a tombstone) and two consumer groups (classic protocol): "audit" has committed only the first
records of each partition and is stopped. MirrorMaker 2 starts; the producers keep writing to the source for a
while, then stop; "billing" reads the source to its end and commits; MirrorMaker runs until the target has every
record and the groups' translated offsets, then stops. The producers move to the target and write more: "billing"
must resume there exactly after what it committed on the source (nothing re-read, nothing skipped), and "audit" at
or before its committed offsets, never after.

`run_migration` returns what it saw (`MigrationResult`); a failed check raises `MigrationError` (an
AssertionError) with the details and MirrorMaker's log tail.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from bench.mirror_maker import MirrorMaker

ORDER_PARTITIONS = 3
ACCOUNT_PARTITIONS = 2
BACKLOG_RECORDS = 60  # on the source before MirrorMaker starts
LIVE_RECORDS = 30  # produced on the source while MirrorMaker runs, before the producers stop
AFTER_CUT_OVER_RECORDS = 45  # produced on the target after the cut-over
LAGGING_GROUP_OFFSET = 8  # "audit" commits this offset in every partition
ACCOUNT_KEYS = 8
ACCOUNT_ROUNDS = 3
TOMBSTONED_KEY = "acct-3"
LIVE_CONFIG_CHANGE = ("min.compaction.lag.ms", "5000")  # set on the source's compacted topic while MM2 runs
CLIENT_TIMEOUT_S = 30.0
# MirrorMaker restarts its checkpoint task when it finds a new group; a call the old task's scheduler had started
# then fails on its closed admin client and is logged at ERROR. Nothing is lost: the new task repeats it.
BENIGN_ERROR = "Cannot accept new calls when AdminClient is closing"

# (key, value, headers) of one record; a tombstone has value None.
Row = tuple[str, str | None, tuple[tuple[str, str], ...]]
# (offset, timestamp, row) of one stored record.
Stored = tuple[int, int, Row]


class MigrationError(AssertionError):
    """A check of the migration failed: what was expected, what the target holds, and MirrorMaker's log tail."""


@dataclass
class MigrationResult:
    """What one `source -> target` run observed (every check has passed when it is returned)."""

    source: str
    target: str
    orders_topic: str
    accounts_topic: str
    group: str
    lagging_group: str
    mirror_maker_s: float = 0.0  # MirrorMaker's wall time, start to stop
    target_offsets: dict[int, int] = field(default_factory=dict)  # "billing"'s, on the target
    lagging_target_offsets: dict[int, int] = field(default_factory=dict)  # "audit"'s, on the target
    resumed_records: int = 0  # what "billing" read on the target after the cut-over
    target_topic_configs: dict[str, str] = field(default_factory=dict)  # the compacted topic's, on the target


# ------------------------------------------------------------------------------------------------ clients


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})  # no info lines when a handle is freed


def create_topics(bootstrap: str, orders: str, accounts: str) -> None:
    admin = _admin(bootstrap)  # keep the handle alive until the futures resolve
    futures = admin.create_topics([
        NewTopic(orders, ORDER_PARTITIONS, 1),
        NewTopic(accounts, ACCOUNT_PARTITIONS, 1, config={"cleanup.policy": "compact"}),
    ], operation_timeout=CLIENT_TIMEOUT_S)
    for future in futures.values():
        future.result(timeout=CLIENT_TIMEOUT_S)


def topic_overrides(bootstrap: str, topic: str) -> dict[str, str]:
    """The configs set on the topic itself (DescribeConfigs source DYNAMIC_TOPIC_CONFIG), not defaults."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = _admin(bootstrap)
    entries = admin.describe_configs([resource])[resource].result(timeout=CLIENT_TIMEOUT_S)
    return {name: entry.value for name, entry in entries.items()
            if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def set_topic_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin = _admin(bootstrap)
    admin.incremental_alter_configs([resource])[resource].result(timeout=CLIENT_TIMEOUT_S)


def produce(bootstrap: str, topic: str, rows: list[tuple[int, Row]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for partition, (key, value, headers) in rows:
        producer.produce(topic, key=key.encode(), value=None if value is None else value.encode(),
                         headers=[(name, text.encode()) for name, text in headers], partition=partition,
                         on_delivery=delivered)
    if producer.flush(CLIENT_TIMEOUT_S) != 0 or failures:
        raise MigrationError(f"producing to {topic} on {bootstrap} failed: {failures or 'flush timed out'}")


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"watermarks-{uuid.uuid4().hex[:6]}"})
    try:
        return {partition: consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                          timeout=CLIENT_TIMEOUT_S)[1]
                for partition in range(partitions)}
    finally:
        consumer.close()


def try_high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int] | None:
    try:
        return high_watermarks(bootstrap, topic, partitions)
    except KafkaException:
        return None  # the topic does not exist (yet) on that cluster


def _row(message: Any) -> Row:
    value = message.value()
    headers = tuple((name, text.decode()) for name, text in (message.headers() or []))
    return (message.key().decode(), None if value is None else value.decode(), headers)


def _position(message: Any) -> tuple[int, int]:
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None, "a fetched record has both"
    return partition, offset


def read_partitions(bootstrap: str, topic: str, partitions: int) -> dict[int, list[Stored]]:
    """Every record of `topic` from offset 0 to its high watermark, per partition, in offset order."""
    ends = high_watermarks(bootstrap, topic, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    stored: dict[int, list[Stored]] = {partition: [] for partition in range(partitions)}
    positions = dict.fromkeys(range(partitions), 0)
    try:
        consumer.assign([TopicPartition(topic, partition, 0) for partition in range(partitions)])
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                raise MigrationError(f"reading {topic} on {bootstrap}: {message.error()}")
            partition, offset = _position(message)
            stored[partition].append((offset, message.timestamp()[1], _row(message)))
            positions[partition] = offset + 1
    finally:
        consumer.close()
    if any(positions[p] < ends[p] for p in positions):
        raise MigrationError(f"reading {topic} on {bootstrap}: stopped at {positions}, end {ends}")
    return stored


def group_consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "classic",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 10_000})


def consume_in_group(
    bootstrap: str, group: str, topic: str, count: int, commit_at: int | None = None
) -> dict[int, list[Row]]:
    """Join `group`, read `count` records of `topic` and check that nothing more arrives, commit (the position,
    or offset `commit_at` in every partition read), leave. Returns the rows read per partition, in order."""
    consumer = group_consumer(bootstrap, group)
    seen: dict[int, list[Row]] = {}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        quiet_until = None
        while time.monotonic() < (deadline if quiet_until is None else quiet_until):
            message = consumer.poll(0.2)
            if message is not None and message.error():
                raise MigrationError(f"group {group} on {bootstrap}: {message.error()}")
            if message is not None:
                seen.setdefault(_position(message)[0], []).append(_row(message))
            if quiet_until is None and sum(len(rows) for rows in seen.values()) >= count:
                quiet_until = time.monotonic() + 2.0
        if commit_at is None:
            consumer.commit(asynchronous=False)
        else:
            consumer.commit(offsets=[TopicPartition(topic, p, commit_at) for p in sorted(seen)], asynchronous=False)
    finally:
        consumer.close()
    return seen


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition (-1001: none), read with OffsetFetch."""
    consumer = group_consumer(bootstrap, group)
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                       timeout=CLIENT_TIMEOUT_S)
        return {tp.partition: tp.offset for tp in committed}
    finally:
        consumer.close()


# ------------------------------------------------------------------------------------------------ data


def order_rows(origin: str, first: int, count: int) -> list[tuple[int, Row]]:
    """(partition, row) of orders `first`..`first+count-1`: keyed, two headers, spread over the partitions."""
    return [(seq % ORDER_PARTITIONS, (f"order-{seq}", f"amount={seq * 7}", (("seq", str(seq)), ("origin", origin))))
            for seq in range(first, first + count)]


def account_rows() -> list[tuple[int, Row]]:
    """Every key written ACCOUNT_ROUNDS times, then TOMBSTONED_KEY deleted: the compacted topic's history."""
    rows = [(key_no % ACCOUNT_PARTITIONS, (f"acct-{key_no}", f"balance-{round_no}-{key_no}", ()))
            for round_no in range(ACCOUNT_ROUNDS) for key_no in range(ACCOUNT_KEYS)]
    tombstone_no = int(TOMBSTONED_KEY.rsplit("-", 1)[1])
    return [*rows, (tombstone_no % ACCOUNT_PARTITIONS, (TOMBSTONED_KEY, None, ()))]


def by_partition(rows: list[tuple[int, Row]]) -> dict[int, list[Row]]:
    grouped: dict[int, list[Row]] = {}
    for partition, row in rows:
        grouped.setdefault(partition, []).append(row)
    return grouped


def latest_per_key(rows: list[Row]) -> dict[str, str]:
    latest: dict[str, str] = {}
    for key, value, _headers in rows:
        if value is None:
            latest.pop(key, None)
        else:
            latest[key] = value
    return latest


# ------------------------------------------------------------------------------------------------ the run


def _wait(what: str, check: Callable[[], bool], timeout_s: float, mm2: MirrorMaker) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        mm2.check_running()
        if check():
            return
        time.sleep(0.5)
    raise MigrationError(f"timed out after {timeout_s}s waiting for {what}\nMirrorMaker log tail:\n{mm2.log_tail()}")


def _wait_caught_up(src: str, dst: str, topic: str, partitions: int, timeout_s: float, mm2: MirrorMaker) -> None:
    """Replication lag 0: the target's end offsets of `topic` equal the source's."""
    end_offsets = high_watermarks(src, topic, partitions)
    _wait(f"{topic} on the target up to {end_offsets}",
          lambda: try_high_watermarks(dst, topic, partitions) == end_offsets, timeout_s, mm2)


def _expect(condition: bool, message: str, mm2: MirrorMaker) -> None:
    if not condition:
        raise MigrationError(f"{message}\nMirrorMaker log tail:\n{mm2.log_tail()}")


def run_migration(
    work_dir: Path, clusters: dict[str, str], source: str, target: str, timeout_s: float = 120.0,
    lib_dir: Path | None = None,
) -> MigrationResult:
    """Migrate fresh topics and groups `source -> target` (aliases of `clusters`) with MirrorMaker 2, checking
    everything; MirrorMaker's files go under `work_dir`."""
    suffix = uuid.uuid4().hex[:8]
    result = MigrationResult(source, target, f"orders-{suffix}", f"accounts-{suffix}", f"billing-{suffix}",
                             f"audit-{suffix}")
    src, dst, orders, accounts = clusters[source], clusters[target], result.orders_topic, result.accounts_topic
    create_topics(src, orders, accounts)
    produce(src, orders, order_rows(source, 0, BACKLOG_RECORDS))
    produce(src, accounts, account_rows())
    consume_in_group(src, result.lagging_group, orders, BACKLOG_RECORDS, commit_at=LAGGING_GROUP_OFFSET)
    lagging = committed_offsets(src, result.lagging_group, orders, ORDER_PARTITIONS)

    mm2 = MirrorMaker(work_dir / f"mm2-{source}-to-{target}", clusters, source, target, lib_dir=lib_dir,
                      overrides={f"{source}->{target}.topics": f"{orders}|{accounts}",
                                 f"{source}->{target}.groups": f"{result.group}|{result.lagging_group}"})
    started = time.monotonic()
    with mm2:
        # The applications still run on the source: a producer writes, a topic config changes.
        _wait(f"{orders} on the target", lambda: try_high_watermarks(dst, orders, ORDER_PARTITIONS) is not None,
              timeout_s, mm2)
        produce(src, orders, order_rows(source, BACKLOG_RECORDS, LIVE_RECORDS))
        set_topic_config(src, accounts, *LIVE_CONFIG_CHANGE)
        # Cut-over: the producers have stopped; wait for replication lag 0.
        _wait_caught_up(src, dst, orders, ORDER_PARTITIONS, timeout_s, mm2)
        _wait_caught_up(src, dst, accounts, ACCOUNT_PARTITIONS, timeout_s, mm2)
        # "billing" reads the source to its end and stops; wait until its offsets are on the target.
        consume_in_group(src, result.group, orders, BACKLOG_RECORDS + LIVE_RECORDS)
        drained = committed_offsets(src, result.group, orders, ORDER_PARTITIONS)
        _wait(f"{result.group}'s offsets {drained} on the target",
              lambda: committed_offsets(dst, result.group, orders, ORDER_PARTITIONS) == drained, timeout_s, mm2)
        _wait(f"{result.lagging_group}'s offsets on the target",
              lambda: min(committed_offsets(dst, result.lagging_group, orders, ORDER_PARTITIONS).values()) >= 0,
              timeout_s, mm2)
        _wait(f"{LIVE_CONFIG_CHANGE} on the target's {accounts}",
              lambda: topic_overrides(dst, accounts).get(LIVE_CONFIG_CHANGE[0]) == LIVE_CONFIG_CHANGE[1],
              timeout_s, mm2)
        errors = [entry for entry in mm2.log_entries("ERROR") if BENIGN_ERROR not in entry]
    result.mirror_maker_s = time.monotonic() - started
    _expect(not errors, "MirrorMaker logged errors:\n" + "\n".join(errors[:20]), mm2)

    # Every record in the same partition at the same offset, with its key, value, headers and timestamp.
    source_orders = read_partitions(src, orders, ORDER_PARTITIONS)
    _expect(read_partitions(dst, orders, ORDER_PARTITIONS) == source_orders,
            f"{orders} differs between {source} and {target}", mm2)
    # The compacted topic: the same topic configs (cleanup.policy=compact and the live change, nothing else set),
    # the same latest value per key, the tombstoned key absent.
    result.target_topic_configs = topic_overrides(dst, accounts)
    expected_configs = {"cleanup.policy": "compact", LIVE_CONFIG_CHANGE[0]: LIVE_CONFIG_CHANGE[1]}
    _expect(result.target_topic_configs == topic_overrides(src, accounts) == expected_configs,
            f"{accounts}'s configs on {target}: {result.target_topic_configs}", mm2)
    mirrored = read_partitions(dst, accounts, ACCOUNT_PARTITIONS)
    latest = latest_per_key([row for p in sorted(mirrored) for _offset, _ts, row in mirrored[p]])
    _expect(latest == latest_per_key([row for _p, row in account_rows()]), f"{accounts} on {target}: {latest}", mm2)

    # The producers move to the target; the groups resume there.
    after_cut_over = order_rows(target, BACKLOG_RECORDS + LIVE_RECORDS, AFTER_CUT_OVER_RECORDS)
    produce(dst, orders, after_cut_over)
    result.target_offsets = committed_offsets(dst, result.group, orders, ORDER_PARTITIONS)
    _expect(result.target_offsets == drained, f"{result.group}'s offsets on {target}: {result.target_offsets}, "
            f"on {source}: {drained}", mm2)
    resumed = consume_in_group(dst, result.group, orders, AFTER_CUT_OVER_RECORDS)
    result.resumed_records = sum(len(rows) for rows in resumed.values())
    _expect(resumed == by_partition(after_cut_over),
            f"{result.group} read {resumed} on {target}, not just what was produced after the cut-over", mm2)
    # "audit" is translated to an offset sync at or before its offsets: it may re-read, it never skips.
    result.lagging_target_offsets = committed_offsets(dst, result.lagging_group, orders, ORDER_PARTITIONS)
    _expect(all(0 <= result.lagging_target_offsets[p] <= lagging[p] for p in lagging),
            f"{result.lagging_group}'s offsets on {target}: {result.lagging_target_offsets}, on {source}: {lagging}",
            mm2)
    everything = {p: [row for _offset, _ts, row in source_orders[p]] + by_partition(after_cut_over).get(p, [])
                  for p in source_orders}
    expected = {p: rows[result.lagging_target_offsets[p]:] for p, rows in everything.items()}
    audit_read = consume_in_group(dst, result.lagging_group, orders, sum(len(rows) for rows in expected.values()))
    _expect(audit_read == expected, f"{result.lagging_group} read {audit_read} on {target}, expected {expected}",
            mm2)
    return result

"""Exact compaction's broker side (issue 10): `LogCleaner.request_exact_compaction` and the round it queues, against
a real LogManager under tmp_path with a FakeClock. Plans come from `tests.cleaner.retained_offset_plans` (pure
Python, reading the partition's files as a read_committed consumer would)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from hashlib import blake2b
from pathlib import Path
from typing import Any

import pytest

from minikafka.cleaner import offset_map
from minikafka.cleaner.config import CleanerConfig
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.cleaner.manual_compaction import CompactionRequest
from minikafka.cleaner.offset_map import OffsetMap
from minikafka.cleaner.retained_offset_plan import InvalidRetainedOffsetPlanError
from minikafka.protocol.records import Record, iter_batches
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog
from tests.cleaner.compacted_log import COMPACT, T0, read_all
from tests.cleaner.retained_offset_plans import committed_keyed_records, latest_offsets, plan_of_log, write_plan

#: a 16 KiB offset map: 1,057 slots, 951 keys (`OffsetMap(16384).capacity`)
TINY_MAP = CleanerConfig(dedupe_buffer_size=16 * 1024, backoff_ms=100, worker_processes=False)
TINY_MAP_IN_PROCESS = dataclasses.replace(TINY_MAP, worker_processes=True)
DELETE_RETENTION_MS = 1000
TOPIC = {**COMPACT, "delete.retention.ms": str(DELETE_RETENTION_MS)}
WAIT_S = 60

Rows = list[tuple[int, bytes | None, bytes | None]]


def append(log: UnifiedLog, pairs: list[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
           sequence: int = -1, transactional: bool = False) -> int:
    """One batch; returns its base offset."""
    records = [Record(i, T0, key, value) for i, (key, value) in enumerate(pairs)]
    info = log.append_as_leader(build_batch(records, base_offset=0, producer_id=producer_id,
                                            producer_epoch=0 if producer_id >= 0 else -1, base_sequence=sequence,
                                            is_transactional=transactional))
    return info.first_offset


def key(i: int) -> bytes:
    return b"k%05d" % i


def make_log(manager: LogManager, name: str, overrides: dict[str, str] | None = None) -> UnifiedLog:
    manager.create_topic(name, 1, {**TOPIC, **(overrides or {})})
    log = manager.get_log(name, 0)
    assert log is not None
    return log


def topic_id(manager: LogManager, name: str) -> bytes:
    meta = manager.topic(name)
    assert meta is not None
    return meta.topic_id.bytes


def fill_many_keys(log: UnifiedLog, keys: int = 2000, versions: int = 3) -> None:
    """`versions` rounds over `keys` keys in batches of 100 (a segment every 5 batches); the last round tombstones
    every 10th key; then a committed transaction (producer 7: new values for keys 0..49) and an aborted one
    (producer 8: values for keys 50..99 and for a key written nowhere else)."""
    batches = 0
    for version in range(versions):
        for first in range(0, keys, 100):
            last_round = version == versions - 1
            append(log, [(key(i), None if last_round and i % 10 == 0 else b"v%d-%d" % (version, i))
                         for i in range(first, first + 100)])
            batches += 1
            if batches % 5 == 0:
                log.roll()
    append(log, [(key(i), b"committed-%d" % i) for i in range(50)], producer_id=7, sequence=0, transactional=True)
    log.append_transaction_marker(7, 0, 0, commit=True)
    append(log, [(key(i), b"aborted-%d" % i) for i in range(50, 100)] + [(b"ghost", b"aborted")],
           producer_id=8, sequence=0, transactional=True)
    log.append_transaction_marker(8, 0, 0, commit=False)
    log.roll()


def expected_after(rows: Rows, plan: list[int], end_offset: int) -> Rows:
    """What an exact round over [0, end) leaves: the plan's records, then everything from the end on."""
    keep = set(plan)
    return [r for r in rows if r[0] in keep or r[0] >= end_offset]


def run_exact(cleaner: LogCleaner, topic: str, plan_path: Path, partition: int = 0) -> CompactionRequest:
    request = cleaner.request_exact_compaction(topic, partition, plan_path, delete_plan=True)
    assert request.wait(WAIT_S)
    return request


def only_result(request: CompactionRequest) -> dict[str, Any]:
    (result,) = request.to_json()["results"]
    assert isinstance(result, dict)
    return result


def segment_files(log: UnifiedLog) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.dir.iterdir()) if p.suffix in (".log", ".txnindex")}


# -------------------------------------------------------------------------------------- one round, many keys
def test_one_exact_round_keeps_exactly_the_latest_record_per_key_where_the_ordinary_cleaner_needs_many_rounds(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    exact, ordinary = make_log(log_manager, "exact"), make_log(log_manager, "ordinary")
    for log in (exact, ordinary):
        fill_many_keys(log)
    end = exact.log_end_offset
    assert OffsetMap(TINY_MAP.dedupe_buffer_bytes_per_thread).capacity < 2000  # more keys than the map holds
    rows = read_all(exact)
    plan = plan_of_log(exact, topic_id(log_manager, "exact"), tmp_path / "exact.plan", 0, end)
    assert len(plan) == 2000  # keys 0..1999; the aborted writes (and the ghost key) are not in it
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)

    with caplog.at_level(logging.INFO, logger="minikafka.cleaner.log_cleaner"):
        request = run_exact(cleaner, "exact", tmp_path / "exact.plan")
    result = only_result(request)
    assert (result["status"], result["rounds"], result["end_offset"]) == ("cleaned", 1, end)
    assert request.to_json()["plan"] == {"count": 2000, "start_offset": 0, "end_offset": end}
    after = read_all(exact)
    assert after == expected_after(rows, plan, end)
    by_key = {k: v for _, k, v in after}
    assert len(by_key) == len(after) == 2000  # one record per key
    assert all(by_key[key(i)] == b"committed-%d" % i for i in range(50))  # the committed transaction won
    assert all(by_key[key(i)] is None for i in range(50, 2000, 10))  # tombstones: stage one keeps them
    assert b"ghost" not in by_key and not any(v and v.startswith(b"aborted") for v in by_key.values())
    assert result["records_removed"] == result["messages_read"] - result["messages_written"] > 0
    assert not (tmp_path / "exact.plan").exists()  # the request owned the file
    # Checkpoint, statistics line and per-partition metrics as an ordinary round.
    assert log_manager.cleaner_offset_checkpoint.read() == {("exact", 0): end}
    assert f"Beginning exact cleaning of log exact-0 with a plan of 2000 offsets for [0, {end})" in caplog.text
    assert f"Log cleaner thread -1 cleaned log exact-0 (dirty section = [0, {end}])" in caplog.text
    record = cleaner.cleaning_record(exact)
    assert record.records_removed == result["records_removed"]
    assert record.tombstones_pending == 195 and record.tombstone_horizon_ms == T0 + DELETE_RETENTION_MS
    for batch in _batches(exact):
        if not batch.is_control and any(r.value is None for r in batch.records()):
            assert batch.delete_horizon_ms == T0 + DELETE_RETENTION_MS  # stage one stamps the horizon

    # The ordinary cleaner on the same data: the map fills up, round after round, until it is done.
    manual = cleaner.request_compaction("ordinary", 0)
    assert manual.wait(WAIT_S)
    ordinary_rounds = only_result(manual)["rounds"]
    print(f"exact: 1 round; ordinary cleaner with a {TINY_MAP.dedupe_buffer_size}-byte map: {ordinary_rounds} rounds")
    assert ordinary_rounds >= 6
    assert read_all(ordinary) == after  # both end with the same records at the same offsets

    # Stage two: past the delete horizon a second exact round (a new plan) removes the tombstones.
    clock.advance_ms(DELETE_RETENTION_MS + 1)
    second = plan_of_log(exact, topic_id(log_manager, "exact"), tmp_path / "second.plan", 0, end)
    assert second == plan  # the same latest offsets: nothing new in the range
    assert only_result(run_exact(cleaner, "exact", tmp_path / "second.plan"))["status"] == "cleaned"
    assert read_all(exact) == [r for r in after if r[2] is not None]
    assert cleaner.cleaning_record(exact).tombstones_pending == 0


# ----------------------------------------------------------------------------------------- hash collisions
def colliding_keys(digest_bytes: int) -> tuple[bytes, bytes]:
    """Two keys whose hashes agree on the first `digest_bytes` bytes of the map's blake2b (birthday search)."""
    seen: dict[bytes, bytes] = {}
    i = 0
    while True:
        candidate = b"user-%d" % i
        prefix = blake2b(candidate).digest()[:digest_bytes]
        if prefix in seen:
            return seen[prefix], candidate
        seen[prefix] = candidate
        i += 1


class TruncatedBlake2b:
    """The map's hash cut down to `digest_bytes` bytes of blake2b and spread again over a full digest: keys that
    agree on those bytes collide in every bit the map uses (88 fingerprint bits, 32 home bits). The real map needs
    ~2^55 blake2b evaluations for such a pair (offset_map.py, "Hash"); here 2 bytes take a few hundred."""

    def __init__(self, digest_bytes: int) -> None:
        self.digest_bytes = digest_bytes

    def __call__(self, data: bytes) -> Any:
        return blake2b(blake2b(data).digest()[:self.digest_bytes])


def test_keys_colliding_in_the_offset_map_lose_a_record_there_but_the_plan_keeps_both(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = colliding_keys(2)
    assert first != second
    weak = TruncatedBlake2b(2)
    assert weak(first).digest() == weak(second).digest()
    monkeypatch.setattr(offset_map, "blake2b", weak)  # the map's own hash, truncated to where a collision is cheap
    probe = OffsetMap(1 << 16)
    probe.put(first, 0)
    assert probe.get(second) == 0  # the map cannot tell the two keys apart

    ordinary, exact = make_log(log_manager, "ordinary"), make_log(log_manager, "exact")
    for log in (ordinary, exact):
        append(log, [(first, b"first-value")])
        append(log, [(second, b"second-value")])
        append(log, [(b"other", b"x")])
        log.roll()
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)  # in this process: the patched hash is the one used
    manual = cleaner.request_compaction("ordinary", 0)
    assert manual.wait(WAIT_S) and only_result(manual)["status"] == "cleaned"
    # The map path: `second` "supersedes" `first`, whose only record is gone -- a live key deleted.
    assert read_all(ordinary) == [(1, second, b"second-value"), (2, b"other", b"x")]

    plan = plan_of_log(exact, topic_id(log_manager, "exact"), tmp_path / "p.plan", 0, exact.log_end_offset)
    assert plan == [0, 1, 2]
    assert only_result(run_exact(cleaner, "exact", tmp_path / "p.plan"))["status"] == "cleaned"
    assert read_all(exact) == [(0, first, b"first-value"), (1, second, b"second-value"), (2, b"other", b"x")]


# ----------------------------------------------------------------------------------------------- late plans
def test_a_late_plan_is_still_safe_after_ordinary_cleaning_and_appends(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path) -> None:
    log = make_log(log_manager, "late")
    tid = topic_id(log_manager, "late")
    append(log, [(key(i), b"v1") for i in range(300)])
    append(log, [(key(i), b"v2") for i in range(150)])
    log.roll()
    plan_end = log.log_end_offset
    plan = plan_of_log(log, tid, tmp_path / "late.plan", 0, plan_end)
    at_plan_time = read_all(log)

    # Since the plan: new values for keys in the range (key 149's v2 is the range's last record), tombstones, new
    # keys, an ordinary cleaning, more appends.
    assert plan[-1] == plan_end - 1 == 449
    append(log, [(key(i), b"v3") for i in [*range(50), 149]] + [(key(i), None) for i in range(280, 300)])
    append(log, [(key(i), b"new") for i in range(300, 350)])
    log.roll()
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    manual = cleaner.request_compaction("late", 0)
    assert manual.wait(WAIT_S) and only_result(manual)["status"] == "cleaned"
    append(log, [(key(i), b"v4") for i in range(100, 120)])
    log.roll()
    before = read_all(log)
    removed_since = {r[0] for r in at_plan_time} - {r[0] for r in before}
    assert removed_since & set(plan)  # some of the plan's offsets are gone already (keys 0..49 have v3 now)
    assert plan[-1] in removed_since  # the plan's last offset included: the plan still covers what is left

    request = run_exact(cleaner, "late", tmp_path / "late.plan")
    assert only_result(request)["status"] == "cleaned"
    after = read_all(log)
    # Nothing that was the latest of its key is gone: a consumer sees the same value for every key.
    assert {k: v for _, k, v in after} == {k: v for _, k, v in before}
    # In the range, exactly the plan's records that still exist; beyond it, nothing touched.
    assert [r for r in after if r[0] < plan_end] == [r for r in before if r[0] < plan_end and r[0] in set(plan)]
    assert [r for r in after if r[0] >= plan_end] == [r for r in before if r[0] >= plan_end]


def test_a_plan_that_retention_overtook_is_refused_and_deletes_nothing(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path) -> None:
    log = make_log(log_manager, "t")
    for version in range(3):
        append(log, [(key(i), b"v%d" % version) for i in range(100)])
        log.roll()
    plan_of_log(log, topic_id(log_manager, "t"), tmp_path / "p.plan", 0, log.log_end_offset)
    log.maybe_increment_log_start_offset(150)  # DeleteRecords
    before = read_all(log)
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    with pytest.raises(InvalidRetainedOffsetPlanError, match=r"plan range \[0, 300\) is outside what t-0 can clean "
                                                             r"now: \[150, 300\)"):
        cleaner.request_exact_compaction("t", 0, tmp_path / "p.plan", delete_plan=True)
    assert not (tmp_path / "p.plan").exists()
    assert read_all(log) == before


@pytest.mark.parametrize("plan_until", [0, 250, 299])
def test_a_plan_that_does_not_reach_the_end_of_its_range_is_refused(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path, plan_until: int) -> None:
    """A plan computed over less than the range it claims (an empty one, a read that stopped early) would drop
    every record of the keys it missed: the round refuses it."""
    log = make_log(log_manager, "t")
    append(log, [(key(i), b"v1") for i in range(200)])
    append(log, [(key(i), b"v2") for i in range(100)])
    # The range ends with an aborted write and its marker: the check looks at the last committed record.
    append(log, [(key(0), b"aborted")], producer_id=8, sequence=0, transactional=True)
    log.append_transaction_marker(8, 0, 0, commit=False)
    log.roll()
    offsets = latest_offsets(committed_keyed_records(log, 0, plan_until))
    path = write_plan(tmp_path / "short.plan", topic_id(log_manager, "t"), 0, 0, 302, offsets)
    before = read_all(log)
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    result = only_result(run_exact(cleaner, "t", path))
    assert result["status"] == "refused", result
    ends = f"ends at offset {offsets[-1]}" if offsets else "is empty"
    assert f"plan {ends}, but [0, 302) holds a committed record at offset 299, the latest of its key" in \
        result["error"]
    assert read_all(log) == before


# ---------------------------------------------------------------------------------------- refused requests
@pytest.fixture
def three_versions(log_manager: LogManager) -> UnifiedLog:
    log = make_log(log_manager, "t", {"min.compaction.lag.ms": "0"})
    make_log(log_manager, "other")
    for version in range(3):
        append(log, [(key(i), b"v%d" % version) for i in range(100)])
        log.roll()
    return log


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda p: {**p, "topic_id": b"\x01" * 16}, "plan is for topic id AQEBAQEBAQEBAQEBAQEBAQ, not "),
    (lambda p: {**p, "partition": 1}, "plan is for partition 1, not 0"),
    (lambda p: {**p, "end": 301}, r"plan range \[0, 301\) is outside what t-0 can clean now: \[0, 300\)"),
])
def test_request_refuses_another_topic_partition_or_range(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path, three_versions: UnifiedLog,
        mutate: Callable[[dict[str, Any]], dict[str, Any]], message: str) -> None:
    log = three_versions
    fields = mutate({"topic_id": topic_id(log_manager, "t"), "partition": 0, "end": 300})
    offsets = latest_offsets(committed_keyed_records(log, 0, 300))
    path = write_plan(tmp_path / "p.plan", fields["topic_id"], fields["partition"], 0, fields["end"], offsets)
    before = segment_files(log)
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    with pytest.raises(InvalidRetainedOffsetPlanError, match=message):
        cleaner.request_exact_compaction("t", 0, path, delete_plan=True)
    assert not path.exists() and segment_files(log) == before


def test_request_refuses_a_plan_of_another_topic_or_a_recreated_one(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path, three_versions: UnifiedLog) -> None:
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    other = write_plan(tmp_path / "other.plan", topic_id(log_manager, "other"), 0, 0, 0, [])
    with pytest.raises(InvalidRetainedOffsetPlanError, match="another topic, or the topic was deleted and recreated"):
        cleaner.request_exact_compaction("t", 0, other)
    assert other.exists()  # not the request's file: left alone
    old_id = topic_id(log_manager, "t")
    log_manager.delete_topic("t")
    recreated = make_log(log_manager, "t")
    append(recreated, [(b"a", b"1")])
    recreated.roll()
    stale = write_plan(tmp_path / "stale.plan", old_id, 0, 0, 1, [0])
    with pytest.raises(InvalidRetainedOffsetPlanError, match="plan is for topic id"):
        cleaner.request_exact_compaction("t", 0, stale)


def test_the_end_is_bounded_by_min_compaction_lag_and_the_last_stable_offset(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path) -> None:
    lagged = make_log(log_manager, "lagged", {"min.compaction.lag.ms": "60000"})
    append(lagged, [(key(i), b"v") for i in range(10)])
    lagged.roll()
    tid = topic_id(log_manager, "lagged")
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    assert cleaner.exact_end_limit(lagged, roll_active=True) == 0  # the records are too young
    path = write_plan(tmp_path / "p.plan", tid, 0, 0, 10, range(10))
    with pytest.raises(InvalidRetainedOffsetPlanError, match=r"outside what lagged-0 can clean now: \[0, 0\)"):
        cleaner.request_exact_compaction("lagged", 0, path)
    clock.advance_ms(60_001)
    assert only_result(run_exact(cleaner, "lagged", path))["status"] == "cleaned"

    # An open transaction holds the end at the last stable offset, which need not be a segment base.
    open_txn = make_log(log_manager, "open")
    append(open_txn, [(b"a", b"1"), (b"b", b"1")])
    append(open_txn, [(b"a", b"2")])
    append(open_txn, [(b"a", b"open")], producer_id=9, sequence=0, transactional=True)
    append(open_txn, [(b"b", b"2")])
    assert open_txn.last_stable_offset == 3 and open_txn.segments()[-1].base_offset == 0
    assert cleaner.exact_end_limit(open_txn, roll_active=True) == 3
    assert cleaner.exact_end_limit(open_txn, roll_active=False) == 0  # before the roll the active segment bounds it
    too_far = write_plan(tmp_path / "far.plan", topic_id(log_manager, "open"), 0, 0, 5, [2, 4])
    with pytest.raises(InvalidRetainedOffsetPlanError, match=r"\[0, 5\) is outside what open-0 can clean now: "
                                                             r"\[0, 3\)"):
        cleaner.request_exact_compaction("open", 0, too_far)
    plan = plan_of_log(open_txn, topic_id(log_manager, "open"), tmp_path / "open.plan", 0, 3)
    assert plan == [1, 2]
    assert only_result(run_exact(cleaner, "open", tmp_path / "open.plan"))["status"] == "cleaned"
    # The round rolled the active segment, decided [0, 3) by the plan and left the rest (the open transaction
    # included) as it was; the checkpoint is the plan's end.
    assert read_all(open_txn) == [(1, b"b", b"1"), (2, b"a", b"2"), (3, b"a", b"open"), (4, b"b", b"2")]
    assert log_manager.cleaner_offset_checkpoint.read()[("open", 0)] == 3


@pytest.mark.parametrize("config", [TINY_MAP, TINY_MAP_IN_PROCESS], ids=["thread", "process"])
def test_a_plan_retaining_an_aborted_record_or_a_marker_is_refused_by_the_round(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path, config: CleanerConfig) -> None:
    """Computed without read_committed, a plan would name the aborted write as the key's latest and the committed
    value under it would go: the round checks the plan against the log before it writes anything."""
    log = make_log(log_manager, "t")
    append(log, [(b"k", b"committed")])
    append(log, [(b"k", b"aborted")], producer_id=8, sequence=0, transactional=True)  # offset 1
    log.append_transaction_marker(8, 0, 0, commit=False)  # offset 2
    append(log, [(b"j", b"x")])
    log.roll()
    tid = topic_id(log_manager, "t")
    before, files = read_all(log), segment_files(log)
    cleaner = LogCleaner(log_manager, config, clock)
    try:
        for offsets, what in (([1, 3], "a record of an aborted transaction"), ([0, 2, 3], "a transaction marker")):
            path = write_plan(tmp_path / "bad.plan", tid, 0, 0, 4, offsets)
            result = only_result(run_exact(cleaner, "t", path))
            assert result["status"] == "refused" and f"plan retains offset {offsets[-2]}, {what}" in result["error"]
            assert result["rounds"] == 0 and not path.exists()
            assert read_all(log) == before and segment_files(log) == files
            assert not list(log.dir.glob("*.cleaned"))
            assert cleaner.manager.uncleanable_partitions() == {}  # the plan was bad, not the partition
            assert log_manager.cleaner_offset_checkpoint.read() == {}
        good = plan_of_log(log, tid, tmp_path / "good.plan", 0, 4)
        assert good == [0, 3]
        assert only_result(run_exact(cleaner, "t", tmp_path / "good.plan"))["status"] == "cleaned"
        assert read_all(log) == [(0, b"k", b"committed"), (3, b"j", b"x")]
    finally:
        cleaner.shutdown()


# ------------------------------------------------------------------------------------ range and checkpoint
def test_a_plan_starting_above_the_log_start_keeps_what_is_below_and_leaves_the_checkpoint(
        log_manager: LogManager, clock: FakeClock, tmp_path: Path) -> None:
    log = make_log(log_manager, "t")
    for version in range(4):
        append(log, [(key(i), b"v%d" % version) for i in range(10)])
        log.roll()
    rows = read_all(log)
    plan = plan_of_log(log, topic_id(log_manager, "t"), tmp_path / "p.plan", 20, 30)  # only versions 2 of [20, 30)
    assert plan == list(range(20, 30))
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    assert only_result(run_exact(cleaner, "t", tmp_path / "p.plan"))["status"] == "cleaned"
    assert read_all(log) == rows  # [20, 30) held one record per key already; below 20 is out of scope
    plan = plan_of_log(log, topic_id(log_manager, "t"), tmp_path / "p.plan", 10, 40)
    assert only_result(run_exact(cleaner, "t", tmp_path / "p.plan"))["status"] == "cleaned"
    assert read_all(log) == [r for r in rows if r[0] < 10 or r[0] >= 30]
    # Keys below the plan's start still have older copies: the checkpoint must not claim otherwise.
    assert log_manager.cleaner_offset_checkpoint.read() == {}


def test_an_empty_range_cleans_nothing(log_manager: LogManager, clock: FakeClock, tmp_path: Path) -> None:
    log = make_log(log_manager, "t")
    append(log, [(b"a", b"1"), (b"a", b"2")])
    log.roll()
    cleaner = LogCleaner(log_manager, TINY_MAP, clock)
    path = write_plan(tmp_path / "p.plan", topic_id(log_manager, "t"), 0, 1, 1, [])
    assert only_result(run_exact(cleaner, "t", path))["status"] == "nothing_to_clean"
    assert len(read_all(log)) == 2


def test_exact_round_in_the_worker_process(log_manager: LogManager, clock: FakeClock, tmp_path: Path) -> None:
    log = make_log(log_manager, "t")
    fill_many_keys(log, keys=400, versions=2)
    rows, end = read_all(log), log.log_end_offset
    plan = plan_of_log(log, topic_id(log_manager, "t"), tmp_path / "p.plan", 0, end)
    cleaner = LogCleaner(log_manager, TINY_MAP_IN_PROCESS, clock)
    try:
        request = run_exact(cleaner, "t", tmp_path / "p.plan")
        assert only_result(request)["status"] == "cleaned"
        assert read_all(log) == expected_after(rows, plan, end)
        assert log_manager.cleaner_offset_checkpoint.read() == {("t", 0): end}
    finally:
        cleaner.shutdown()


def _batches(log: UnifiedLog) -> Iterator[Any]:
    yield from iter_batches(log.read(log.log_start_offset, 1 << 30).records)

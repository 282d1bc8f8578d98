"""Spec §5 [B] scenarios S1, S2, S3, S4, S10, S14, S16, S17 over the wire; their core versions are in
tests/cleaner/test_cleaner_core.py and tests/cleaner/test_manager.py.

A broker subprocess, confluent-kafka producers and consumers, raw Produce/Fetch (tests/wire_client.py) where a
batch's exact layout matters, and inspection of the data dir (segment files, cleaner-offset-checkpoint), the
broker log and /metrics. Rolls come from CreateTime stamps more than segment.ms (1 h) apart, so the broker's
idle roll timer never rolls anything here: which segments are closed depends only on what a test produced.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka.protocol.consumer.fetch import FetchRequest

from minikafka.cleaner.offset_map import OffsetMap
from minikafka.protocol.records import Record, RecordBatch, build_batch, iter_batches
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import checkpoint_of, consume_all, scrape, wait_for
from tests.integration.test_compaction_scenarios_b import (
    COMPACTED,
    FAST_CLEANER,
    log_files,
    produce_timed,
    watermarks,
    wire_produce,
)
from tests.segment_files import batch_data
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(120)

BrokerFactory = Callable[..., BrokerProcess]
Pairs = list[tuple[bytes, bytes | None]]
HOUR_MS = 3_600_000
ROLL_STEP_MS = HOUR_MS + 1  # one CreateTime step that rolls the active segment
#: segment.ms of 1 h: only CreateTime steps roll; the idle roll timer never does within a test
HOURLY = {**COMPACTED, "segment.ms": str(HOUR_MS)}
CLEANER_RUN_TIME = ("kafka_log_logcleanermanager_time_since_last_run_ms", ())
MAX_DIRTY_PERCENT = ("kafka_log_logcleanermanager_max_dirty_percent", ())


# ------------------------------------------------------------------------------------------ helpers


def past_ms() -> int:
    """A CreateTime base well in the past, so that several roll steps after it are still not in the future."""
    return int(time.time() * 1000) - 10 * HOUR_MS


def partition_sample(broker: BrokerProcess, name: str, topic: str) -> float:
    return scrape(broker)[(name, (("partition", "0"), ("topic", topic)))]


def wait_for_cleaner_runs(broker: BrokerProcess, quiet_s: float) -> None:
    """Evidence for a negative: a cleaner thread looked for work at least `quiet_s` after this call, i.e. it
    had about quiet_s / backoff chances to pick the partitions as they are now."""
    start = time.monotonic()

    def looked_late_enough() -> bool:
        before_scrape = time.monotonic()
        since_last_run_ms = scrape(broker)[CLEANER_RUN_TIME]
        return (before_scrape - start) * 1000 - since_last_run_ms >= quiet_s * 1000

    wait_for(looked_late_enough, quiet_s + 20, f"a cleaner run {quiet_s}s from now")


def fetch_batches(bootstrap: str, topic: str, fetch_offset: int = 0) -> list[RecordBatch]:
    """The batches a raw Fetch v12 (read_uncommitted, max_wait 0) of partition 0 returns from `fetch_offset`."""
    partition = FetchRequest[12].FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=-1, fetch_offset=fetch_offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1 << 20)
    request = FetchRequest[12](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[FetchRequest[12].FetchTopic(topic=topic, partitions=[partition])],
        forgotten_topics_data=[], rack_id="")
    with WireClient(bootstrap) as client:
        response = client.request(request).responses[0].partitions[0]
    assert response.error_code == 0
    return list(iter_batches(response.records or b""))


def disk_batches(data_dir: Path, topic: str) -> list[RecordBatch]:
    """Every batch of the partition's segment files, in offset order."""
    return [batch for path in log_files(data_dir, topic) for batch in iter_batches(batch_data(path))]


def batch_at(batches: list[RecordBatch], base_offset: int) -> RecordBatch:
    return next(b for b in batches if b.base_offset == base_offset)


def round_stats(broker: BrokerProcess, topic: str) -> list[tuple[int, int, int]]:
    """(first dirty offset, end offset, records written) of every round logged for partition 0, in order."""
    pattern = (rf"cleaned log {re.escape(topic)}-0 \(dirty section = \[(\d+), (\d+)\]\).*?"
               r"End size: [\d.,]+ MB \(([\d,]+) messages\)")
    return [(int(a), int(b), int(n.replace(",", ""))) for a, b, n in re.findall(pattern, broker.read_log(), re.S)]


def wait_for_checkpoint(broker: BrokerProcess, topic: str, offset: int, timeout_s: float = 30) -> None:
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == offset, timeout_s, f"checkpoint {offset} of {topic}")


def values(pairs: str) -> Pairs:
    """`"k1=a k2="` -> [(b"k1", b"a"), (b"k2", None)]: an empty value is a tombstone."""
    out: Pairs = []
    for pair in pairs.split():
        key, value = pair.split("=")
        out.append((key.encode(), value.encode() or None))
    return out


# ------------------------------------------------------------------------------------------ A. eligibility


def test_S1_latest_value_per_key_offsets_and_batch_preserved(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic, t0 = "s1", past_ms()
    create_topic(broker.bootstrap, topic, 1, HOURLY)
    first = values("k1=a k2=b k1=c k3=d k2=e")
    with WireClient(broker.bootstrap) as client:  # one batch @0-4, exactly
        batch = build_batch([Record(offset=i, timestamp=t0, key=k, value=v) for i, (k, v) in enumerate(first)],
                            base_offset=0)
        response = wire_produce(client, topic, batch)
    assert (response.error_code, response.base_offset) == (0, 0)
    produce_timed(broker.bootstrap, topic, [values("k4=f")], t0 + ROLL_STEP_MS)  # rolls: [k4=f]@5 is active
    wait_for_checkpoint(broker, topic, 5)
    assert (broker.data_dir / "cleaner-offset-checkpoint").read_text() == f"0\n1\n{topic} 0 5\n"

    expected = [(2, b"k1", b"c"), (3, b"k3", b"d"), (4, b"k2", b"e"), (5, b"k4", b"f")]
    assert consume_all(broker.bootstrap, topic) == expected
    assert watermarks(broker.bootstrap, topic) == (0, 6)
    kept = fetch_batches(broker.bootstrap, topic, 1)  # offset 1 is gone: the batch holding it starts at 0
    assert [(b.base_offset, b.last_offset, b.records_count) for b in kept] == [(0, 4, 3), (5, 5, 1)]
    assert [b.base_offset for b in disk_batches(broker.data_dir, topic)] == [0, 5]

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "s1", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(topic, 0, 1)])
        got: list[int] = []
        deadline = time.monotonic() + 30
        while len(got) < 4 and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=10, timeout=0.2):
                assert message.error() is None, message.error()
                got.append(int(message.offset() or 0))
        assert got == [2, 3, 4, 5]
        assert consumer.position([TopicPartition(topic, 0)])[0].offset == 6
    finally:
        consumer.close()


def test_S2_active_segment_is_never_cleaned(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic = "s2"
    create_topic(broker.bootstrap, topic, 1, HOURLY)
    produce_timed(broker.bootstrap, topic, [values("k=a"), values("k=b"), values("k=c")], past_ms(), step_ms=0)
    assert [p.name for p in log_files(broker.data_dir, topic)] == ["00000000000000000000.log"]
    wait_for_cleaner_runs(broker, 1.0)  # 10x the 100 ms backoff

    assert consume_all(broker.bootstrap, topic) == [(0, b"k", b"a"), (1, b"k", b"b"), (2, b"k", b"c")]
    assert checkpoint_of(broker.data_dir, topic) is None
    assert "cleaned log" not in broker.read_log()
    samples = scrape(broker)
    assert samples[MAX_DIRTY_PERCENT] == 0  # the log is skipped: totalBytes = 0
    labels = (("partition", "0"), ("topic", topic))
    assert samples[("minikafka_log_cleaner_dirty_ratio", labels)] == 0
    assert samples[("minikafka_log_cleaner_dirty_bytes", labels)] == 0


def test_S3_dirty_ratio_threshold_is_strict_and_excludes_the_active_segment(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic, t0 = "s3", past_ms()
    create_topic(broker.bootstrap, topic, 1, {**HOURLY, "min.cleanable.dirty.ratio": "0.5"})
    filler = b"." * 100  # big records: batch overheads (however librdkafka splits the batches) stay negligible

    def updates(version: int, keys: int) -> Pairs:
        return [(b"key-%04d" % k, b"v%d-%04d" % (version, k) + filler) for k in range(keys)]

    # A = 1000 unique keys @0-999, B = 300 updates @1000-1299 (rolls A), C = 800 updates @1300-2099 (rolls B).
    produce_timed(broker.bootstrap, topic, [updates(0, 1000), updates(1, 300)], t0, ROLL_STEP_MS)
    wait_for_checkpoint(broker, topic, 1000)  # A alone: ratio 1.0 > 0.5
    produce_timed(broker.bootstrap, topic, [updates(2, 800)], t0 + 2 * ROLL_STEP_MS)
    a_path, b_path, active_path = log_files(broker.data_dir, topic)
    assert active_path.name == "00000000000000001300.log"
    a_bytes, b_bytes, active_bytes = (p.stat().st_size for p in (a_path, b_path, active_path))
    ratio = b_bytes / (a_bytes + b_bytes)
    assert ratio <= 0.5 < (b_bytes + active_bytes) / (a_bytes + b_bytes + active_bytes)  # only if C counted
    wait_for_cleaner_runs(broker, 1.0)

    assert checkpoint_of(broker.data_dir, topic) == 1000
    assert round_stats(broker, topic) == [(0, 1000, 1000)]
    assert scrape(broker)[MAX_DIRTY_PERCENT] == int(100 * ratio)
    assert partition_sample(broker, "minikafka_log_cleaner_dirty_ratio", topic) == pytest.approx(ratio)

    produce_timed(broker.bootstrap, topic, [[(b"roll", b"r")]], t0 + 3 * ROLL_STEP_MS)  # C closes @2100
    wait_for_checkpoint(broker, topic, 2100)
    # one round removed every superseded record: 200 of A and 800 of C are left
    assert round_stats(broker, topic) == [(0, 1000, 1000), (1000, 2100, 1000)]
    records = consume_all(broker.bootstrap, topic)
    assert records == (
        [(k, b"key-%04d" % k, b"v0-%04d" % k + filler) for k in range(800, 1000)]
        + [(1300 + k, b"key-%04d" % k, b"v2-%04d" % k + filler) for k in range(800)]
        + [(2100, b"roll", b"r")])
    assert partition_sample(broker, "minikafka_log_cleaner_records_removed_total", topic) == 800 + 300


def test_S4_ratio_one_never_cleans_ratio_zero_cleans_any_closed_dirty_segment(
        broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    one, zero, t0 = "s4-one", "s4-zero", past_ms()
    create_topic(broker.bootstrap, one, 1, {**HOURLY, "min.cleanable.dirty.ratio": "1.0"})
    create_topic(broker.bootstrap, zero, 1, {**HOURLY, "min.cleanable.dirty.ratio": "0.0"})
    rounds: list[Pairs] = [[(b"key-%03d" % k, b"v%d" % version) for k in range(50)] for version in range(3)]
    for topic in (one, zero):  # three closed segments of 50 keys each, a fourth (active) with one record
        produce_timed(broker.bootstrap, topic, [*rounds, [(b"tail", b"t")]], t0, ROLL_STEP_MS)
    wait_for_checkpoint(broker, zero, 150)
    assert len(consume_all(broker.bootstrap, zero)) == 51

    # A closed dirty segment of one record against ~51 clean ones (ratio ~0.02) is cleaned too.
    produce_timed(broker.bootstrap, zero, [[(b"key-000", b"v9")], [(b"tail2", b"t")]], t0 + 4 * ROLL_STEP_MS,
                  ROLL_STEP_MS)
    wait_for_checkpoint(broker, zero, 152)
    records = consume_all(broker.bootstrap, zero)
    assert records[0] == (101, b"key-001", b"v2")
    assert records[-3:] == [(150, b"tail", b"t"), (151, b"key-000", b"v9"), (152, b"tail2", b"t")]
    assert len(records) == 52

    wait_for_cleaner_runs(broker, 1.0)
    assert checkpoint_of(broker.data_dir, one) is None
    assert round_stats(broker, one) == []
    assert len(consume_all(broker.bootstrap, one)) == 151
    assert partition_sample(broker, "minikafka_log_cleaner_dirty_ratio", one) == 1.0
    assert scrape(broker)[MAX_DIRTY_PERCENT] == 100


# ------------------------------------------------------------------------------------------ B. offset map


def test_S10_multi_round_cleaning_with_a_small_dedupe_buffer(broker_factory: BrokerFactory) -> None:
    buffer_bytes, load_factor = 2 * 1024 * 1024, 0.05
    broker = broker_factory({**FAST_CLEANER, "log.cleaner.dedupe.buffer.size": str(buffer_bytes),
                             "log.cleaner.io.buffer.load.factor": str(load_factor), "log.cleaner.threads": "1"})
    # The map's slot size is minikafka's own (Kafka's MD5 map: 24 bytes), so slots and capacity come from the
    # map class the broker builds for its one thread. The small load factor scales the spec's 100,000 keys
    # (1.27 x the keys per round) down to a few thousand with the same shape: three rounds, the first
    # removing nothing.
    offset_map = OffsetMap(buffer_bytes, load_factor)
    slots, per_round = offset_map.slots, offset_map.capacity
    keys = per_round * 5 // 4
    assert 1000 < per_round < keys < 1.5 * per_round
    topic, t0 = "s10", past_ms()
    create_topic(broker.bootstrap, topic, 1, HOURLY)
    one_pass: Pairs = [(b"k%d" % k, b"v") for k in range(keys)]
    produce_timed(broker.bootstrap, topic, [one_pass, one_pass], t0, step_ms=0)  # @0..tail-1, one segment
    produce_timed(broker.bootstrap, topic, [[(b"tail", b"t")]], t0 + ROLL_STEP_MS)  # rolls: @tail is active
    wait_for_checkpoint(broker, topic, 2 * keys)

    ends = [per_round, 2 * per_round, 2 * keys]
    # round 1 maps first occurrences only; round 2 removes offsets 0..ends[1]-keys-1; round 3 the rest
    assert round_stats(broker, topic) == [(0, ends[0], 2 * keys), (ends[0], ends[1], 2 * keys - (ends[1] - keys)),
                                          (ends[1], ends[2], keys)]
    log = broker.read_log()
    utilizations = re.findall(r"Buffer utilization: ([\d.]+)%", log)
    assert utilizations[:2] == [f"{100 * per_round / slots:.1f}"] * 2
    assert utilizations[2] == f"{100 * (2 * keys - ends[1]) / slots:.1f}"

    records = consume_all(broker.bootstrap, topic)
    assert [o for o, _, _ in records] == list(range(keys, 2 * keys + 1))
    assert [k for _, k, _ in records[:-1]] == [b"k%d" % k for k in range(keys)]
    assert partition_sample(broker, "minikafka_log_cleaner_records_removed_total", topic) == keys
    assert scrape(broker)[("kafka_log_logcleaner_max_buffer_utilization_percent", ())] == \
        int(100 * (2 * keys - ends[1]) / slots)


# ------------------------------------------------------------------------------------------ C. tombstones


def test_S14_two_stage_tombstone_removal_and_the_header_stamp(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    # spec: 2000; 3000 leaves room on a loaded box to look at the stamped tombstone before its horizon
    topic, t0, retention_ms = "s14", past_ms(), 3000
    create_topic(broker.bootstrap, topic, 1, {**HOURLY, "delete.retention.ms": str(retention_ms)})
    before_ms = int(time.time() * 1000)
    # [k1=a]@0, [k2=b]@1, [k1=∅]@2, [k3=c]@3, each rolling the one before
    produce_timed(broker.bootstrap, topic, [values(p) for p in ("k1=a", "k2=b", "k1=", "k3=c")], t0, ROLL_STEP_MS)
    wait_for_checkpoint(broker, topic, 3)
    after_ms = int(time.time() * 1000)

    on_disk = batch_at(disk_batches(broker.data_dir, topic), 2)
    assert on_disk.attributes & 0x40 and on_disk.has_delete_horizon
    horizon_ms = on_disk.base_timestamp
    assert on_disk.delete_horizon_ms == horizon_ms
    assert before_ms + retention_ms <= horizon_ms <= after_ms + retention_ms  # T1 + delete.retention.ms
    assert [r.timestamp for r in on_disk.records()] == [t0 + 2 * ROLL_STEP_MS]  # the record's own time
    fetched = fetch_batches(broker.bootstrap, topic)
    assert batch_at(fetched, 2).has_delete_horizon and batch_at(fetched, 2).base_timestamp == horizon_ms
    assert not batch_at(fetched, 1).has_delete_horizon
    assert partition_sample(broker, "minikafka_log_cleaner_tombstones_pending", topic) == 1
    assert consume_all(broker.bootstrap, topic) == [(1, b"k2", b"b"), (2, b"k1", None), (3, b"k3", b"c")]

    # Kafka removes the tombstone in the first round after the horizon, which needs new dirty data (k4, k5);
    # minikafka may also run a round of its own as soon as the horizon has passed.
    wait_for(lambda: time.time() * 1000 > horizon_ms + 50, retention_ms / 1000 + 10, "the delete horizon")
    produce_timed(broker.bootstrap, topic, [values("k4=d"), values("k5=e")], t0 + 4 * ROLL_STEP_MS, ROLL_STEP_MS)
    wait_for_checkpoint(broker, topic, 5)
    assert consume_all(broker.bootstrap, topic) == [(1, b"k2", b"b"), (3, b"k3", b"c"), (4, b"k4", b"d"),
                                                    (5, b"k5", b"e")]
    assert 2 not in [b.base_offset for b in disk_batches(broker.data_dir, topic)]
    assert partition_sample(broker, "minikafka_log_cleaner_tombstones_pending", topic) == 0
    assert watermarks(broker.bootstrap, topic) == (0, 6)


def test_S16_zero_delete_retention_tombstone_survives_its_first_round(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic, t0 = "s16", past_ms()
    create_topic(broker.bootstrap, topic, 1, {**HOURLY, "delete.retention.ms": "0"})
    # [k=v]@0, [k=∅]@1, [other=x]@2 in one segment, rolled by [z=a]@3
    produce_timed(broker.bootstrap, topic, [values("k=v"), values("k="), values("other=x")], t0, step_ms=0)
    produce_timed(broker.bootstrap, topic, [values("z=a")], t0 + ROLL_STEP_MS)
    wait_for_checkpoint(broker, topic, 3)
    # Kafka removes the tombstone in the next round, which needs new dirty data; minikafka also runs a round
    # of its own once the horizon (here: the first round's time) has passed. Either way a later round.
    produce_timed(broker.bootstrap, topic, [values("w=b")], t0 + 2 * ROLL_STEP_MS)  # rolls @3: the next round
    wait_for_checkpoint(broker, topic, 4)
    assert consume_all(broker.bootstrap, topic) == [(2, b"other", b"x"), (3, b"z", b"a"), (4, b"w", b"b")]
    rounds = round_stats(broker, topic)
    assert rounds[0] == (0, 3, 2), "the round that first rewrote the tombstone kept it (and other=x)"
    assert len(rounds) >= 2 and rounds[-1][1] == 4


def test_S17_superseded_tombstone_removed_at_once_without_a_horizon(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic, t0 = "s17", past_ms()
    create_topic(broker.bootstrap, topic, 1, HOURLY)  # default delete.retention.ms: one day
    produce_timed(broker.bootstrap, topic, [values("k="), values("k=x")], t0, step_ms=0)  # [k=∅]@0, [k=x]@1
    produce_timed(broker.bootstrap, topic, [values("z=a")], t0 + ROLL_STEP_MS)  # rolls both: @2 is active
    wait_for_checkpoint(broker, topic, 2)
    assert round_stats(broker, topic) == [(0, 2, 1)]
    assert consume_all(broker.bootstrap, topic) == [(1, b"k", b"x"), (2, b"z", b"a")]
    on_disk = disk_batches(broker.data_dir, topic)
    assert [b.base_offset for b in on_disk] == [1, 2]
    assert not any(b.has_delete_horizon for b in on_disk)
    assert not any(b.has_delete_horizon for b in fetch_batches(broker.bootstrap, topic))
    assert partition_sample(broker, "minikafka_log_cleaner_tombstones_pending", topic) == 0
    assert partition_sample(broker, "minikafka_log_cleaner_records_removed_total", topic) == 1

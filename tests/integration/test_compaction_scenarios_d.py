"""Spec §5 scenarios S20, S21, S22, S33, S35, S36, S37 and S55 over the wire, complementing their core tests in
tests/cleaner/: a broker subprocess, confluent-kafka producers with explicit CreateTimes, batches read back
verbatim with a raw Fetch (and from the data dir), the cleaner-offset-checkpoint and the Prometheus gauges.

Where a scenario says "nothing is cleaned", the test waits until the single cleaner thread has looked for work
twice (`time-since-last-run-ms`), so that any round chosen at the first look has finished by the second.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Producer

from minikafka.protocol.records import CompressionType
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import CODECS, create_topic
from tests.integration.test_compaction import checkpoint_of, consume_all, scrape, wait_for
from tests.integration.test_compaction_scenarios_b import (
    CLEAN_NOW,
    COMPACTED,
    FAST_CLEANER,
    HELD,
    alter_topic,
    log_files,
    produce_timed,
    watermarks,
)
from tests.integration.test_compaction_scenarios_txn import batches

pytestmark = pytest.mark.timeout(120)

BrokerFactory = Callable[..., BrokerProcess]
#: rolls only on append (batch timestamps), as in Kafka: the broker's idle roll timer never fires in a test
NO_IDLE_ROLL = {**FAST_CLEANER, "minikafka.log.roll.check.interval.ms": "3600000"}
HOUR_MS = 3_600_000
TIME_SINCE_LAST_RUN = ("kafka_log_logcleanermanager_time_since_last_run_ms", ())


def now_ms() -> int:
    return int(time.time() * 1000)


def produce_batch(bootstrap: str, topic: str, pairs: Sequence[tuple[bytes, bytes | None]], timestamp_ms: int,
                  codec: str = "none") -> None:
    """All `pairs` in one batch of `codec`, stamped `timestamp_ms` (CreateTime)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
                         "linger.ms": 1000, "batch.num.messages": 10_000})
    # Metadata first: records produced before it arrives are moved to the partition queue one by one, and a
    # flushing producer may send the first of them alone.
    producer.list_topics(topic, timeout=10)
    errors: list[str] = []
    for key, value in pairs:
        producer.produce(topic, key=key, value=value, timestamp=timestamp_ms,
                         on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]


def wait_for_checkpoint(broker: BrokerProcess, topic: str, offset: int, timeout_s: float = 30) -> float:
    return wait_for(lambda: (checkpoint_of(broker.data_dir, topic) or 0) >= offset, timeout_s,
                    f"cleaner checkpoint of {topic} at {offset}")


def wait_for_two_cleaner_runs(broker: BrokerProcess, backoff_ms: int = 100) -> None:
    """Return once the cleaner looked for work twice after this call (two distinct grab times)."""
    mark_ms = now_ms()
    runs: list[float] = []

    def another_run() -> bool:
        run_ms = now_ms() - scrape(broker)[TIME_SINCE_LAST_RUN]
        if run_ms >= mark_ms and all(abs(run_ms - seen) > backoff_ms / 2 for seen in runs):
            runs.append(run_ms)
        return len(runs) >= 2

    wait_for(another_run, 30, "two cleaner runs")


def key_values(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[bytes | None, bytes | None]:
    return {key: value for _offset, key, value in records}


def dup_rounds(keys: int, rounds: int, first_round: int = 0) -> list[list[tuple[bytes, bytes | None]]]:
    return [[(b"key-%03d" % k, b"v%d-%03d" % (r, k)) for k in range(keys)]
            for r in range(first_round, first_round + rounds)]


def has_segments(data_dir: Path, topic: str, count: int) -> Callable[[], bool]:
    return lambda: len(log_files(data_dir, topic)) == count


def bytes_below(data_dir: Path, topic: str, offset: int) -> int:
    return sum(path.stat().st_size for path in log_files(data_dir, topic) if int(path.stem) < offset)


# ------------------------------------------------------------------------------------------ C. tombstones


def test_S20_compressed_batch_mixing_a_tombstone_and_a_value(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(NO_IDLE_ROLL)
    # the reads below must all come before the horizon passes (a round then removes the tombstone): 1.5 s was too
    # short once on a machine at load 10
    bootstrap, topic, delete_retention_ms = broker.bootstrap, "s20", 4000
    create_topic(bootstrap, topic, 1, {**COMPACTED, "delete.retention.ms": str(delete_retention_ms)})
    t = now_ms()
    value = b"v" * 200  # compressible: librdkafka sends a batch uncompressed when gzip would not shrink it
    produce_batch(bootstrap, topic, [(b"k1", None), (b"k2", value)], t, "gzip")  # k1=∅@0, k2=v@1, one gzip batch
    assert [(b.last_offset, b.compression_type) for b in batches(bootstrap, topic)] == [(1, CompressionType.GZIP)]
    before_round_ms = now_ms()
    produce_batch(bootstrap, topic, [(b"z", b"1")], t + 1000)  # rolls
    wait_for_checkpoint(broker, topic, 2)
    after_round_ms = now_ms()

    first = batches(bootstrap, topic)[0]
    assert first.compression_type == CompressionType.GZIP
    assert first.has_delete_horizon, "round 1 stamps the batch holding a kept tombstone"
    horizon_ms = first.base_timestamp
    assert first.delete_horizon_ms == horizon_ms
    assert before_round_ms + delete_retention_ms <= horizon_ms <= after_round_ms + delete_retention_ms
    assert (first.base_offset, first.last_offset) == (0, 1)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in first.records()] == [
        (0, b"k1", None, t), (1, b"k2", value, t)]
    assert consume_all(bootstrap, topic) == [(0, b"k1", None), (1, b"k2", value), (2, b"z", b"1")]

    wait_for(lambda: now_ms() > horizon_ms + 50, delete_retention_ms / 1000 + 10, "the delete horizon to pass")
    produce_batch(bootstrap, topic, [(b"y", b"1")], t + 2000)  # a new closed dirty segment [z@2]
    wait_for_checkpoint(broker, topic, 3)
    first = batches(bootstrap, topic)[0]
    assert first.compression_type == CompressionType.GZIP
    assert first.has_delete_horizon and first.delete_horizon_ms == first.base_timestamp == horizon_ms
    assert (first.base_offset, first.last_offset) == (0, 1)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in first.records()] == [(1, b"k2", value, t)]
    assert consume_all(bootstrap, topic) == [(1, b"k2", value), (2, b"z", b"1"), (3, b"y", b"1")]


# ------------------------------------------------------------------------ D. batch rewriting, compression


@pytest.mark.parametrize("codec", CODECS)
def test_S21_rewritten_batch_keeps_the_codec_stored_in_the_log(broker_factory: BrokerFactory, codec: str) -> None:
    broker = broker_factory(NO_IDLE_ROLL)
    bootstrap, topic = broker.bootstrap, f"s21-{codec}"
    create_topic(bootstrap, topic, 1, {**COMPACTED, "compression.type": "producer"})
    t = now_ms()
    one, two = b"1" * 100, b"2" * 100  # compressible, so that librdkafka really uses the codec
    produce_batch(bootstrap, topic, [(b"a", one), (b"b", one), (b"c", one)], t, codec)  # @0-2
    produce_batch(bootstrap, topic, [(b"a", two), (b"c", two)], t, codec)  # @3-4, same segment
    stored = batches(bootstrap, topic)
    expected_codec = CompressionType[codec.upper()]
    assert [(b.base_offset, b.last_offset, b.compression_type) for b in stored] == [
        (0, 2, expected_codec), (3, 4, expected_codec)]
    second = bytes(stored[1].raw())
    topic_codec = "uncompressed" if codec == "lz4" else "lz4"
    alter_topic(bootstrap, topic, {"compression.type": topic_codec})
    produce_batch(bootstrap, topic, [(b"z", b"1" * 100)], t + 1000, codec)  # rolls
    wait_for_checkpoint(broker, topic, 5)

    cleaned = batches(bootstrap, topic)
    first = cleaned[0]
    assert first.compression_type == expected_codec, "the cleaner must not apply the topic's compression.type"
    assert (first.base_offset, first.last_offset) == (0, 2)
    assert [(r.offset, r.key, r.value) for r in first.records()] == [(1, b"b", one)]
    assert first.is_valid()
    assert bytes(cleaned[1].raw()) == second, "the untouched batch 3-4 must be byte-identical (same CRC)"
    # only the append path applies the altered topic codec (uncompressed = NONE)
    assert cleaned[2].compression_type == CompressionType[topic_codec.upper().replace("UNCOMPRESSED", "NONE")]
    assert consume_all(bootstrap, topic) == [(1, b"b", one), (3, b"a", two), (4, b"c", two), (5, b"z", b"1" * 100)]


def test_S21_only_the_append_path_recompresses_with_the_topic_codec(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(NO_IDLE_ROLL)
    bootstrap, topic = broker.bootstrap, "s21-append"
    create_topic(bootstrap, topic, 1, {**COMPACTED, "compression.type": "lz4"})
    produce_batch(bootstrap, topic, [(b"a", b"1" * 100), (b"b", b"1" * 100)], now_ms(), "gzip")
    assert [(b.last_offset, b.compression_type) for b in batches(bootstrap, topic)] == [(1, CompressionType.LZ4)]
    assert consume_all(bootstrap, topic) == [(0, b"a", b"1" * 100), (1, b"b", b"1" * 100)]


def test_S22_untouched_batches_are_copied_byte_for_byte(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic = broker.bootstrap, "s22"
    create_topic(bootstrap, topic, 1, HELD)
    t = now_ms()
    codecs = ["lz4", "none", "gzip", "zstd", "snappy"]
    for i, codec in enumerate(codecs):  # unique keys, no tombstones; every batch rolls (and the idle timer too)
        pairs = [(b"k%d" % i, b"v%d" % i * 50), (b"j%d" % i, b"w" * 100)]
        produce_batch(bootstrap, topic, pairs, t + i * 1000, codec)
    end_offset = 2 * len(codecs)
    wait_for(has_segments(broker.data_dir, topic, len(codecs) + 1), 10, "every segment to roll")
    stored = batches(bootstrap, topic)
    assert [b.compression_type.name.lower() for b in stored] == codecs
    originals = [bytes(b.raw()) for b in stored]
    closed = log_files(broker.data_dir, topic)[:-1]
    original_files = b"".join(path.read_bytes() for path in closed)

    alter_topic(bootstrap, topic, CLEAN_NOW)
    wait_for_checkpoint(broker, topic, end_offset)
    assert [bytes(b.raw()) for b in batches(bootstrap, topic)] == originals
    cleaned = [path for path in log_files(broker.data_dir, topic) if int(path.stem) < end_offset]
    assert len(cleaned) < len(closed), "the cleaned segments are merged into one group"
    assert b"".join(path.read_bytes() for path in cleaned) == original_files
    samples = scrape(broker)
    assert samples[("kafka_log_logcleaner_cleaner_recopy_percent", ())] == 100
    labels = (("partition", "0"), ("topic", topic))
    assert samples[("minikafka_log_cleaner_records_removed_total", labels)] == 0


# --------------------------------------------------------------------------------------------- F. keys


def test_S33_empty_key_is_a_key(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic = broker.bootstrap, "s33"
    create_topic(bootstrap, topic, 1, COMPACTED)
    # produce_timed asserts every record is acknowledged: an empty key is accepted on a compacted topic
    produce_timed(bootstrap, topic, [[(b"", b"a")], [(b"", b"b")], [(b"z", b"active")]], now_ms())
    stored = [(r.offset, r.key) for b in batches(bootstrap, topic) for r in b.records()]
    assert stored == [(0, b""), (1, b""), (2, b"z")], "the keys must reach the log as empty, not null"
    wait_for_checkpoint(broker, topic, 2)
    assert consume_all(bootstrap, topic) == [(1, b"", b"b"), (2, b"z", b"active")]
    assert [(r.offset, r.key, r.value) for b in batches(bootstrap, topic) for r in b.records()] == [
        (1, b"", b"b"), (2, b"z", b"active")]


# ------------------------------------------------------------------------------------ G. lags and rolling


def test_S35_min_compaction_lag_holds_back_recent_segments(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic, lag_ms, step_ms = broker.bootstrap, "s35", 5000, 200
    create_topic(bootstrap, topic, 1, {**COMPACTED, "min.compaction.lag.ms": str(lag_ms)})
    t0 = now_ms()
    produce_timed(bootstrap, topic, dup_rounds(100, 3), t0, step_ms)  # segments 0, 100, 200 (active at T0)
    wait_for(lambda: len(log_files(broker.data_dir, topic)) >= 3, 10, "the rounds to roll")
    wait_for_two_cleaner_runs(broker)
    assert now_ms() < t0 + lag_ms, "too slow to observe the lag window; the negative check below would be void"
    assert (checkpoint_of(broker.data_dir, topic) or 0) == 0, "a segment younger than the lag was cleaned"
    size_before = bytes_below(broker.data_dir, topic, 300)
    assert len(consume_all(bootstrap, topic)) == 300

    newest_t0_ms = t0 + 2 * step_ms
    wait_for(lambda: now_ms() > newest_t0_ms + lag_ms + 50, lag_ms / 1000 + 10, "the T0 segments to age")
    new_ms = now_ms()
    produce_timed(bootstrap, topic, dup_rounds(100, 3, first_round=3), new_ms, step_ms)  # 300, 400, 500
    latest = {b"key-%03d" % k: b"v5-%03d" % k for k in range(100)}  # what a consumer saw before cleaning
    wait_for_checkpoint(broker, topic, 300)
    wait_for_two_cleaner_runs(broker)
    assert now_ms() < new_ms + lag_ms, "too slow: the new segments aged past the lag before the check"
    assert checkpoint_of(broker.data_dir, topic) == 300, "the recent segments 300 and 400 must wait"
    assert bytes_below(broker.data_dir, topic, 300) < size_before
    records = consume_all(bootstrap, topic)
    assert key_values(records) == latest
    assert [offset for offset, _, _ in records] == list(range(200, 600))


def test_S36_old_create_times_are_cleaned_at_once_recent_ones_wait(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap = broker.bootstrap
    lagged = {**COMPACTED, "min.compaction.lag.ms": str(HOUR_MS)}
    for topic in ("s36-recent", "s36-old"):
        create_topic(bootstrap, topic, 1, lagged)
    produce_timed(bootstrap, "s36-recent", dup_rounds(100, 4), now_ms())
    started = time.monotonic()
    produce_timed(bootstrap, "s36-old", dup_rounds(100, 4), now_ms() - 2 * HOUR_MS)
    wait_for_checkpoint(broker, "s36-old", 300)
    assert time.monotonic() - started < 15
    records = consume_all(bootstrap, "s36-old")
    assert key_values(records) == {b"key-%03d" % k: b"v3-%03d" % k for k in range(100)}
    assert len(records) <= 200
    wait_for_two_cleaner_runs(broker)
    assert (checkpoint_of(broker.data_dir, "s36-recent") or 0) == 0
    assert len(consume_all(bootstrap, "s36-recent")) == 400


def test_S36_a_recent_segment_between_old_ones_holds_back_everything_from_it_on(
        broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic = broker.bootstrap, "s36-mixed"
    create_topic(bootstrap, topic, 1, {**HELD, "min.compaction.lag.ms": str(HOUR_MS)})
    old_ms = now_ms() - 2 * HOUR_MS
    stamps = [old_ms, old_ms + 1000, now_ms(), old_ms + 2000, old_ms + 3000]
    for i, (pairs, stamp) in enumerate(zip(dup_rounds(100, len(stamps)), stamps)):
        produce_timed(bootstrap, topic, [pairs], stamp)
        # a batch stamped before the segment's first one never rolls on append: the idle timer rolls it
        wait_for(has_segments(broker.data_dir, topic, i + 2), 10, f"segment {i} to roll")
    assert [int(path.stem) for path in log_files(broker.data_dir, topic)] == [0, 100, 200, 300, 400, 500]
    alter_topic(bootstrap, topic, CLEAN_NOW)
    wait_for_checkpoint(broker, topic, 200)
    wait_for_two_cleaner_runs(broker)
    assert checkpoint_of(broker.data_dir, topic) == 200, "segments from the recent one on must not be cleaned"
    records = consume_all(bootstrap, topic)
    assert [offset for offset, _, _ in records] == list(range(100, 500))
    assert key_values(records) == {b"key-%03d" % k: b"v4-%03d" % k for k in range(100)}


def test_S37_max_compaction_lag_bypasses_the_ratio_but_only_after_a_roll(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(NO_IDLE_ROLL)
    bootstrap, topic = broker.bootstrap, "s37"
    create_topic(bootstrap, topic, 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1.0",
                                       "max.compaction.lag.ms": "1000"})  # segment.ms: the 7-day default
    t = now_ms() - 5000  # "wait 5 s" is done by stamping 5 s in the past
    produce_batch(bootstrap, topic, [(b"k", b"a")], t)
    produce_batch(bootstrap, topic, [(b"k", b"b")], t)
    wait_for_two_cleaner_runs(broker)
    assert checkpoint_of(broker.data_dir, topic) is None, "the active segment was cleaned"
    assert len(log_files(broker.data_dir, topic)) == 1
    labels = (("partition", "0"), ("topic", topic))
    assert scrape(broker)[("minikafka_log_cleaner_compaction_delay_seconds", labels)] == 0

    produce_batch(bootstrap, topic, [(b"k", b"c")], t + 5000)  # > maxSegmentMs = min(1000, 7 d): rolls
    assert [int(path.stem) for path in log_files(broker.data_dir, topic)] == [0, 2]
    wait_for_checkpoint(broker, topic, 2)
    assert consume_all(bootstrap, topic) == [(1, b"k", b"b"), (2, b"k", b"c")]
    assert scrape(broker)[("kafka_log_logcleaner_max_compaction_delay_secs", ())] >= 3
    stats = re.search(r"Cleanable partitions: (\d+), Delayed partitions: (\d+), max delay: (\d+)", broker.read_log())
    assert stats is not None, "no delayed-partition statistics in the cleaner log"
    assert (int(stats[1]), int(stats[2])) == (1, 1)
    assert int(stats[3]) >= 3000


# ------------------------------------------------------------------------------------ J. errors and metrics


def test_S55_liveness_metrics_with_nothing_to_clean(broker_factory: BrokerFactory) -> None:
    backoff_ms = 1000
    broker = broker_factory({**FAST_CLEANER, "log.cleaner.backoff.ms": str(backoff_ms)})
    bootstrap, topic = broker.bootstrap, "s55"
    create_topic(bootstrap, topic, 1, COMPACTED)
    produce_timed(bootstrap, topic, dup_rounds(100, 3), now_ms())
    wait_for_checkpoint(broker, topic, 300)  # the idle timer closes the last round too
    alter_topic(bootstrap, topic, {"min.cleanable.dirty.ratio": "0.9"})
    produce_timed(bootstrap, topic, [[(b"key-%03d" % k, b"again") for k in range(30)]], now_ms())
    wait_for(lambda: len(log_files(broker.data_dir, topic)) >= 2 and
             int(log_files(broker.data_dir, topic)[-1].stem) == 330, 10, "the new round to roll")
    wait_for_two_cleaner_runs(broker, backoff_ms)
    *closed, _active = log_files(broker.data_dir, topic)
    clean_bytes = sum(p.stat().st_size for p in closed if int(p.stem) < 300)
    dirty_bytes = sum(p.stat().st_size for p in closed if int(p.stem) >= 300)
    expected_percent = 100 * dirty_bytes // (clean_bytes + dirty_bytes)
    assert 0 < expected_percent < 90

    samples: list[float] = []
    deadline = time.monotonic() + 3 * backoff_ms / 1000
    while time.monotonic() < deadline:
        metrics = scrape(broker)
        samples.append(metrics[TIME_SINCE_LAST_RUN])
        assert metrics[("kafka_log_logcleanermanager_max_dirty_percent", ())] == expected_percent
        time.sleep(0.1)
    one_grab_ms = 500  # generous for a loaded 2-CPU box; a grab over one partition takes milliseconds
    assert max(samples) < backoff_ms + one_grab_ms, samples
    assert sum(1 for a, b in itertools.pairwise(samples) if b < a) >= 2, f"the cleaner did not run again: {samples}"
    assert checkpoint_of(broker.data_dir, topic) == 300, "below the threshold: nothing is cleaned"
    assert watermarks(bootstrap, topic) == (0, 330)

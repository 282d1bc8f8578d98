"""Spec §5 scenarios S39, S45, S47, S51 over the wire: a broker subprocess, real clients (confluent-kafka;
kafka-python where the exact error code must reach the test), and inspection of the data dir.

S40 (jitter, [unit]), S52 (large and corrupt batches) and S54 (thread death and reconfiguration; the broker
has no wire path to kill or reconfigure cleaner threads) are in tests/cleaner/test_scenarios_s39_s54.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import checkpoint_of, consume_all, produce, scrape, wait_for

pytestmark = pytest.mark.timeout(120)

BrokerFactory = Callable[..., BrokerProcess]
FAST_CLEANER = {
    "log.cleaner.backoff.ms": "100",
    "minikafka.log.roll.check.interval.ms": "100",
    "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
}
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.bytes": "2048"}


def has_checkpoint(data_dir: Path, topic: str, above: int = -1) -> Callable[[], bool]:
    return lambda: (checkpoint_of(data_dir, topic) or -1) > above


def log_files(partition_dir: Path, suffix: str = ".log") -> list[str]:
    return sorted(p.name for p in partition_dir.iterdir() if p.name.endswith(suffix))


def produce_versions(bootstrap: str, topic: str, keys: int, versions: int) -> None:
    from confluent_kafka import Producer

    # small batches, so that segment.bytes=2048 holds several of them
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.size": 600})
    errors: list[str] = []
    for version in range(versions):
        for key in range(keys):
            producer.produce(topic, key=b"key-%03d" % key, value=b"v%d-" % version + b"." * 40,
                             on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
        assert producer.flush(30) == 0
    assert not errors, errors[:3]


def test_S39_roll_decisions_use_batch_timestamps(broker_factory: BrokerFactory) -> None:
    from confluent_kafka import Producer

    broker = broker_factory(FAST_CLEANER)
    topic = "s39"
    hour_ms = 3_600_000
    create_topic(broker.bootstrap, topic, 1, {"segment.ms": str(hour_ms)})
    partition_dir = broker.data_dir / f"{topic}-0"
    first_ms = int(time.time() * 1000) - 10 * hour_ms  # far in the past: the wall clock must not matter
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})

    def send(timestamp_ms: int) -> None:
        producer.produce(topic, key=b"k", value=b"v", timestamp=timestamp_ms)
        assert producer.flush(30) == 0

    for _ in range(3):
        send(first_ms)
    send(first_ms + hour_ms)  # exactly segment.ms after the first batch: no roll
    time.sleep(0.5)  # several idle-roll timer ticks: segment.ms is measured from the broker's first append
    assert log_files(partition_dir) == ["00000000000000000000.log"]
    send(first_ms + hour_ms + 1)
    assert log_files(partition_dir) == ["00000000000000000000.log", "00000000000000000004.log"]
    send(first_ms)  # stamped long before the new segment's first batch: no roll
    assert len(log_files(partition_dir)) == 2


def test_S45_deleted_files_linger_for_file_delete_delay_ms(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    create_topic(broker.bootstrap, "linger", 1, {**COMPACT})  # default file.delete.delay.ms = 60 s
    create_topic(broker.bootstrap, "quick", 1, {**COMPACT, "file.delete.delay.ms": "1000"})
    for topic in ("linger", "quick"):
        produce_versions(broker.bootstrap, topic, keys=20, versions=3)
    for topic in ("linger", "quick"):
        wait_for(has_checkpoint(broker.data_dir, topic, above=0), 20, f"cleaning of {topic}")
    linger_dir, quick_dir = broker.data_dir / "linger-0", broker.data_dir / "quick-0"
    deleted = log_files(linger_dir, ".log.deleted")
    assert deleted, "replaced segments are renamed to .deleted, not unlinked"
    assert log_files(linger_dir, ".index.deleted") and log_files(linger_dir, ".timeindex.deleted")
    took_s = wait_for(lambda: not log_files(quick_dir, ".deleted"), 10, ".deleted files of quick to vanish")
    assert took_s < 5
    time.sleep(1.5)
    still = log_files(linger_dir, ".log.deleted")
    assert set(deleted) <= set(still), "with the 60 s default the files are still there"
    latest = consume_all(broker.bootstrap, "linger")  # reads never touch the pending segments
    assert {k: v for _, k, v in latest} == {b"key-%03d" % k: b"v2-" + b"." * 40 for k in range(20)}


def test_S47_deleted_partition_line_leaves_the_checkpoint(broker_factory: BrokerFactory) -> None:
    from confluent_kafka.admin import AdminClient

    broker = broker_factory(FAST_CLEANER)
    for topic in ("gone", "kept"):
        create_topic(broker.bootstrap, topic, 1, COMPACT)
        produce_versions(broker.bootstrap, topic, keys=20, versions=3)
    for topic in ("gone", "kept"):
        wait_for(has_checkpoint(broker.data_dir, topic), 20, f"checkpoint of {topic}")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["gone"], operation_timeout=10)["gone"].result(30)
    wait_for(lambda: checkpoint_of(broker.data_dir, "gone") is None, 10, "the deleted partition's line to go")
    assert checkpoint_of(broker.data_dir, "kept") is not None
    lines = (broker.data_dir / "cleaner-offset-checkpoint").read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2


def test_S47_malformed_checkpoint_takes_the_log_dir_offline(broker_factory: BrokerFactory) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaStorageError

    broker = broker_factory(FAST_CLEANER)
    create_topic(broker.bootstrap, "t", 1, COMPACT)
    produce(broker.bootstrap, "t", [(b"k", b"before")])
    broker.stop()
    (broker.data_dir / "cleaner-offset-checkpoint").write_text("0\n2\nt 0 oops\n")
    broker.start()
    wait_for(lambda: "is offline" in broker.read_log(), 20, "the log dir to go offline")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, acks=1, max_block_ms=10_000)
    try:
        with pytest.raises(KafkaStorageError):
            producer.send("t", key=b"k", value=b"after").get(timeout=20)
    finally:
        producer.close(timeout=5)
    assert (broker.data_dir / "cleaner-offset-checkpoint").read_text() == "0\n2\nt 0 oops\n"


def test_S51_corrupt_segments_make_partitions_uncleanable_others_continue(broker_factory: BrokerFactory) -> None:
    from confluent_kafka.admin import AdminClient

    broker = broker_factory(FAST_CLEANER)
    topics = ["p0", "p1", "p2"]  # one partition each, so that one can be deleted alone
    for topic in topics:
        create_topic(broker.bootstrap, topic, 1, COMPACT)
        produce_versions(broker.bootstrap, topic, keys=20, versions=3)
    for topic in topics:
        wait_for(has_checkpoint(broker.data_dir, topic), 20, f"first cleaning of {topic}")
    first_p2_checkpoint = checkpoint_of(broker.data_dir, "p2") or 0
    for topic in topics[:2]:  # garbage over the middle of the biggest closed segment (cleaning empties some)
        closed = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))[:-1]
        segment = max(closed, key=lambda path: path.stat().st_size)
        size = segment.stat().st_size
        assert size > 200
        with open(segment, "r+b") as f:
            f.seek(max(size // 2 - 32, 0))
            f.write(b"\xff" * 64)
    for topic in topics:
        produce_versions(broker.bootstrap, topic, keys=20, versions=3)
    label = (("logDirectory", str(broker.data_dir)),)

    def uncleanable() -> float:
        return scrape(broker).get(("kafka_log_logcleanermanager_uncleanable_partitions_count", label), -1)

    wait_for(lambda: uncleanable() == 2, 30, "two uncleanable partitions")
    wait_for(lambda: (checkpoint_of(broker.data_dir, "p2") or 0) > max(first_p2_checkpoint, 60), 20,
             "p2 cleaned again")
    samples = scrape(broker)

    def dirty(topic: str) -> float:
        return samples[("minikafka_log_cleaner_dirty_bytes", (("partition", "0"), ("topic", topic)))]

    assert samples[("kafka_log_logcleanermanager_uncleanable_bytes", label)] == dirty("p0") + dirty("p1") > 0
    failing = {dict(labels)["topic"] for (name, labels), _ in samples.items()
               if name == "minikafka_log_cleaner_partition_failures" and dict(labels)["uncleanable"] == "true"}
    assert failing == {"p0", "p1"}
    assert samples[("kafka_log_logcleaner_deadthreadcount", ())] == 0
    records = consume_all(broker.bootstrap, "p2")
    assert {k: v for _, k, v in records} == {b"key-%03d" % k: b"v2-" + b"." * 40 for k in range(20)}
    assert len(records) < 80  # of 120 produced
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["p0"], operation_timeout=10)["p0"].result(30)
    wait_for(lambda: uncleanable() == 1, 10, "one uncleanable partition after deleting p0")
    assert "Marking its partition (p1-0) as uncleanable" in broker.read_log()

"""Compaction against a real broker subprocess with real clients: the erasure deadline (issue 4 item 4),
latest-values-only reads after compaction, `minikafka compact` end to end, and the cleaner metrics."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import REPO_ROOT, BrokerProcess
from tests.integration.client_drivers import create_topic

pytestmark = pytest.mark.timeout(120)

BrokerFactory = Callable[..., BrokerProcess]
FAST_CLEANER = {
    "log.cleaner.backoff.ms": "500",
    "minikafka.log.roll.check.interval.ms": "200",
    "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
}


def produce(bootstrap: str, topic: str, pairs: list[tuple[bytes, bytes | None]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors: list[str] = []
    for key, value in pairs:
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
    assert producer.flush(30) == 0
    assert not errors, errors


def consume_all(bootstrap: str, topic: str, partition: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record from offset 0 up to the high watermark, read by a confluent-kafka consumer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-test",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        got: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        # Cleaning leaves offset gaps (the last offsets may be gone, and librdkafka's position only follows
        # delivered records): read until offset high - 1 or until nothing more arrives for a second.
        quiet_since = time.monotonic()
        while high > 0 and (not got or got[-1][0] < high - 1):
            if got and time.monotonic() - quiet_since > 1.0:
                break
            assert time.monotonic() < deadline, f"consumed {len(got)} records, still short of {high}"
            for msg in consumer.consume(num_messages=10_000, timeout=0.2):
                if msg.error() is not None:
                    raise AssertionError(f"consumer error: {msg.error()}")
                got.append((int(msg.offset() or 0), msg.key(), msg.value()))
                quiet_since = time.monotonic()
        return got
    finally:
        consumer.close()


def scrape(broker: BrokerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def files_containing(directory: Path, needle: bytes) -> list[str]:
    found = []
    for path in directory.rglob("*"):
        try:
            if path.is_file() and needle in path.read_bytes():
                found.append(path.name)
        except FileNotFoundError:  # replaced by a swap while we looked
            continue
    return found


def checkpoint_of(data_dir: Path, topic: str, partition: int = 0) -> int | None:
    try:
        lines = (data_dir / "cleaner-offset-checkpoint").read_text().splitlines()[2:]
    except FileNotFoundError:
        return None
    for line in lines:
        name, p, offset = line.split()
        if name == topic and int(p) == partition:
            return int(offset)
    return None


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str) -> float:
    """Poll until `condition()` is truthy; returns the seconds it took."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"{what} not within {timeout_s}s")
        time.sleep(0.05)
    return time.monotonic() - start


def test_superseded_and_tombstoned_values_erased_from_every_file_within_the_deadline(
        broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    max_lag_ms, backoff_ms, delete_retention_ms, roll_check_ms = 3000, 500, 1000, 200
    file_delete_delay_ms = 500  # replaced segments linger as .deleted files this long (S45)
    topic = "deadline"
    create_topic(broker.bootstrap, topic, 1, {
        "cleanup.policy": "compact", "max.compaction.lag.ms": str(max_lag_ms), "segment.ms": "604800000",
        "delete.retention.ms": str(delete_retention_ms), "file.delete.delay.ms": str(file_delete_delay_ms)})
    started = time.monotonic()
    produce(broker.bootstrap, topic, [(b"k1", b"OLDVALUE-UNIQUE"), (b"TOMBKEY-UNIQUE", b"doomed")])
    produce(broker.bootstrap, topic, [(b"k1", b"new"), (b"TOMBKEY-UNIQUE", None)])
    partition_dir = broker.data_dir / f"{topic}-0"
    assert files_containing(partition_dir, b"OLDVALUE-UNIQUE")  # the bytes are on disk to begin with
    one_cleaning_s = 2.0  # generous: a round over two tiny batches takes milliseconds
    # roll (lag + timer) -> next cleaner pass (backoff) -> cleaning -> .deleted files unlinked (delay + timer)
    deadline_ms = max_lag_ms + roll_check_ms + backoff_ms + file_delete_delay_ms + roll_check_ms
    deadline_s = deadline_ms / 1000 + one_cleaning_s
    wait_for(lambda: not files_containing(partition_dir, b"OLDVALUE-UNIQUE"), deadline_s + 5,
             "erasure of the superseded value")
    old_gone_s = time.monotonic() - started
    assert old_gone_s <= deadline_s, f"superseded value erased after {old_gone_s:.1f}s > {deadline_s:.1f}s"
    assert not files_containing(partition_dir, b"doomed")
    tombstone_deadline_s = deadline_s + (delete_retention_ms + backoff_ms) / 1000 + one_cleaning_s
    wait_for(lambda: not files_containing(partition_dir, b"TOMBKEY-UNIQUE"), tombstone_deadline_s + 5,
             "erasure of the tombstone")
    tombstone_gone_s = time.monotonic() - started
    assert tombstone_gone_s <= tombstone_deadline_s, f"tombstone erased after {tombstone_gone_s:.1f}s"
    assert consume_all(broker.bootstrap, topic) == [(2, b"k1", b"new")]
    samples = scrape(broker)
    assert samples[("kafka_log_logcleaner_max_compaction_delay_secs", ())] == 0
    assert samples[("minikafka_log_cleaner_compaction_delay_seconds", (("partition", "0"), ("topic", topic)))] == 0
    assert samples[("minikafka_log_cleaner_records_removed_total", (("partition", "0"), ("topic", topic)))] >= 3
    assert samples[("kafka_log_logcleaner_deadthreadcount", ())] == 0
    assert "Log cleaner thread 0 cleaned log deadline-0" in broker.read_log()


def test_consumer_from_offset_zero_sees_only_latest_values_after_compaction(
        broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic = "latest"
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact", "max.compaction.lag.ms": "1000",
                                              "min.cleanable.dirty.ratio": "0.01"})
    keys, versions = 50, 4
    for version in range(versions):
        produce(broker.bootstrap, topic, [(b"key-%03d" % k, b"v%d-%03d" % (version, k)) for k in range(keys)])
    total = keys * versions
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == total, 20, "cleaning of the whole log")
    records = consume_all(broker.bootstrap, topic)
    assert [(key, value) for _, key, value in records] == [
        (b"key-%03d" % k, b"v%d-%03d" % (versions - 1, k)) for k in range(keys)]
    offsets = [offset for offset, _, _ in records]
    assert offsets == list(range(total - keys, total))  # original offsets kept
    samples = scrape(broker)
    labels = (("partition", "0"), ("topic", topic))
    assert samples[("minikafka_log_cleaner_records_removed_total", labels)] == total - keys
    assert samples[("minikafka_log_cleaner_dirty_bytes", labels)] == 0


def test_minikafka_compact_cli_end_to_end(broker_factory: BrokerFactory) -> None:
    broker = broker_factory({**FAST_CLEANER, "log.cleaner.backoff.ms": "60000"})
    topic = "manual"
    # Ratio 1.0 and the default max lag: the cleaner would never pick this topic by itself.
    create_topic(broker.bootstrap, topic, 2, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1.0"})
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for version in range(3):
        for k in range(10):
            producer.produce(topic, key=b"k%d" % k, value=b"v%d" % version, partition=k % 2)
    assert producer.flush(30) == 0
    admin_url = f"http://127.0.0.1:{broker.metrics_port}"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "minikafka.broker", "compact", *args, "--admin-url", admin_url],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)

    done = cli(topic, "--partition", "0", "--wait")
    assert done.returncode == 0, done.stderr
    assert "manual-0: cleaned" in done.stdout and "removed 10 records" in done.stdout
    assert [v for _, _, v in consume_all(broker.bootstrap, topic, 0)] == [b"v2"] * 5
    assert len(consume_all(broker.bootstrap, topic, 1)) == 15  # not asked for
    both = cli(topic, "--wait")
    assert both.returncode == 0 and "total removed: 10 records" in both.stdout, both.stdout + both.stderr
    missing = cli("no-such-topic", "--wait")
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_cleaner_state_endpoint(broker_factory: BrokerFactory) -> None:
    """`GET /admin/cleaner-state?topic=T` (what `minikafka audit` reads): the cleaner checkpoint appears once a
    partition is cleaned, with the topic's compaction configs and the cleaner's backoff."""
    import json
    import urllib.error

    broker = broker_factory({**FAST_CLEANER, "log.cleaner.backoff.ms": "60000"})
    topic = "state"
    create_topic(broker.bootstrap, topic, 2, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1.0",
                                              "max.compaction.lag.ms": "600000", "delete.retention.ms": "1234"})
    produce(broker.bootstrap, topic, [(b"k%d" % (i % 4), b"v%d" % i) for i in range(40)])
    base = f"http://127.0.0.1:{broker.metrics_port}/admin"

    def state() -> dict[str, Any]:
        with urllib.request.urlopen(f"{base}/cleaner-state?topic={topic}", timeout=10) as response:
            body: dict[str, Any] = json.loads(response.read())
            return body

    before = state()
    assert before["config"] == {"cleanup.policy": "compact", "delete.retention.ms": 1234,
                                "min.compaction.lag.ms": 0, "max.compaction.lag.ms": 600000,
                                "segment.ms": 604800000}
    assert before["cleaner_enabled"] is True and before["cleaner_backoff_ms"] == 60000
    assert before["roll_check_interval_ms"] == 200
    assert [p["cleaner_checkpoint_offset"] for p in before["partitions"]] == [None, None]
    ends = [p["log_end_offset"] for p in before["partitions"]]
    assert sum(ends) == 40
    # What an exact-compaction plan needs (issue 10): the topic id as Kafka prints it (URL-safe base64), as hex
    # (the plan's 16 raw bytes) and as a UUID; per partition where an ordinary round could end now (the active
    # segment: nothing rolled yet) and where an exact round may end (the broker rolls first).
    import base64
    import uuid

    topic_id = uuid.UUID(hex=before["topic_id_hex"])
    assert base64.urlsafe_b64decode(before["topic_id"] + "==") == topic_id.bytes
    assert uuid.UUID(before["topic_id_uuid"]) == topic_id
    assert [p["first_uncleanable_offset"] for p in before["partitions"]] == [0, 0]
    assert [p["exact_end_offset_limit"] for p in before["partitions"]] == ends

    cleaned = 0 if ends[0] >= ends[1] else 1  # the default partitioner decides where the 4 keys go
    request = urllib.request.Request(f"{base}/compact?topic={topic}&partition={cleaned}&wait=true", data=b"",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read())["done"]

    after = state()
    assert after["partitions"][cleaned]["cleaner_checkpoint_offset"] == ends[cleaned]
    assert after["partitions"][cleaned]["first_uncleanable_offset"] == ends[cleaned]  # rolled by the compaction
    assert after["partitions"][1 - cleaned]["cleaner_checkpoint_offset"] is None
    assert after["partitions"][cleaned]["records_removed"] > 0 and after["partitions"][cleaned]["last_clean_time_ms"]
    for path, status in ((f"{base}/cleaner-state?topic=nope", 404), (f"{base}/cleaner-state", 400)):
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(path, timeout=10)
        assert failure.value.code == status

"""`minikafka audit`: passes on a topic the broker compacted, fails naming partition and offset on a topic whose
data breaks the guarantees (built deliberately: the cleaner off, old timestamps, a checkpoint claiming a clean that
never happened), and still checks what it can on Apache Kafka (no cleaner checkpoint exposed there)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import TYPE_CHECKING, Any

from minikafka.pipeline.audit import flag_records, run_audit
from minikafka.storage.checkpoint import OffsetCheckpointFile
from tests.pipeline.kafka_data import Message, Record, create_topic, produce, unique_topic
from tests.pipeline.pipeline_cli import run_pipeline_command

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.broker_process import BrokerProcess

HOUR_MS = 3_600_000


def compact_now(broker: BrokerProcess, topic: str) -> None:
    request = urllib.request.Request(f"{broker.admin_url}/admin/compact?topic={topic}&wait=true", data=b"",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read())["done"]


def cleaner_state(broker: BrokerProcess, topic: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{broker.admin_url}/admin/cleaner-state?topic={topic}", timeout=10) as response:
        state: dict[str, Any] = json.loads(response.read())
        return state


def test_audit_passes_on_a_topic_the_broker_compacted(spark: SparkSession, broker_factory: Any) -> None:
    broker: BrokerProcess = broker_factory({"log.cleaner.backoff.ms": "100"})
    topic = unique_topic("audit-ok")
    create_topic(broker.bootstrap, topic, 2, {
        "cleanup.policy": "compact", "max.compaction.lag.ms": "1000", "delete.retention.ms": "0",
        "min.cleanable.dirty.ratio": "0.01"})
    produced = produce(broker.bootstrap, topic, [Message(b"k%03d" % (i % 150), b"v%d" % i) for i in range(900)]
                       + [Message(b"k%03d" % k, None) for k in range(0, 150, 3)])
    compact_now(broker, topic)
    # delete.retention.ms=0: the cleaner's own horizon round drops the tombstones stamped by the first clean
    deadline = time.monotonic() + 30
    while any(p["tombstones_pending"] for p in cleaner_state(broker, topic)["partitions"]):
        assert time.monotonic() < deadline, "tombstones were not removed after their delete horizon"
        time.sleep(0.2)

    report = run_audit(spark, broker.bootstrap, topic, admin_url=broker.admin_url, grace_ms=5_000)

    assert report.ok, report.to_json()
    assert report.violations == []
    assert all(rule.startswith(("checked", "deadline")) for rule in report.rules.values()), report.rules
    live = {r.key: r for r in sorted(produced)}
    for partition in report.partitions:
        expected = [r for r in live.values() if r.partition == partition.partition and r.value is not None]
        assert partition.records == partition.distinct_keys == len(expected)
        assert partition.cleaner_checkpoint_offset is not None and partition.cleaner_checkpoint_offset > 0
        assert partition.tombstones == 0
    assert sum(p.records for p in report.partitions) == 100


def broken_topic(broker: BrokerProcess) -> tuple[str, list[Record]]:
    """One partition, the cleaner disabled: values superseded an hour ago, an hour-old tombstone, a fresh update;
    then a cleaner checkpoint that claims the whole partition was cleaned."""
    topic = unique_topic("audit-broken")
    create_topic(broker.bootstrap, topic, 1, {
        "cleanup.policy": "compact", "max.compaction.lag.ms": "60000", "delete.retention.ms": "1000"})
    hour_ago_ms = int(time.time() * 1000) - HOUR_MS
    produced = produce(broker.bootstrap, topic, [
        Message(b"stale", b"v1", partition=0, timestamp_ms=hour_ago_ms),       # offset 0: overdue, duplicate
        Message(b"stale", b"v2", partition=0, timestamp_ms=hour_ago_ms + 1),   # offset 1: the live value
        Message(b"erased", None, partition=0, timestamp_ms=hour_ago_ms),        # offset 2: overdue tombstone
        Message(b"fresh", b"v1", partition=0),                                   # offset 3: duplicate, not overdue
        Message(b"fresh", b"v2", partition=0),                                   # offset 4
    ])
    broker.stop()
    OffsetCheckpointFile(broker.data_dir / "cleaner-offset-checkpoint").write({(topic, 0): len(produced)})
    broker.start()
    return topic, produced


def test_audit_fails_naming_partition_and_offset(broker_factory: Any) -> None:
    """Through the CLI, as an operator runs it: exit status 1, the JSON report, one line per offender."""
    broker: BrokerProcess = broker_factory({"log.cleaner.enable": "false"})
    topic, produced = broken_topic(broker)
    assert [(r.offset, r.key) for r in produced] == [(0, b"stale"), (1, b"stale"), (2, b"erased"), (3, b"fresh"),
                                                        (4, b"fresh")]

    done = run_pipeline_command("audit", "--bootstrap-servers", broker.bootstrap, "--topic", topic,
                                "--admin-url", broker.admin_url, "--grace-ms", "0")

    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] is False
    [partition] = report["partitions"]
    assert partition == {
        "partition": 0, "records": 5, "distinct_keys": 3, "tombstones": 1, "cleaner_checkpoint_offset": 5,
        "offset_order_violations": 0, "duplicates_below_checkpoint": 2, "overdue_values": 1, "overdue_tombstones": 1,
    }
    assert [(v["rule"], v["offset"], v["key"]) for v in report["violations"]] == [
        ("duplicate_below_checkpoint", 0, "stale"), ("overdue_value", 0, "stale"),
        ("overdue_tombstone", 2, "erased"), ("duplicate_below_checkpoint", 3, "fresh")]
    assert f"{topic}-0 offset 0 (key 'stale'): overdue_value" in done.stderr
    assert f"{topic}-0 offset 2 (key 'erased'): overdue_tombstone" in done.stderr


def test_offset_order_rule(spark: SparkSession) -> None:
    """Offsets that go backwards or repeat in read order are flagged (no real broker can serve that)."""
    from pyspark.sql import functions as F

    rows = [(b"a", b"1", 0, 5, 1), (b"b", b"1", 0, 7, 2), (b"c", b"1", 0, 6, 3), (b"d", b"1", 0, 6, 4),
            (b"a", b"1", 1, 3, 5)]
    records = (spark.createDataFrame(rows, "key binary, value binary, partition int, offset long, _seq long")
               .withColumn("timestamp", F.current_timestamp()))
    flagged = flag_records(records, {}, now_ms=0, value_deadline_ms=None, tombstone_deadline_ms=None)
    offenders = sorted((r["partition"], r["offset"]) for r in flagged.where("offset_order").collect())
    assert offenders == [(0, 6), (0, 6)]


def test_audit_on_apache_kafka_checks_what_it_can(spark: SparkSession, apache_kafka: Any) -> None:
    """Apache Kafka exposes no cleaner checkpoint: that rule is reported unchecked, the others still run."""
    topic = unique_topic("audit-apache")
    create_topic(apache_kafka.bootstrap, topic, 2, {"cleanup.policy": "compact", "max.compaction.lag.ms": "600000"})
    produce(apache_kafka.bootstrap, topic, [Message(b"k%d" % (i % 10), b"v%d" % i) for i in range(50)])

    report = run_audit(spark, apache_kafka.bootstrap, topic, admin_url=None)

    assert report.ok
    assert report.rules["duplicate_below_checkpoint"].startswith("not checked")
    assert report.rules["overdue_value"].startswith("deadline")
    assert sum(p.records for p in report.partitions) == 50
    assert sum(p.distinct_keys for p in report.partitions) == 10

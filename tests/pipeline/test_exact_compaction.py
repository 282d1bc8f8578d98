"""`minikafka compact --exact`: the retained-offset plan computed on Spark, applied by the broker in one round.

The broker's offset map is made tiny (a few thousand keys), so the ordinary cleaner needs many rounds for the same
data; the exact round leaves one record per key in one round, checked by a consumer from offset 0 and by
`minikafka audit`. The full-size run (1M records over 200k keys) is bench/exact_compaction.py.
"""

from __future__ import annotations

import json
import math
import urllib.request
from collections import Counter
from typing import TYPE_CHECKING, Any

from minikafka.pipeline.audit import run_audit
from minikafka.pipeline.exact_plan import compact_exact
from tests.pipeline.kafka_data import Message, consume_all, create_topic, produce, produce_transactions, unique_topic
from tests.pipeline.pipeline_cli import run_pipeline_command_in_process

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.broker_process import BrokerProcess

KEYS = 12_000
RECORDS = 30_000
# 1 MiB + 1 of dedupe buffer (the least one cleaner thread may have) filled to 5%: a map of ~3,400 keys
TINY_MAP = {"log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 1), "log.cleaner.io.buffer.load.factor": "0.05",
            "log.cleaner.backoff.ms": "600000"}
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.99", "segment.bytes": str(1024 * 1024)}


def history() -> list[Message]:
    """RECORDS updates over KEYS keys, then tombstones for every 10th key."""
    messages = [Message(b"key-%06d" % (i % KEYS), b"value-%d" % i, partition=0) for i in range(RECORDS)]
    return messages + [Message(b"key-%06d" % k, None, partition=0) for k in range(0, KEYS, 10)]


def fill(broker: BrokerProcess, topic: str) -> dict[bytes, bytes | None]:
    """The history, a committed and an aborted transaction; each key's latest committed value."""
    create_topic(broker.bootstrap, topic, 1, COMPACTED)
    latest: dict[bytes, bytes | None] = {}
    for record in produce(broker.bootstrap, topic, history()):
        assert record.key is not None
        latest[record.key] = record.value
    committed = [Message(b"key-%06d" % k, b"txn-committed", partition=0) for k in range(5)]
    aborted = [Message(b"key-%06d" % k, b"txn-aborted", partition=0) for k in range(5, 10)]
    produce_transactions(broker.bootstrap, topic, [(committed, True), (aborted, False)])
    latest.update({m.key: m.value for m in committed if m.key is not None})
    return latest


def test_exact_compaction_leaves_one_record_per_key_in_one_round(
    spark: SparkSession, broker_factory: Any
) -> None:
    broker: BrokerProcess = broker_factory(TINY_MAP)
    exact_topic, ordinary_topic = unique_topic("exact"), unique_topic("ordinary")
    latest = fill(broker, exact_topic)
    assert fill(broker, ordinary_topic) == latest

    [reply] = compact_exact(spark, broker.bootstrap, exact_topic, broker.admin_url, partitions=[0])

    [result] = reply["results"]
    assert result["status"] == "cleaned" and result["rounds"] == 1, reply
    records = consume_all(broker.bootstrap, exact_topic, 1)
    counts = Counter(r.key for r in records)
    assert counts and max(counts.values()) == 1, [k for k, n in counts.items() if n > 1][:5]
    assert {r.key: r.value for r in records} == latest  # tombstones stay until their delete horizon
    report = run_audit(spark, broker.bootstrap, exact_topic, admin_url=broker.admin_url)
    assert report.ok and report.partitions[0].duplicates_below_checkpoint == 0, report.to_json()
    assert report.partitions[0].cleaner_checkpoint_offset is not None

    # The same data through the ordinary cleaner: its map holds a fraction of the keys, so it needs many rounds.
    request = urllib.request.Request(f"{broker.admin_url}/admin/compact?topic={ordinary_topic}&wait=true",
                                     data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=600) as response:
        [ordinary] = json.loads(response.read())["results"]
    print(f"ordinary cleaner: {ordinary['rounds']} rounds for {KEYS} keys; exact: 1 round")
    assert ordinary["rounds"] >= math.ceil(KEYS / 3_500), ordinary
    assert {r.key: r.value for r in consume_all(broker.bootstrap, ordinary_topic, 1)} == latest


def test_compact_exact_command_and_a_refused_plan(spark: SparkSession, broker_factory: Any) -> None:
    """The CLI end to end; a topic that is not compacted is refused with the broker's message and exit status 2."""
    broker: BrokerProcess = broker_factory(TINY_MAP)
    topic = unique_topic("exact-cli")
    create_topic(broker.bootstrap, topic, 2, COMPACTED)
    produce(broker.bootstrap, topic, [Message(b"k%05d" % (i % 5_000), b"v%d" % i) for i in range(15_000)])

    done = run_pipeline_command_in_process("compact", topic, "--exact", "--wait", "--bootstrap-servers",
                                           broker.bootstrap, "--admin-url", broker.admin_url)

    assert done.returncode == 0, done.stderr[-3000:]
    lines = sorted(line for line in done.stdout.splitlines() if "(exact)" in line)
    assert [line.split(":")[0] for line in lines] == [f"{topic}-0", f"{topic}-1"], done.stdout
    assert all("cleaned (exact), 1 round(s), removed" in line for line in lines), lines
    assert Counter(Counter(r.key for r in consume_all(broker.bootstrap, topic, 2)).values()) == Counter({1: 5_000})

    plain = unique_topic("not-compacted")
    create_topic(broker.bootstrap, plain, 1)
    produce(broker.bootstrap, plain, [Message(b"k", b"v")])
    refused = run_pipeline_command_in_process("compact", plain, "--exact", "--wait", "--bootstrap-servers",
                                              broker.bootstrap, "--admin-url", broker.admin_url)
    assert refused.returncode == 2 and "cleanup.policy" in refused.stderr, refused.stderr[-2000:]

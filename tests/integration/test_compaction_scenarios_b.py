"""Spec §5 scenarios S31, S32 (produce validation on compacted topics, with the record index), S48, S49
(retention of `compact,delete` vs `compact` topics, DeleteRecords) and S50 (`log.cleaner.enable=false`),
black-box against a real broker subprocess: Produce v9 / DeleteRecords through the raw wire client where the
exact response fields matter, confluent-kafka everywhere else."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka.protocol.admin.topics import DeleteRecordsRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import Record, build_batch
from minikafka.protocol.records.attributes import CompressionType
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import checkpoint_of, consume_all, scrape, wait_for
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(120)

BrokerFactory = Callable[..., BrokerProcess]
#: Spec §5 conventions: backoff 100 ms; the broker's own retention task is pushed out of the way (1 h) so
#: any deletion of a compacted log within seconds can only come from the cleaner threads.
FAST_CLEANER = {
    "log.cleaner.backoff.ms": "100",
    "minikafka.log.roll.check.interval.ms": "100",
    "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    "log.retention.check.interval.ms": "3600000",
}
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"}
HELD = {**COMPACTED, "min.cleanable.dirty.ratio": "1.0"}  # S4: ratio 1.0 never triggers; CLEAN_NOW releases it
CLEAN_NOW = {"min.cleanable.dirty.ratio": "0.01"}
NO_KEY_MESSAGE = "Compacted topic cannot accept message without key in topic partition"


# ------------------------------------------------------------------------------------------ helpers


def produce_timed(
    bootstrap: str,
    topic: str,
    rounds: list[list[tuple[bytes, bytes | None]]],
    first_timestamp_ms: int,
    step_ms: int = 1000,
) -> None:
    """Produce each round as its own flush; round i is stamped first + i * step (CreateTime), so with a
    small segment.ms every round after the first rolls the active segment before it is appended."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors: list[str] = []
    for i, pairs in enumerate(rounds):
        for key, value in pairs:
            producer.produce(
                topic,
                key=key,
                value=value,
                timestamp=first_timestamp_ms + i * step_ms,
                on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
            )
        assert producer.flush(30) == 0
    assert not errors, errors[:3]


def dup_rounds(keys: int, dups: int, prefix: bytes = b"key") -> list[list[tuple[bytes, bytes | None]]]:
    return [[(b"%s-%03d" % (prefix, k), b"v%d-%03d" % (d, k)) for k in range(keys)] for d in range(dups)]


def watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "scenarios-b", "enable.auto.commit": False}
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
        return int(low), int(high)
    finally:
        consumer.close()


def log_files(data_dir: Path, topic: str, partition: int = 0) -> list[Path]:
    return sorted((data_dir / f"{topic}-{partition}").glob("*.log"))


def log_bytes(data_dir: Path, topic: str, partition: int = 0) -> int:
    total = 0
    for path in log_files(data_dir, topic, partition):
        try:
            total += path.stat().st_size
        except FileNotFoundError:  # swapped out while we looked
            continue
    return total


def alter_topic(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in config.items()
    ]
    futures = admin.incremental_alter_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)]
    )
    for future in futures.values():
        future.result(timeout=30)


def wire_produce(client: WireClient, topic: str, batch: bytes) -> Any:
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest[9](
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])],
    )
    return client.request(request).responses[0].partition_responses[0]


def wire_delete_records(client: WireClient, topic: str, offset: int) -> tuple[int, int]:
    """(error_code, low_watermark) of DeleteRecords v2 for partition 0."""
    topic_cls = DeleteRecordsRequest.DeleteRecordsTopic
    request = DeleteRecordsRequest[2](
        topics=[
            topic_cls(
                name=topic, partitions=[topic_cls.DeleteRecordsPartition(partition_index=0, offset=offset)]
            )
        ],
        timeout_ms=10_000,
    )
    result = client.request(request).topics[0].partitions[0]
    return int(result.error_code), int(result.low_watermark)


def batch_of(pairs: list[tuple[bytes | None, bytes | None]], codec: CompressionType) -> bytes:
    now_ms = int(time.time() * 1000)
    return build_batch(
        [Record(offset=i, timestamp=now_ms, key=key, value=value) for i, (key, value) in enumerate(pairs)],
        base_offset=0,
        compression=codec,
    )


def no_key_meter(broker: BrokerProcess) -> float | None:
    """Kafka's BrokerTopicMetrics NoKeyCompactedTopicRecordsPerSec under any Prometheus spelling."""
    for (name, _labels), value in scrape(broker).items():
        if "nokeycompactedtopicrecords" in name.replace("_", "").lower() and not name.endswith("_created"):
            return value
    return None


# ------------------------------------------------------------------------------------------ F. keys


def _s31_rejection(broker: BrokerProcess, topic: str) -> Any:
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    with WireClient(broker.bootstrap) as client:
        accepted = wire_produce(client, topic, batch_of([(b"k", b"v")], CompressionType.NONE))
        assert accepted.error_code == 0 and accepted.base_offset == 0
        return wire_produce(client, topic, batch_of([(None, b"no key")], CompressionType.NONE))


def test_S31_unkeyed_produce_to_compacted_topic_is_rejected_with_record_error(broker: BrokerProcess) -> None:
    topic = "s31"
    response = _s31_rejection(broker, topic)
    assert response.error_code == ErrorCode.INVALID_RECORD == 87
    assert response.base_offset == -1
    assert response.log_append_time_ms == -1
    assert [e.batch_index for e in response.record_errors] == [0]
    assert response.record_errors[0].batch_index_error_message.startswith(f"{NO_KEY_MESSAGE} {topic}-0")
    assert watermarks(broker.bootstrap, topic) == (0, 1), "the rejected batch was appended"


def test_S31_rejection_reports_log_start_offset_and_kafka_summary_error_message(
    broker: BrokerProcess,
) -> None:
    response = _s31_rejection(broker, "s31fields")
    assert response.error_code == ErrorCode.INVALID_RECORD
    assert response.error_message is not None and response.error_message.startswith(
        "One or more records have been rejected due to 1 record errors in total"
    ), response.error_message
    assert response.log_start_offset == 0


def test_S31_no_key_compacted_topic_records_meter_counts_each_rejected_record(broker: BrokerProcess) -> None:
    topic = "s31meter"
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    before = no_key_meter(broker) or 0.0
    with WireClient(broker.bootstrap) as client:
        response = wire_produce(
            client, topic, batch_of([(None, b"a"), (b"k", b"b"), (None, b"c")], CompressionType.NONE)
        )
    assert response.error_code == ErrorCode.INVALID_RECORD
    after = no_key_meter(broker)
    assert after is not None, "no NoKeyCompactedTopicRecordsPerSec metric on /metrics"
    assert after - before == 2  # marked once per offending record


@pytest.mark.parametrize(
    ("codec", "pairs", "bad_index"),
    [
        (CompressionType.GZIP, [(b"k", b"v"), (None, b"no key")], 1),
        (CompressionType.NONE, [(None, b"no key"), (b"k", b"v")], 0),
    ],
    ids=["gzip-keyed-then-unkeyed", "none-unkeyed-then-keyed"],
)
def test_S32_mixed_batch_rejected_whole_with_the_record_index(
    broker: BrokerProcess, codec: CompressionType, pairs: list[tuple[bytes | None, bytes]], bad_index: int
) -> None:
    topic = "s32"
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    with WireClient(broker.bootstrap) as client:
        response = wire_produce(client, topic, batch_of(list(pairs), codec))
        assert response.error_code == ErrorCode.INVALID_RECORD
        assert response.base_offset == -1
        assert [e.batch_index for e in response.record_errors] == [bad_index]
        assert response.record_errors[0].batch_index_error_message.startswith(f"{NO_KEY_MESSAGE} {topic}-0")
        assert watermarks(broker.bootstrap, topic) == (0, 0), "part of the rejected batch was appended"
        # An empty key is a key and a tombstone is fine: the same codec with every record keyed is accepted.
        fixed = wire_produce(
            client,
            topic,
            batch_of([(k if k is not None else b"", v) for k, v in pairs] + [(b"gone", None)], codec),
        )
        assert fixed.error_code == 0 and fixed.base_offset == 0 and not fixed.record_errors
    assert watermarks(broker.bootstrap, topic) == (0, 3)


# ------------------------------------------------------------------------------------------ I. retention


def test_S48_compact_delete_retention_runs_on_cleaner_threads(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic = "s48"
    create_topic(
        broker.bootstrap,
        topic,
        1,
        {**COMPACTED, "cleanup.policy": "compact,delete", "retention.ms": "3600000"},
    )
    old_ms = int(time.time() * 1000) - 200_000  # older than the retention.ms we switch to below
    produce_timed(broker.bootstrap, topic, dup_rounds(100, 3), old_ms)
    start_size = log_bytes(broker.data_dir, topic)
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == 300, 30, "compaction of all 300 records")
    assert log_bytes(broker.data_dir, topic) < start_size, "log should have been compacted"
    assert watermarks(broker.bootstrap, topic) == (0, 300)
    assert len(consume_all(broker.bootstrap, topic)) == 100

    # Every closed segment is now older than retention.ms: the cleaner's retention pass (not the 1 h
    # retention task) must move the log start offset to the log end within a few backoffs.
    alter_topic(broker.bootstrap, topic, {"retention.ms": "100000"})
    took_s = wait_for(
        lambda: watermarks(broker.bootstrap, topic)[0] == 300,
        20,
        "retention of the expired compacted segments",
    )
    assert took_s < 10, f"retention took {took_s:.1f}s"
    wait_for(lambda: len(log_files(broker.data_dir, topic)) == 1, 10, "one segment left")
    assert "s48-0" in broker.read_log() and "Deleting segment" in broker.read_log()

    # A fresh round on new data compacts normally.
    produce_timed(broker.bootstrap, topic, dup_rounds(20, 3, b"new"), int(time.time() * 1000))
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == 360, 30, "compaction of the new records")
    records = consume_all(broker.bootstrap, topic)
    assert [(offset, key, value) for offset, key, value in records] == [
        (340 + k, b"new-%03d" % k, b"v2-%03d" % k) for k in range(20)
    ]
    assert watermarks(broker.bootstrap, topic) == (300, 360)


def test_S49_compact_only_ignores_time_and_size_retention_and_refuses_delete_records(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(FAST_CLEANER)
    topic = "s49"
    create_topic(broker.bootstrap, topic, 1, {**COMPACTED, "retention.ms": "100000", "retention.bytes": "1"})
    produce_timed(broker.bootstrap, topic, dup_rounds(100, 3), int(time.time() * 1000) - 200_000)
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == 300, 30, "compaction of all 300 records")
    # Each cleaner loop iteration runs retention after cleaning; give it many iterations (20 backoffs).
    wait_for(
        lambda: scrape(broker)[("kafka_log_logcleanermanager_time_since_last_run_ms", ())] < 1000,
        10,
        "a recent cleaner run",
    )
    time.sleep(2.0)
    assert watermarks(broker.bootstrap, topic) == (0, 300), "a compact-only topic was deleted by age or size"
    records = consume_all(broker.bootstrap, topic)
    assert [(key, value) for _, key, value in records] == [
        (b"key-%03d" % k, b"v2-%03d" % k) for k in range(100)
    ]
    with WireClient(broker.bootstrap) as client:
        error_code, low_watermark = wire_delete_records(client, topic, 150)
    assert error_code == ErrorCode.POLICY_VIOLATION == 44
    assert low_watermark == -1
    assert watermarks(broker.bootstrap, topic) == (0, 300)


def test_S50_cleaner_disabled_no_compaction_and_no_retention_of_compacted_topics(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(
        {**FAST_CLEANER, "log.cleaner.enable": "false", "log.retention.check.interval.ms": "200"}
    )
    old_ms = int(time.time() * 1000) - 200_000
    expiring = {"retention.ms": "100000", "segment.ms": "100"}
    create_topic(
        broker.bootstrap,
        "s50-compact-delete",
        1,
        {**COMPACTED, **expiring, "cleanup.policy": "compact,delete"},
    )
    create_topic(broker.bootstrap, "s50-compact", 1, COMPACTED)
    create_topic(broker.bootstrap, "s50-delete", 1, {**expiring, "cleanup.policy": "delete"})
    for topic in ("s50-compact-delete", "s50-compact", "s50-delete"):
        produce_timed(broker.bootstrap, topic, dup_rounds(100, 3), old_ms)
    # The retention task does run (every 200 ms): the delete topic loses every expired segment ...
    wait_for(
        lambda: watermarks(broker.bootstrap, "s50-delete")[0] == 300, 20, "retention of the delete topic"
    )
    # ... and has had several more chances at the compacted ones, which it must skip (spec §2.12).
    time.sleep(1.5)
    assert watermarks(broker.bootstrap, "s50-compact-delete") == (0, 300), "compact,delete topic was deleted"
    assert len(log_files(broker.data_dir, "s50-compact-delete")) >= 3
    records = consume_all(broker.bootstrap, "s50-compact")
    assert len(records) == 300, "duplicates of the compact topic were removed with the cleaner disabled"
    assert checkpoint_of(broker.data_dir, "s50-compact") is None
    assert checkpoint_of(broker.data_dir, "s50-compact-delete") is None
    assert "cleaned log" not in broker.read_log()

"""Apache Kafka 4.3.1's own `__share_group_state` records, written while its console share consumer (the Java
KafkaShareConsumer) accepts, rejects or releases records, decode with minikafka's codec, encode back to the same
bytes, and replay (`ShareCoordinatorState`) to the state the consumers left; a SharePartition loaded from that state
delivers again exactly what Kafka would. Its group coordinator's ShareGroupStatePartitionMetadata records (type 15 in
`__consumer_offsets`) replay into minikafka's share groups and encode back to the same bytes."""

from __future__ import annotations

import subprocess
import uuid
from typing import Any

import pytest

from minikafka.broker.share.share_coordinator_state import ShareCoordinatorState, load_share_partition
from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_state_records import decode_key, decode_value, encode_key, encode_value
from minikafka.broker.share.share_types import FetchedBatch, RecordState
from tests.integration.client_drivers import create_topic
from tests.kafka_jars import find_main_class, java_command

pytestmark = pytest.mark.interop

CONFIG_COMMAND = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")
SHARE_CONSUMER = ("org.apache.kafka.tools.consumer.ConsoleShareConsumer",)
RECORDS = 10


def _tool(kafka: Any, main: tuple[str, ...], args: list[str], timeout_s: float = 90) -> str:
    command = java_command(kafka.lib_dir, find_main_class(kafka.lib_dir, *main), args, heap="256m")
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _share_consume(kafka: Any, topic: str, group: str, max_messages: int, *flags: str) -> list[str]:
    _tool(kafka, CONFIG_COMMAND, ["--bootstrap-server", kafka.bootstrap, "--entity-type", "groups", "--entity-name",
                                  group, "--alter", "--add-config", "share.auto.offset.reset=earliest"])
    out = _tool(kafka, SHARE_CONSUMER, ["--bootstrap-server", kafka.bootstrap, "--topic", topic, "--group", group,
                                        "--max-messages", str(max_messages), "--timeout-ms", "30000", *flags])
    return out.split()


def _state_records(kafka: Any, topic: str = "__share_group_state") -> list[tuple[bytes, bytes | None]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        partitions = sorted(metadata.topics[topic].partitions)
        assert partitions
        # from each log start: Kafka's share coordinator deletes the records before a partition's latest snapshot
        # (share.coordinator.state.topic.prune.interval.ms), so offset 0 is gone on a broker up for a while
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records: list[tuple[bytes, bytes | None]] = []
        at_end: set[int] = set()
        while len(at_end) < len(partitions):
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {topic}"
            if message.error():
                assert message.error().code() == -191, message.error()  # _PARTITION_EOF
                at_end.add(message.partition())
                continue
            records.append((message.key(), message.value()))
        return records
    finally:
        consumer.close()


def test_kafkas_share_group_state_records_decode_and_replay(apache_kafka: Any) -> None:
    from confluent_kafka import Producer

    topic = f"share-layout-{uuid.uuid4().hex[:8]}"
    create_topic(apache_kafka.bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0

    accepted, rejected, released = (f"{topic}-{name}" for name in ("accept", "reject", "release"))
    assert _share_consume(apache_kafka, topic, accepted, RECORDS) == [f"v{i}" for i in range(RECORDS)]
    assert len(_share_consume(apache_kafka, topic, rejected, RECORDS, "--reject")) == RECORDS
    assert _share_consume(apache_kafka, topic, released, 1, "--release") == ["v0"]

    records = _state_records(apache_kafka)
    state = ShareCoordinatorState()
    groups = set()
    for key_bytes, value_bytes in records:
        key = decode_key(key_bytes)
        assert encode_key(key) == key_bytes
        value = None if value_bytes is None else decode_value(key.record_type, value_bytes)
        if value is not None:
            assert encode_value(value) == value_bytes
        state.replay(key, value)
        groups.add(key.group_id)
    assert {accepted, rejected, released} <= groups

    def partition_state(group: str) -> Any:
        (found,) = [k for k in state.share_partitions() if k[0] == group]
        return state.state(*found)

    # Kafka persists the acknowledgements (start offset still 0, 0-9 ACKNOWLEDGED or ARCHIVED); loaded, the share
    # partition starts past them and has nothing to deliver again.
    for group, terminal in ((accepted, RecordState.ACKNOWLEDGED), (rejected, RecordState.ARCHIVED)):
        offset = partition_state(group)
        covered = {o for b in offset.state_batches if b.delivery_state == terminal
                   for o in range(b.first_offset, b.last_offset + 1)}
        assert set(range(offset.start_offset, RECORDS)) <= covered, offset
        loaded = SharePartition(group, b"\0" * 16, 0, clock_ms=lambda: 0)
        load_share_partition(loaded, offset, resolved_start_offset=0)
        assert (loaded.start_offset, loaded.next_fetch_offset()) == (RECORDS, RECORDS)

    # Released records are AVAILABLE again at the start offset, with the delivery counted.
    offset = partition_state(released)
    assert offset.start_offset == 0
    first = offset.state_batches[0]
    assert (first.first_offset, first.delivery_state) == (0, int(RecordState.AVAILABLE))
    assert first.delivery_count >= 1
    partition = SharePartition(released, b"\0" * 16, 0, clock_ms=lambda: 0)
    load_share_partition(partition, offset, resolved_start_offset=0)
    result = partition.acquire("m", partition.next_fetch_offset(), [FetchedBatch(0, RECORDS - 1)],
                               max_fetch_records=RECORDS, batch_size=RECORDS)
    assert result.acquired_records[0].first_offset == 0
    assert result.acquired_records[0].delivery_count == first.delivery_count + 1

    # Kafka's group coordinator wrote each group's ShareGroupStatePartitionMetadata (type 15 in __consumer_offsets)
    # as initializing, then initialized: minikafka replays those bytes and writes the same bytes for that state
    from minikafka.broker.groups.share_group import ShareGroup
    from minikafka.broker.groups.share_group_records import (
        STATE_PARTITION_METADATA,
        replay,
        state_partition_metadata_record,
    )

    metadata_records = [(k, v) for k, v in _state_records(apache_kafka, "__consumer_offsets")
                        if k is not None and k[:2] == b"\x00\x0f"]
    share_groups: dict[str, ShareGroup] = {}
    history = []
    for key_bytes, value_bytes in metadata_records:
        replay(share_groups, key_bytes, value_bytes)
        if value_bytes is None:
            continue  # the tombstone of a group another test deleted on the same Kafka
        group = share_groups[STATE_PARTITION_METADATA.decode_key(key_bytes).group_id]
        metadata = group.state_partitions
        assert metadata is not None
        ours = state_partition_metadata_record(group.group_id, metadata)
        if max(len(metadata.initializing), len(metadata.initialized), len(metadata.deleting)) <= 1:
            assert ours == (key_bytes, value_bytes)
        else:  # Kafka lists several topics in its HashMap's order, minikafka by topic id: the same state
            again: dict[str, ShareGroup] = {}
            replay(again, *ours)
            assert again[group.group_id].state_partitions == metadata
        history.append((group.group_id, {n: sorted(p) for n, p in group.state_partitions.initializing.values()},
                        {n: sorted(p) for n, p in group.state_partitions.initialized.values()}))
    for group_id in (accepted, rejected, released):
        assert [(initializing, initialized) for g, initializing, initialized in history if g == group_id] == [
            ({topic: [0]}, {}), ({}, {topic: [0]})]

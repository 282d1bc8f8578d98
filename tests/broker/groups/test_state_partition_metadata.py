"""Kafka 4.3.1's ShareGroupStatePartitionMetadata record (type 15 in `__consumer_offsets`): read from the bytes
Kafka's own serde wrote (tests/protocol/coordinator_vectors), written in its layout, replayed into the group, and
the topic moves Kafka's GroupMetadataManager makes (initializing -> initialized, initialized -> deleting ->
dropped)."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from minikafka.broker.groups import state_partition_metadata as spm
from minikafka.broker.groups.share_group import ShareGroup, StatePartitionMetadata
from minikafka.broker.groups.share_group_records import (
    GROUP_METADATA,
    STATE_PARTITION_METADATA,
    group_tombstones,
    replay,
    state_partition_metadata_record,
)

VECTORS = Path(__file__).parents[2] / "protocol" / "coordinator_vectors" / "vectors.json"
FOO, BAR, BAZ = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)


def kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def kafka_cases() -> list[dict[str, Any]]:
    return [c for c in json.loads(VECTORS.read_text()) if c["name"] == "ShareGroupStatePartitionMetadata"]


def test_the_schema_is_kafkas_type_15_with_its_field_order() -> None:
    assert STATE_PARTITION_METADATA.record_type == 15
    assert [f.name for f in STATE_PARTITION_METADATA.key_fields] == ["group_id"]
    assert [f.name for f in STATE_PARTITION_METADATA.value_fields] == [
        "initializing_topics", "initialized_topics", "deleting_topics"]
    assert len(kafka_cases()) == 2


@pytest.mark.parametrize("case", kafka_cases(), ids=lambda c: f"variant{c['variant']}")
def test_replays_kafkas_bytes_and_writes_them_back(case: dict[str, Any]) -> None:
    value = case["value"]

    def topics(entries: list[dict[str, Any]]) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        return {kafka_uuid(t["topicId"]): (t["topicName"], frozenset(t["partitions"])) for t in entries}

    expected = StatePartitionMetadata(
        initializing=topics(value["initializingTopics"]),
        initialized=topics(value["initializedTopics"]),
        deleting={kafka_uuid(t["topicId"]): t["topicName"] for t in value["deletingTopics"]},
    )
    groups: dict[str, ShareGroup] = {}
    replay(groups, bytes.fromhex(case["kafka_key_hex"]), bytes.fromhex(case["kafka_value_hex"]))
    group_id = case["key"]["groupId"]
    assert groups[group_id].state_partitions == expected
    key, written = state_partition_metadata_record(group_id, expected)
    assert key == bytes.fromhex(case["kafka_key_hex"])
    # Kafka lists the topics in HashMap order; minikafka in topic id order, partitions ascending: the same
    # fields, byte for byte once Kafka's lists are put in that order
    canonical = STATE_PARTITION_METADATA.decode_value(bytes.fromhex(case["kafka_value_hex"]))
    for name in ("initializing_topics", "initialized_topics", "deleting_topics"):
        entries = sorted(getattr(canonical, name), key=lambda t: t.topic_id)
        for entry in entries:
            if hasattr(entry, "partitions"):
                entry.partitions = sorted(entry.partitions)
        setattr(canonical, name, entries)
    assert written == STATE_PARTITION_METADATA.encode_value(
        initializing_topics=canonical.initializing_topics, initialized_topics=canonical.initialized_topics,
        deleting_topics=canonical.deleting_topics)
    if not value["initializingTopics"] and not value["initializedTopics"] and not value["deletingTopics"]:
        assert written == bytes.fromhex(case["kafka_value_hex"])


def test_a_tombstone_clears_the_metadata_and_does_not_bring_back_a_deleted_group() -> None:
    groups: dict[str, ShareGroup] = {}
    metadata = StatePartitionMetadata(initialized={FOO: ("foo", frozenset({0, 1}))})
    replay(groups, *state_partition_metadata_record("g", metadata))
    assert groups["g"].state_partitions == metadata and groups["g"].state_partitions.is_initialized(FOO, 1)
    for key, value in group_tombstones(groups["g"]):  # Kafka's order: type 15's tombstone before the epoch's
        replay(groups, key, value)
    assert "g" not in groups
    replay(groups, STATE_PARTITION_METADATA.encode_key(group_id="g"), None)
    assert "g" not in groups
    kinds = [int.from_bytes(k[:2], "big") for k, _ in group_tombstones(ShareGroup("g"))]
    assert kinds == [12, 15, 11] and GROUP_METADATA.record_type == 11


def test_a_subscription_initialises_what_is_missing_and_keeps_it_when_members_leave() -> None:
    topics = {"foo": (FOO, 3), "bar": (BAR, 1)}
    change = spm.to_initialize(spm.EMPTY, ["foo", "bar", "gone"], topics)
    assert change == {FOO: ("foo", frozenset({0, 1, 2})), BAR: ("bar", frozenset({0}))}
    initializing = spm.begin_initializing(spm.EMPTY, change)
    assert initializing == StatePartitionMetadata(initializing=change)
    assert not initializing.is_initialized(FOO, 0)
    initialized = spm.finish_initializing(initializing, {FOO: change[FOO]})
    initialized = spm.uninitialize(initialized, {BAR: change[BAR]})  # its state could not be written
    assert initialized == StatePartitionMetadata(initialized={FOO: ("foo", frozenset({0, 1, 2}))})
    # nothing left to do for foo; partitions added to it later are initialised on their own
    assert spm.to_initialize(initialized, ["foo"], topics) == {}
    assert spm.to_initialize(initialized, ["foo"], {"foo": (FOO, 5)}) == {FOO: ("foo", frozenset({3, 4}))}
    assert spm.to_initialize(initialized, [], topics) == {}  # no member subscribes: still initialised


def test_delete_offsets_and_delete_group_move_topics_to_deleting_then_drop_them() -> None:
    metadata = StatePartitionMetadata(
        initializing={BAZ: ("baz", frozenset({0}))},
        initialized={FOO: ("foo", frozenset({0, 1})), BAR: ("bar", frozenset({0}))},
    )
    deleting = spm.delete_offsets(metadata, [FOO, uuid.UUID(int=9)])
    assert deleting == StatePartitionMetadata(initializing=metadata.initializing,
                                              initialized={BAR: ("bar", frozenset({0}))}, deleting={FOO: "foo"})
    assert spm.finish_deleting(deleting, [FOO]).deleting == {}
    # a topic initialised again while still deleting leaves deleting
    assert spm.begin_initializing(deleting, {FOO: ("foo", frozenset({0}))}).deleting == {}
    assert spm.delete_all(deleting) == StatePartitionMetadata(deleting={FOO: "foo", BAR: "bar", BAZ: "baz"})

"""The `__share_group_state` record codec reads and writes exactly the bytes Apache Kafka 4.3.1's
`ShareCoordinatorRecordSerde` produces (`state_vectors/vectors.json`, made by `state_vectors/cases.py` with
Kafka's own serde), and refuses malformed records with ValueError."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest

from minikafka.broker.share.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from minikafka.broker.share.share_types import PersisterStateBatch
from tests.broker.share.state_vectors.cases import CASES, VECTORS

VECTOR_CASES = json.loads(VECTORS.read_text())


def _topic(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _batches(value: dict[str, Any]) -> tuple[PersisterStateBatch, ...]:
    return tuple(
        PersisterStateBatch(b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"])
        for b in value["stateBatches"]
    )


def _expected(case: dict[str, Any]) -> tuple[ShareStateKey, ShareSnapshotValue | ShareUpdateValue | None]:
    key_json, value = case["key"], case.get("value")
    record_type = SHARE_UPDATE if case["type"] == "update" else SHARE_SNAPSHOT
    key = ShareStateKey(record_type, key_json["groupId"], _topic(key_json["topicId"]), key_json["partition"])
    if case["type"] == "tombstone":
        return key, None
    if case["type"] == "snapshot":
        return key, ShareSnapshotValue(
            value["snapshotEpoch"],
            value["stateEpoch"],
            value["leaderEpoch"],
            value["startOffset"],
            value["createTimestamp"],
            value["writeTimestamp"],
            _batches(value),
            value["deliveryCompleteCount"],
        )
    return key, ShareUpdateValue(
        value["snapshotEpoch"],
        value["leaderEpoch"],
        value["startOffset"],
        _batches(value),
        value["deliveryCompleteCount"],
    )


def test_vectors_are_the_cases() -> None:
    assert [{k: v for k, v in c.items() if not k.startswith("kafka_")} for c in VECTOR_CASES] == CASES


@pytest.mark.parametrize("case", VECTOR_CASES, ids=lambda c: f"{c['type']}-{c['key']['groupId']}")
def test_reads_and_writes_kafkas_bytes(case: dict[str, Any]) -> None:
    key, value = _expected(case)
    kafka_key = bytes.fromhex(case["kafka_key_hex"])
    assert decode_key(kafka_key) == key
    assert encode_key(key) == kafka_key
    if value is None:
        assert case["kafka_value_hex"] is None
        return
    kafka_value = bytes.fromhex(case["kafka_value_hex"])
    assert decode_value(key.record_type, kafka_value) == value
    assert encode_value(value) == kafka_value


def test_an_unknown_tagged_field_is_skipped() -> None:
    value = ShareUpdateValue(1, 2, 3, (PersisterStateBatch(3, 4, 2, 1),), 9)
    data = encode_value(value)
    # replace the tagged-field section (1 field: tag 0) with two fields: tag 0 and an unknown tag 5 of 2 bytes
    extended = data[:-7] + b"\x02" + data[-6:] + b"\x05\x02\xab\xcd"
    assert decode_value(SHARE_UPDATE, extended) == value


@pytest.mark.parametrize(
    ("what", "data"),
    [
        ("empty", b""),
        ("unknown record type", b"\x00\x07" + encode_key(ShareStateKey(0, "g", uuid.UUID(int=1), 0))[2:]),
        ("truncated", encode_key(ShareStateKey(0, "group", uuid.UUID(int=1), 0))[:-1]),
        ("trailing bytes", encode_key(ShareStateKey(1, "group", uuid.UUID(int=1), 0)) + b"\x00"),
        ("bad utf-8", b"\x00\x00\x00\x02\xff\xfe" + bytes(16) + b"\x00\x00\x00\x00"),
    ],
)
def test_malformed_keys_are_refused(what: str, data: bytes) -> None:
    with pytest.raises(ValueError, match="malformed __share_group_state key"):
        decode_key(data)


SNAPSHOT = encode_value(ShareSnapshotValue(0, 0, 0, 5, 1, 2, (PersisterStateBatch(5, 9, 2, 1),)))


@pytest.mark.parametrize(
    ("what", "record_type", "data"),
    [
        ("truncated", SHARE_SNAPSHOT, SNAPSHOT[:-3]),
        ("trailing bytes", SHARE_SNAPSHOT, SNAPSHOT + b"\x00"),
        ("version 1", SHARE_SNAPSHOT, b"\x00\x01" + SNAPSHOT[2:]),
        ("unknown record type", 3, SNAPSHOT),
        ("snapshot read as update", SHARE_UPDATE, SNAPSHOT),
    ],
)
def test_malformed_values_are_refused(what: str, record_type: int, data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_value(record_type, data)

"""`CoordinatorRecordSchema` reads and writes exactly the bytes Apache Kafka 4.3.1's GroupCoordinatorRecordSerde and
ShareCoordinatorRecordSerde produce for the share-group records of `__consumer_offsets` and the records of
`__share_group_state` (`coordinator_vectors/vectors.json`, made by `coordinator_vectors/cases.py` with Kafka's
serdes): every field, tagged ones included, and both full and null/empty variants; malformed bytes are refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minikafka.broker.share.share_state_records import decode_value as decode_share_state_value
from minikafka.protocol.coordinator_record_schema import CoordinatorRecordSchema
from tests.protocol.coordinator_vectors.cases import RECORDS, VECTORS, all_cases
from tests.protocol.share_vectors.schema_values import assert_matches

CASES = json.loads(VECTORS.read_text())


def _fields(fields: Any, decoded: Any) -> dict[str, Any]:
    return {
        f.name: getattr(decoded, f.name) for f in fields if not f.tagged_field_q(0) or f.name in (decoded.tags or ())
    }


def test_vectors_are_the_cases() -> None:
    assert [{k: v for k, v in c.items() if not k.startswith("kafka_")} for c in CASES] == all_cases()
    assert {c["name"] for c in CASES} == set(RECORDS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['name']}-{c['variant']}")
def test_reads_and_writes_kafkas_bytes(case: dict[str, Any]) -> None:
    schema = CoordinatorRecordSchema(case["name"])
    key_bytes, value_bytes = bytes.fromhex(case["kafka_key_hex"]), bytes.fromhex(case["kafka_value_hex"])
    key = schema.decode_key(key_bytes)
    assert_matches(schema.key_fields, 0, case["key"], key)
    assert schema.encode_key(**_fields(schema.key_fields, key)) == key_bytes
    value = schema.decode_value(value_bytes)
    assert_matches(schema.value_fields, 0, case["value"], value)
    assert schema.encode_value(**{f.name: getattr(value, f.name) for f in schema.value_fields}) == value_bytes


@pytest.mark.parametrize("case", [c for c in CASES if c["package"] == "share"], ids=lambda c: c["name"])
def test_the_hand_written_share_state_codec_agrees(case: dict[str, Any]) -> None:
    record_type = 0 if case["name"] == "ShareSnapshot" else 1
    value = decode_share_state_value(record_type, bytes.fromhex(case["kafka_value_hex"]))
    assert value.snapshot_epoch == case["value"]["snapshotEpoch"]
    assert len(value.state_batches) == len(case["value"]["stateBatches"])


def test_malformed_records_are_refused() -> None:
    schema = CoordinatorRecordSchema("ShareGroupMemberMetadata")
    key = schema.encode_key(group_id="g", member_id="m")
    value = schema.encode_value(rack_id=None, client_id="c", client_host="h", subscribed_topic_names=["t"])
    with pytest.raises(ValueError, match="not a ShareGroupMetadata key"):
        CoordinatorRecordSchema("ShareGroupMetadata").decode_key(key)
    for bad in (key[:-1], key + b"\x00"):
        with pytest.raises(ValueError, match="malformed"):
            schema.decode_key(bad)
    for bad in (value[:-2], value + b"\x00", b"\x00"):
        with pytest.raises(ValueError, match="malformed"):
            schema.decode_value(bad)
    with pytest.raises(ValueError, match="version 1"):
        schema.decode_value(b"\x00\x01" + value[2:])

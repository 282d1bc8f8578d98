"""The share-group message classes (protocol/schemas, issue 23) read and write exactly Apache Kafka 4.3.1's bytes.

`share_vectors/vectors.json` holds, for every share-group request and response at every version Kafka 4.3.1
supports, field values and the bytes kafka-clients 4.3.1's own generated classes encode for them (see
`share_vectors/schema_values.py`). Each case is decoded with minikafka's class and compared field by field, then
encoded again and compared byte for byte. Two variants per version: every field set (tagged fields included,
two-element arrays) and nullable fields null with empty arrays."""

from __future__ import annotations

import json

import pytest

from minikafka.protocol.api_keys import SUPPORTED_VERSIONS
from tests.protocol.share_vectors.schema_values import (
    SHARE_MESSAGES,
    VECTORS,
    all_cases,
    assert_matches,
    message_classes,
)

CASES = json.loads(VECTORS.read_text())

#: (api key, validVersions) per message as kafka-clients 4.3.1 declares them.
KAFKA_4_3_1_VERSIONS = {
    "ShareGroupHeartbeat": (76, (1, 1)),
    "ShareGroupDescribe": (77, (1, 1)),
    "ShareFetch": (78, (1, 2)),
    "ShareAcknowledge": (79, (1, 2)),
    "InitializeShareGroupState": (83, (0, 0)),
    "ReadShareGroupState": (84, (0, 0)),
    "WriteShareGroupState": (85, (0, 1)),
    "DeleteShareGroupState": (86, (0, 0)),
    "ReadShareGroupStateSummary": (87, (0, 1)),
    "DescribeShareGroupOffsets": (90, (0, 1)),
    "AlterShareGroupOffsets": (91, (0, 0)),
    "DeleteShareGroupOffsets": (92, (0, 0)),
}


def _case_id(case: dict) -> str:
    return f"{case['message']}-v{case['version']}-{'full' if case['variant'] == 0 else 'nulls'}"


def _class(message: str):
    request, response = message_classes(message.removesuffix("Request").removesuffix("Response"))
    return request if message.endswith("Request") else response


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_decodes_kafkas_bytes_and_encodes_them_back(case: dict) -> None:
    cls = _class(case["message"])
    version = case["version"]
    kafka_bytes = bytes.fromhex(case["kafka_bytes_hex"])
    decoded = cls.decode(kafka_bytes, version=version)
    assert_matches(cls._struct._fields, version, case["data"], decoded)
    # Built anew the way a handler builds a response (a decoded message has no header slot to encode from).
    rebuilt = cls(
        version=version,
        **{f.name: getattr(decoded, f.name) for f in cls._struct._fields if f.for_version_q(version)},
    )
    assert bytes(rebuilt.encode(version=version)) == kafka_bytes


def test_vectors_cover_every_version_and_both_variants() -> None:
    covered = {(c["message"], c["version"], c["variant"]) for c in CASES}
    for name, (_, (low, high)) in KAFKA_4_3_1_VERSIONS.items():
        for suffix in ("Request", "Response"):
            for version in range(low, high + 1):
                assert {(name + suffix, version, 0), (name + suffix, version, 1)} <= covered
    # the stored values are what schema_values generates today (the vectors were not edited by hand)
    assert [{k: v for k, v in c.items() if k != "kafka_bytes_hex"} for c in CASES] == all_cases()


@pytest.mark.parametrize("name", SHARE_MESSAGES)
def test_api_keys_and_versions_are_kafka_4_3_1s(name: str) -> None:
    api_key, versions = KAFKA_4_3_1_VERSIONS[name]
    for cls in message_classes(name):
        assert api_key == cls.API_KEY
        assert cls.valid_versions == versions
        assert cls.flexible_version_q(versions[0])


def test_share_group_apis_are_not_advertised_yet() -> None:
    # Advertising an API a handler does not serve breaks clients that probe ApiVersions.
    advertised = {int(key) for key in SUPPORTED_VERSIONS}
    assert advertised.isdisjoint(key for key, _ in KAFKA_4_3_1_VERSIONS.values())


def test_a_truncated_message_is_refused() -> None:
    case = next(c for c in CASES if c["message"] == "ShareFetchResponse" and c["variant"] == 0)
    kafka_bytes = bytes.fromhex(case["kafka_bytes_hex"])
    cls = _class(case["message"])
    with pytest.raises(Exception):  # noqa: B017 - kafka-python raises assorted errors on short input
        cls.decode(kafka_bytes[: len(kafka_bytes) // 2], version=case["version"])

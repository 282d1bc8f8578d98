"""`__consumer_offsets` key/value layouts, byte for byte as Kafka writes them, and every readable version."""

from __future__ import annotations

import struct

import pytest

from minikafka.broker.groups import coordinator_partitioning as partitioning
from minikafka.broker.groups import coordinator_records as records


def test_offset_commit_key_v1_layout() -> None:
    key = records.OffsetCommitKey("g", "topic", 2)
    assert records.encode_offset_commit_key(key) == b"\x00\x01" + b"\x00\x01g" + b"\x00\x05topic" + b"\x00\x00\x00\x02"
    assert records.decode_key(records.encode_offset_commit_key(key)) == key
    v0 = b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x07"
    assert records.decode_key(v0) == records.OffsetCommitKey("g", "t", 7)


def test_group_metadata_key_v2_layout() -> None:
    assert records.encode_group_metadata_key(records.GroupMetadataKey("grp")) == b"\x00\x02\x00\x03grp"
    assert records.decode_key(b"\x00\x02\x00\x03grp") == records.GroupMetadataKey("grp")
    assert records.decode_key(b"\x00\x04\x00\x03grp") is None  # a KIP-848 record type: not ours


def test_offset_commit_value_v3_layout_and_older_versions() -> None:
    value = records.OffsetCommitValue(42, 7, "md", 1_700_000_000_000)
    expected = b"\x00\x03" + struct.pack(">qi", 42, 7) + b"\x00\x02md" + struct.pack(">q", 1_700_000_000_000)
    assert records.encode_offset_commit_value(value) == expected
    assert records.decode_offset_commit_value(expected) == value
    v1 = b"\x00\x01" + struct.pack(">q", 5) + b"\x00\x00" + struct.pack(">qq", 10, 99)
    assert records.decode_offset_commit_value(v1) == records.OffsetCommitValue(5, -1, "", 10, 99)
    v4 = b"\x00\x04" + struct.pack(">qi", 6, 1) + b"\x03md" + struct.pack(">q", 11) + b"\x00"
    assert records.decode_offset_commit_value(v4) == records.OffsetCommitValue(6, 1, "md", 11)


def test_group_metadata_value_v3_round_trip_and_v4_flexible() -> None:
    member = records.MemberMetadataValue("m-1", "i-1", "client", "/1.2.3.4", 300_000, 10_000, b"sub", b"asg")
    value = records.GroupMetadataValue("consumer", 3, "range", "m-1", 1234, (member,))
    encoded = records.encode_group_metadata_value(value)
    assert encoded.startswith(b"\x00\x03\x00\x08consumer\x00\x00\x00\x03\x00\x05range\x00\x03m-1")
    assert records.decode_group_metadata_value(encoded) == value
    flexible = (
        b"\x00\x04" + b"\x09consumer" + struct.pack(">i", 3) + b"\x06range" + b"\x04m-1" + struct.pack(">q", 1234)
        + b"\x02" + b"\x04m-1" + b"\x04i-1" + b"\x07client" + b"\x09/1.2.3.4" + struct.pack(">ii", 300_000, 10_000)
        + b"\x04sub" + b"\x04asg" + b"\x00" + b"\x00"
    )
    assert records.decode_group_metadata_value(flexible) == value
    with pytest.raises(ValueError):
        records.decode_group_metadata_value(encoded[:-2])


def test_partition_for_matches_java_hash_code() -> None:
    assert partitioning.java_string_hash("hello") == 99162322
    assert partitioning.java_string_hash("polygenelubricants") == -(2**31)
    assert partitioning.partition_for("polygenelubricants", 50) == 0  # MIN_VALUE & 0x7fffffff is 0
    # "my-group".hashCode() is -1906497762: (hash & 0x7fffffff) % 50 = 36, the partition every earlier minikafka
    # log dir holds it in (Kafka's Utils.abs would give 12; see partition_for)
    assert partitioning.java_string_hash("my-group") == -1906497762
    assert partitioning.partition_for("my-group", 50) == 36

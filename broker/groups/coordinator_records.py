"""The key and value layouts of `__consumer_offsets` records, byte-for-byte as Apache Kafka writes them.

Keys start with an int16 version that names the record type: 0/1 = OffsetCommitKey (group, topic,
partition), 2 = GroupMetadataKey (group). Values: OffsetCommitValue (written as v3: offset, leader epoch,
metadata, commit timestamp) and GroupMetadataValue (written as v3). Every version Kafka ever wrote (v0-v4,
v4 being flexible) is readable. A null value is a tombstone. Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields
from typing import Any

from minikafka.broker.groups.coordinator_record_reader import CoordinatorRecordReader

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_LATEST = 1 << 15


def _wire(kind: str, since: int = 0, until: int = _LATEST, absent: Any = None) -> dict[str, Any]:
    """A field's layout: `kind` names the `_Writer`/`_Reader` method; versions outside [since, until]
    do not carry the field, and a reader of such a version gets `absent`."""
    return {"kind": kind, "since": since, "until": until, "absent": absent}


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str = field(metadata=_wire("string"))
    topic: str = field(metadata=_wire("string"))
    partition: int = field(metadata=_wire("int32"))


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str = field(metadata=_wire("string"))


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int = field(metadata=_wire("int64"))
    leader_epoch: int = field(metadata=_wire("int32", since=3, absent=-1))
    metadata: str = field(metadata=_wire("string"))
    commit_timestamp_ms: int = field(metadata=_wire("int64"))
    expire_timestamp_ms: int = field(default=-1, metadata=_wire("int64", since=1, until=1, absent=-1))


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str = field(metadata=_wire("string"))
    group_instance_id: str | None = field(metadata=_wire("nullable_string", since=3))
    client_id: str = field(metadata=_wire("string"))
    client_host: str = field(metadata=_wire("string"))
    #: Before v1 there is none: the session timeout stands in (see `_read_member`).
    rebalance_timeout_ms: int = field(metadata=_wire("int32", since=1, absent=-1))
    session_timeout_ms: int = field(metadata=_wire("int32"))
    subscription: bytes = field(metadata=_wire("bytes_"))
    assignment: bytes = field(metadata=_wire("bytes_"))


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str = field(metadata=_wire("string"))
    generation: int = field(metadata=_wire("int32"))
    protocol: str | None = field(metadata=_wire("nullable_string"))
    leader: str | None = field(metadata=_wire("nullable_string"))
    current_state_timestamp_ms: int = field(metadata=_wire("int64", since=2, absent=-1))
    #: An array after the fields above; written and read by hand.
    members: tuple[MemberMetadataValue, ...] = ()


class _Writer:
    def __init__(self, version: int) -> None:
        self.out = bytearray()
        self.version = version
        self.int16(version)

    def int16(self, value: int) -> None:
        self.out += _INT16.pack(value)

    def int32(self, value: int) -> None:
        self.out += _INT32.pack(value)

    def int64(self, value: int) -> None:
        self.out += _INT64.pack(value)

    def string(self, value: str | None) -> None:
        if value is None:
            self.int16(-1)
            return
        data = value.encode()
        self.int16(len(data))
        self.out += data

    nullable_string = string

    def bytes_(self, value: bytes) -> None:
        self.int32(len(value))
        self.out += value

    def fields(self, value: Any) -> _Writer:
        """Every wire field of the dataclass `value` that this version carries, in declaration order."""
        for spec in fields(value):
            wire = spec.metadata
            if wire and wire["since"] <= self.version <= wire["until"]:
                getattr(self, wire["kind"])(getattr(value, spec.name))
        return self


class _Reader(CoordinatorRecordReader):
    """Reads one record; the leading int16 version decides the layout (v4 and later are flexible)."""

    def __init__(self, data: bytes, flexible_from: int = 4) -> None:
        super().__init__(data, flexible_from, "__consumer_offsets")

    def fields(self, cls: type) -> dict[str, Any]:
        """The wire fields of dataclass `cls` as this version lays them out, by name."""
        values: dict[str, Any] = {}
        for spec in fields(cls):
            wire = spec.metadata
            if wire:
                carried = wire["since"] <= self.version <= wire["until"]
                values[spec.name] = getattr(self, wire["kind"])() if carried else wire["absent"]
        return values


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    return bytes(_Writer(OFFSET_COMMIT_KEY_VERSION).fields(key).out)


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    return bytes(_Writer(GROUP_METADATA_KEY_VERSION).fields(key).out)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The typed key, or None for a record type the group coordinator does not own (e.g. KIP-848 records)."""
    reader = _Reader(data, flexible_from=_LATEST)
    if reader.version in (0, 1):
        return OffsetCommitKey(**reader.fields(OffsetCommitKey))
    if reader.version == 2:
        return GroupMetadataKey(**reader.fields(GroupMetadataKey))
    return None


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    return bytes(_Writer(OFFSET_COMMIT_VALUE_VERSION).fields(value).out)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    return OffsetCommitValue(**_Reader(data).fields(OffsetCommitValue))


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    writer = _Writer(GROUP_METADATA_VALUE_VERSION).fields(value)
    writer.int32(len(value.members))
    for member in value.members:
        writer.fields(member)
    return bytes(writer.out)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    reader = _Reader(data)
    header = reader.fields(GroupMetadataValue)
    members = tuple(_read_member(reader) for _index in range(max(reader.array_length(), 0)))
    reader.skip_tagged_fields()
    return GroupMetadataValue(**header, members=members)


def _read_member(reader: _Reader) -> MemberMetadataValue:
    values = reader.fields(MemberMetadataValue)
    if values["rebalance_timeout_ms"] < 0:
        values["rebalance_timeout_ms"] = values["session_timeout_ms"]
    reader.skip_tagged_fields()
    return MemberMetadataValue(**values)



"""The key and value layouts of `__consumer_offsets` records, byte-for-byte as Apache Kafka writes them.

Keys start with an int16 version that names the record type: 0/1 = OffsetCommitKey (group, topic,
partition), 2 = GroupMetadataKey (group). Values: OffsetCommitValue (written as v3: offset, leader epoch,
metadata, commit timestamp) and GroupMetadataValue (written as v3). Every version Kafka ever wrote (v0-v4,
v4 being flexible) is readable. A null value is a tombstone. Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadataValue, ...]


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

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

    def bytes_(self, value: bytes) -> None:
        self.int32(len(value))
        self.out += value


class _Reader:
    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data = memoryview(data)
        self.position = 0
        self.flexible = flexible

    def _take(self, size: int) -> memoryview:
        if size < 0 or self.position + size > len(self.data):
            raise ValueError("truncated __consumer_offsets record")
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return chunk

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self._take(8))[0])

    def uvarint(self) -> int:
        # Unsigned varint (compact lengths); protocol.records' decoder is zig-zag, so undo it.
        result = 0
        shift = 0
        while True:
            byte = self._take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def _length(self, wide: bool) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def nullable_string(self) -> str | None:
        length = self._length(False)
        return None if length < 0 else bytes(self._take(length)).decode()

    def string(self) -> str:
        return self.nullable_string() or ""

    def bytes_(self) -> bytes:
        length = self._length(True)
        return b"" if length < 0 else bytes(self._take(length))

    def array_length(self) -> int:
        return self._length(True)

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    writer = _Writer()
    writer.int16(OFFSET_COMMIT_KEY_VERSION)
    writer.string(key.group)
    writer.string(key.topic)
    writer.int32(key.partition)
    return bytes(writer.out)


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    writer = _Writer()
    writer.int16(GROUP_METADATA_KEY_VERSION)
    writer.string(key.group)
    return bytes(writer.out)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The typed key, or None for a record type the group coordinator does not own (e.g. KIP-848 records)."""
    reader = _Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    if version == 2:
        return GroupMetadataKey(reader.string())
    return None


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    writer = _Writer()
    writer.int16(OFFSET_COMMIT_VALUE_VERSION)
    writer.int64(value.offset)
    writer.int32(value.leader_epoch)
    writer.string(value.metadata)
    writer.int64(value.commit_timestamp_ms)
    return bytes(writer.out)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    version = _INT16.unpack_from(data)[0]
    reader = _Reader(data[2:], flexible=version >= 4)
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata = reader.string()
    commit_timestamp_ms = reader.int64()
    expire_timestamp_ms = reader.int64() if version == 1 else -1
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp_ms, expire_timestamp_ms)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    writer = _Writer()
    writer.int16(GROUP_METADATA_VALUE_VERSION)
    writer.string(value.protocol_type)
    writer.int32(value.generation)
    writer.string(value.protocol)
    writer.string(value.leader)
    writer.int64(value.current_state_timestamp_ms)
    writer.int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id)
        writer.string(member.group_instance_id)
        writer.string(member.client_id)
        writer.string(member.client_host)
        writer.int32(member.rebalance_timeout_ms)
        writer.int32(member.session_timeout_ms)
        writer.bytes_(member.subscription)
        writer.bytes_(member.assignment)
    return bytes(writer.out)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    version = _INT16.unpack_from(data)[0]
    reader = _Reader(data[2:], flexible=version >= 4)
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    current_state_timestamp_ms = reader.int64() if version >= 2 else -1
    members = []
    for _index in range(max(reader.array_length(), 0)):
        member_id = reader.string()
        group_instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout_ms = reader.int32() if version >= 1 else -1
        session_timeout_ms = reader.int32()
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        subscription = reader.bytes_()
        assignment = reader.bytes_()
        reader.skip_tagged_fields()
        members.append(
            MemberMetadataValue(
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                subscription,
                assignment,
            )
        )
    reader.skip_tagged_fields()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, current_state_timestamp_ms, tuple(members))


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's group -> __consumer_offsets partition: Utils.abs(groupId.hashCode) % partitions."""
    return (java_string_hash(group_id) & 0x7FFFFFFF) % num_partitions

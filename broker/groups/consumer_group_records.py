"""The KIP-848 consumer group records of `__consumer_offsets`, byte-for-byte in Apache Kafka 4.x's layouts
(`group-coordinator/src/main/resources/common/message/ConsumerGroup*.json`), and their replay.

A key is an int16 record type then the key fields (non-flexible): 3 ConsumerGroupMetadata (group),
4 ConsumerGroupPartitionMetadata (group), 5 ConsumerGroupMemberMetadata (group, member),
6 ConsumerGroupTargetAssignmentMetadata (group), 7 ConsumerGroupTargetAssignmentMember (group, member),
8 ConsumerGroupCurrentMemberAssignment (group, member). A value is an int16 version (0) then the flexible
fields; a null value is a tombstone. `replay` applies one record to the groups it is given: loading and
every live write go through it, so the cache is always what the log says. Pure functions apart from
`replay`'s argument; thread-safe.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.broker.groups.assignors import TopicInfo
from minikafka.broker.groups.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from minikafka.broker.groups.coordinator_record_reader import CoordinatorRecordReader

__all__ = [
    "CONSUMER_GROUP_RECORD_TYPES",
    "RecordKV",
    "current_assignment_record",
    "group_epoch_record",
    "group_tombstones",
    "member_metadata_record",
    "member_tombstones",
    "partition_metadata_record",
    "replay",
    "target_assignment_epoch_record",
    "target_member_record",
]

METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = range(3, 9)
CONSUMER_GROUP_RECORD_TYPES = frozenset(range(3, 9))
_VALUE_VERSION = 0
_CLASSIC_MEMBER_METADATA_TAG = 0

RecordKV = tuple[bytes, bytes | None]
Partitions = Mapping[uuid.UUID, frozenset[int]]


class _Writer:
    """Kafka's flexible encoding (compact lengths as unsigned varints, a tagged-field count per struct)."""

    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, value: int) -> _Writer:
        self.out += struct.pack(">b", value)
        return self

    def int16(self, value: int) -> _Writer:
        self.out += struct.pack(">h", value)
        return self

    def int32(self, value: int) -> _Writer:
        self.out += struct.pack(">i", value)
        return self

    def uvarint(self, value: int) -> _Writer:
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)
        return self

    def string(self, value: str | None) -> _Writer:
        if value is None:
            return self.uvarint(0)
        data = value.encode()
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def topic_id(self, value: uuid.UUID) -> _Writer:
        self.out += value.bytes
        return self

    def bytes_(self, value: bytes) -> _Writer:
        self.uvarint(len(value) + 1)
        self.out += value
        return self

    def no_tags(self) -> _Writer:
        return self.uvarint(0)

    def tagged(self, tag: int, payload: bytes) -> _Writer:
        """A tagged-field section holding one field."""
        self.uvarint(1).uvarint(tag).uvarint(len(payload))
        self.out += payload
        return self

    def partitions(self, value: Partitions) -> _Writer:
        """[]TopicPartitions: (TopicId, []int32 Partitions, tagged fields), topics in id order."""
        self.uvarint(len(value) + 1)
        for topic_id in sorted(value, key=str):
            self.topic_id(topic_id).uvarint(len(value[topic_id]) + 1)
            for index in sorted(value[topic_id]):
                self.int32(index)
            self.no_tags()
        return self


def _key(record_type: int, *fields: str) -> bytes:
    out = bytearray(struct.pack(">h", record_type))
    for value in fields:
        data = value.encode()
        out += struct.pack(">h", len(data)) + data
    return bytes(out)


def _value() -> _Writer:
    return _Writer().int16(_VALUE_VERSION)


def group_epoch_record(group_id: str, epoch: int) -> RecordKV:
    return _key(METADATA, group_id), bytes(_value().int32(epoch).no_tags().out)


def partition_metadata_record(group_id: str, topics: Mapping[str, TopicInfo]) -> RecordKV:
    writer = _value().uvarint(len(topics) + 1)
    for name in sorted(topics):
        info = topics[name]
        writer.topic_id(info.topic_id).string(info.name).int32(info.num_partitions).uvarint(1).no_tags()
    return _key(PARTITION_METADATA, group_id), bytes(writer.no_tags().out)


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> RecordKV:
    writer = _value().string(member.instance_id).string(member.rack_id).string(member.client_id)
    writer.string(member.client_host).uvarint(len(member.subscribed_topic_names) + 1)
    for name in member.subscribed_topic_names:
        writer.string(name)
    writer.string(member.subscribed_topic_regex).int32(member.rebalance_timeout_ms).string(member.server_assignor)
    # Tagged field 0, ClassicMemberMetadata (SessionTimeoutMs, []ClassicProtocol(Name, Metadata)), a nullable
    # struct: Kafka writes it even when null, as a presence byte 0; present, the byte 1 then the struct.
    classic = _Writer().uvarint(0 if member.classic is None else 1)
    if member.classic is not None:
        classic.int32(member.classic.session_timeout_ms).uvarint(len(member.classic.supported_protocols) + 1)
        for name, metadata in member.classic.supported_protocols:
            classic.string(name).bytes_(metadata).no_tags()
        classic.no_tags()
    writer.tagged(_CLASSIC_MEMBER_METADATA_TAG, bytes(classic.out))
    return _key(MEMBER_METADATA, group_id, member.member_id), bytes(writer.out)


def target_assignment_epoch_record(group_id: str, epoch: int) -> RecordKV:
    return _key(TARGET_METADATA, group_id), bytes(_value().int32(epoch).no_tags().out)


def target_member_record(group_id: str, member_id: str, assignment: Partitions) -> RecordKV:
    return _key(TARGET_MEMBER, group_id, member_id), bytes(_value().partitions(assignment).no_tags().out)


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> RecordKV:
    writer = _value().int32(member.member_epoch).int32(member.previous_member_epoch).int8(int(member.state))
    writer.partitions(member.assigned).partitions(member.pending_revocation)
    return _key(CURRENT_ASSIGNMENT, group_id, member.member_id), bytes(writer.no_tags().out)


def member_tombstones(group_id: str, member_id: str) -> list[RecordKV]:
    """A member leaves: current assignment, target assignment, then member metadata, as Kafka orders them."""
    return [(_key(CURRENT_ASSIGNMENT, group_id, member_id), None), (_key(TARGET_MEMBER, group_id, member_id), None),
            (_key(MEMBER_METADATA, group_id, member_id), None)]


def group_tombstones(group_id: str) -> list[RecordKV]:
    """An empty group is deleted: target assignment metadata, partition metadata, then the group epoch."""
    return [(_key(TARGET_METADATA, group_id), None), (_key(PARTITION_METADATA, group_id), None),
            (_key(METADATA, group_id), None)]


# -- reading ---------------------------------------------------------------------------------------------
class _Reader(CoordinatorRecordReader):
    def __init__(self, data: bytes, flexible: bool) -> None:
        super().__init__(data, 0 if flexible else 1 << 15, "__consumer_offsets")

    def topic_id(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        out = {}
        for _topic in range(max(self.array_length(), 0)):
            topic_id = self.topic_id()
            out[topic_id] = frozenset(self.int32() for _index in range(max(self.array_length(), 0)))
            self.skip_tagged_fields()
        return out

    def strings(self) -> tuple[str, ...]:
        return tuple(self.string() for _index in range(max(self.array_length(), 0)))


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    record_type: int
    group_id: str
    member_id: str | None


def decode_consumer_group_key(data: bytes) -> ConsumerGroupKey | None:
    """The key of a KIP-848 consumer group record, or None for another record type."""
    reader = _Reader(data, flexible=False)
    if reader.version not in CONSUMER_GROUP_RECORD_TYPES:
        return None
    group_id = reader.string()
    with_member = reader.version in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT)
    return ConsumerGroupKey(reader.version, group_id, reader.string() if with_member else None)


def _topics(reader: _Reader) -> dict[str, TopicInfo]:
    topics = {}
    for _topic in range(max(reader.array_length(), 0)):
        topic_id, name, count = reader.topic_id(), reader.string(), reader.int32()
        for _partition in range(max(reader.array_length(), 0)):
            reader.int32()
            reader.strings()
            reader.skip_tagged_fields()
        reader.skip_tagged_fields()
        topics[name] = TopicInfo(topic_id, name, count)
    return topics


def replay(groups: dict[str, ConsumerGroup], key_bytes: bytes, value: bytes | None) -> bool:
    """Apply one record to `groups`; False when it is not a consumer group record."""
    key = decode_consumer_group_key(key_bytes)
    if key is None:
        return False
    group = groups.get(key.group_id)
    if value is None:
        _replay_tombstone(groups, group, key)
        return True
    if group is None:
        group = groups[key.group_id] = ConsumerGroup(key.group_id)
    reader = _Reader(value, flexible=True)
    if key.record_type == METADATA:
        group.group_epoch = reader.int32()
    elif key.record_type == PARTITION_METADATA:
        group.subscription_metadata = _topics(reader)
    elif key.record_type == TARGET_METADATA:
        group.assignment_epoch = reader.int32()
    elif key.record_type == TARGET_MEMBER:
        group.target[key.member_id or ""] = reader.partitions()
    else:
        member = group.members.get(key.member_id or "") or ConsumerGroupMember(key.member_id or "")
        group.put_member(_read_member(reader, member) if key.record_type == MEMBER_METADATA
                         else _read_assignment(reader, member))
    return True


def _read_member(reader: _Reader, member: ConsumerGroupMember) -> ConsumerGroupMember:
    instance_id, rack_id, client_id, client_host = (reader.nullable_string(), reader.nullable_string(),
                                                    reader.string(), reader.string())
    names, regex, rebalance_timeout_ms = reader.strings(), reader.nullable_string(), reader.int32()
    server_assignor = reader.nullable_string()
    classic_payload = reader.tagged_fields().get(_CLASSIC_MEMBER_METADATA_TAG)
    return member.replace(instance_id=instance_id, rack_id=rack_id, client_id=client_id, client_host=client_host,
                          subscribed_topic_names=names, subscribed_topic_regex=regex,
                          rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=server_assignor,
                          classic=None if classic_payload is None else _read_classic(classic_payload))


def _read_classic(payload: bytes) -> ClassicMemberMetadata | None:
    reader = _Reader(b"\x00\x00" + payload, flexible=True)  # a tagged struct has no version of its own
    if reader.uvarint() == 0:
        return None
    session_timeout_ms = reader.int32()
    protocols = []
    for _index in range(max(reader.array_length(), 0)):
        name, metadata = reader.string(), reader.bytes_()
        reader.skip_tagged_fields()
        protocols.append((name, metadata))
    return ClassicMemberMetadata(session_timeout_ms, tuple(protocols))


def _read_assignment(reader: _Reader, member: ConsumerGroupMember) -> ConsumerGroupMember:
    epoch, previous, state = reader.int32(), reader.int32(), reader.int8()
    try:
        member_state = MemberState(state)
    except ValueError:
        member_state = MemberState.UNKNOWN
    return member.replace(member_epoch=epoch, previous_member_epoch=previous, state=member_state,
                          assigned=reader.partitions(), pending_revocation=reader.partitions())


def _replay_tombstone(groups: dict[str, ConsumerGroup], group: ConsumerGroup | None, key: ConsumerGroupKey) -> None:
    if group is None:
        return
    if key.record_type == METADATA:
        del groups[key.group_id]
    elif key.record_type == PARTITION_METADATA:
        group.subscription_metadata = {}
    elif key.record_type == MEMBER_METADATA:
        group.remove_member(key.member_id or "")
    elif key.record_type == TARGET_MEMBER:
        group.target.pop(key.member_id or "", None)
    elif key.record_type == CURRENT_ASSIGNMENT and key.member_id in group.members:
        member = group.members[key.member_id]
        group.put_member(member.replace(member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE,
                                        assigned={}, pending_revocation={}))


def replay_all(groups: dict[str, ConsumerGroup], records: Iterable[RecordKV]) -> None:
    for key, value in records:
        replay(groups, key, value)

"""The records of `__share_group_state`, byte-for-byte in Apache Kafka 4.3.1's layouts
(`share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json`).

A key is an int16 record type (0 ShareSnapshot, 1 ShareUpdate; Kafka's `CoordinatorRecordSerde` writes the key's
apiKey) then the key fields, non-flexible, version 0: GroupId (int16-length string), TopicId (16 bytes),
Partition (int32). A value is an int16 version (0) then the flexible fields; DeliveryCompleteCount (KIP-1226,
Kafka 4.2+) is tagged field 0, written only when it is not -1. A null value is a tombstone (Kafka writes one on a
ShareSnapshot key when a share partition's state is deleted). Pure functions over immutable values; thread-safe.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from minikafka.broker.share.share_types import PersisterStateBatch
from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records.varint import decode_unsigned_varint, encode_unsigned_varint

__all__ = [
    "SHARE_SNAPSHOT",
    "SHARE_UPDATE",
    "ShareSnapshotValue",
    "ShareStateKey",
    "ShareUpdateValue",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
_NO_DELIVERY_COMPLETE_COUNT = -1
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_SNAPSHOT_HEAD = struct.Struct(">iiiqqq")  # snapshot epoch, state epoch, leader epoch, start offset, create, write
_UPDATE_HEAD = struct.Struct(">iiq")  # snapshot epoch, leader epoch, start offset
_BATCH = struct.Struct(">qqbh")


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    record_type: int  # SHARE_SNAPSHOT or SHARE_UPDATE
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[PersisterStateBatch, ...]
    delivery_complete_count: int = _NO_DELIVERY_COMPLETE_COUNT


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int  # -1: the start offset is not being updated
    state_batches: tuple[PersisterStateBatch, ...]
    delivery_complete_count: int = _NO_DELIVERY_COMPLETE_COUNT


def encode_key(key: ShareStateKey) -> bytes:
    if key.record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise ValueError(f"unknown share state record type {key.record_type}")
    group = key.group_id.encode()
    return b"".join(
        (_I16.pack(key.record_type), _I16.pack(len(group)), group, key.topic_id.bytes, _I32.pack(key.partition))
    )


def decode_key(data: bytes) -> ShareStateKey:
    try:
        (record_type,) = _I16.unpack_from(data, 0)
        if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
            raise ValueError(f"unknown share state record type {record_type}")
        (length,) = _I16.unpack_from(data, 2)
        if length < 0:
            raise ValueError("null group id")
        group = bytes(data[4 : 4 + length]).decode()
        position = 4 + length
        topic_id = uuid.UUID(bytes=bytes(data[position : position + 16]))
        (partition,) = _I32.unpack_from(data, position + 16)
    except (struct.error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"malformed __share_group_state key: {exc}") from exc
    if position + 20 != len(data):
        raise ValueError(f"malformed __share_group_state key: {len(data) - position - 20} trailing bytes")
    return ShareStateKey(record_type, group, topic_id, partition)


def encode_value(value: ShareSnapshotValue | ShareUpdateValue) -> bytes:
    parts = [_I16.pack(0)]
    if isinstance(value, ShareSnapshotValue):
        parts.append(
            _SNAPSHOT_HEAD.pack(
                value.snapshot_epoch,
                value.state_epoch,
                value.leader_epoch,
                value.start_offset,
                value.create_timestamp,
                value.write_timestamp,
            )
        )
    else:
        parts.append(_UPDATE_HEAD.pack(value.snapshot_epoch, value.leader_epoch, value.start_offset))
    parts.append(encode_unsigned_varint(len(value.state_batches) + 1))
    for batch in value.state_batches:
        parts.append(_BATCH.pack(batch.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count))
        parts.append(b"\x00")  # the batch's tagged fields
    if value.delivery_complete_count != _NO_DELIVERY_COMPLETE_COUNT:
        parts.append(b"\x01\x00\x04" + _I32.pack(value.delivery_complete_count))  # one tagged field: tag 0, 4 bytes
    else:
        parts.append(b"\x00")
    return b"".join(parts)


def decode_value(record_type: int, data: bytes) -> ShareSnapshotValue | ShareUpdateValue:
    """Decode the value of a record of `record_type` (from its key). Raises ValueError on malformed bytes."""
    try:
        return _decode_value(record_type, memoryview(data))
    except (struct.error, IndexError, CorruptMessageError) as exc:
        raise ValueError(f"malformed __share_group_state value: {exc}") from exc


def _decode_value(record_type: int, data: memoryview) -> ShareSnapshotValue | ShareUpdateValue:
    (version,) = _I16.unpack_from(data, 0)
    if version != 0:
        raise ValueError(f"unsupported __share_group_state value version {version}")
    position = 2
    if record_type == SHARE_SNAPSHOT:
        head = _SNAPSHOT_HEAD.unpack_from(data, position)
        position += _SNAPSHOT_HEAD.size
    elif record_type == SHARE_UPDATE:
        head = _UPDATE_HEAD.unpack_from(data, position)
        position += _UPDATE_HEAD.size
    else:
        raise ValueError(f"unknown share state record type {record_type}")
    count, position = decode_unsigned_varint(data, position)
    if count == 0:
        raise ValueError("null StateBatches")
    batches = []
    for _ in range(count - 1):
        first, last, state, delivery_count = _BATCH.unpack_from(data, position)
        position = _skip_tagged_fields(data, position + _BATCH.size)
        batches.append(PersisterStateBatch(first, last, state, delivery_count))
    delivery_complete_count = _NO_DELIVERY_COMPLETE_COUNT
    tags, position = decode_unsigned_varint(data, position)
    for _ in range(tags):
        tag, position = decode_unsigned_varint(data, position)
        size, position = decode_unsigned_varint(data, position)
        if tag == 0:
            if size != 4:
                raise ValueError(f"DeliveryCompleteCount of {size} bytes")
            (delivery_complete_count,) = _I32.unpack_from(data, position)
        position += size  # unknown tags are skipped, as Kafka's generated readers do
    if position != len(data):
        raise ValueError(f"{len(data) - position} trailing bytes")
    if record_type == SHARE_SNAPSHOT:
        snapshot_epoch, state_epoch, leader_epoch, start_offset, create_timestamp, write_timestamp = head
        return ShareSnapshotValue(
            snapshot_epoch,
            state_epoch,
            leader_epoch,
            start_offset,
            create_timestamp,
            write_timestamp,
            tuple(batches),
            delivery_complete_count,
        )
    snapshot_epoch, leader_epoch, start_offset = head
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, tuple(batches), delivery_complete_count)


def _skip_tagged_fields(data: memoryview, position: int) -> int:
    tags, position = decode_unsigned_varint(data, position)
    for _ in range(tags):
        _, position = decode_unsigned_varint(data, position)
        size, position = decode_unsigned_varint(data, position)
        position += size
    return position

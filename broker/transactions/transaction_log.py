"""The key and value layouts of `__transaction_state` records, byte-for-byte as Apache Kafka writes them.

Key (TransactionLogKey v0): int16 version 0, string transactional_id. Value (TransactionLogValue):
v0 = producer_id int64, producer_epoch int16, transaction_timeout_ms int32, transaction_status int8,
transaction_partitions nullable array of (topic string, partition_ids array of int32),
last_update_timestamp_ms int64, start_timestamp_ms int64. v1 is the flexible form of the same fields
(compact strings and arrays, tagged fields: 0 PreviousProducerId, 1 NextProducerId, 2
ClientTransactionVersion, 3 NextProducerEpoch; a tagged field at its default is not written). Kafka writes
v0 unless the finalized transaction.version is >= 2, and so do we; both versions are readable. An Empty
transaction is written with null partitions; a null value is a tombstone (an expired id). Pure functions;
thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from minikafka.broker.groups.coordinator_partitioning import (
    partition_for as partition_for,  # the same rule as for a group id
)
from minikafka.broker.groups.coordinator_record_reader import CoordinatorRecordReader
from minikafka.broker.transactions.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionState,
    TxnTransitMetadata,
)
from minikafka.broker.transactions.transaction_version import TV_0
from minikafka.protocol.records.varint import encode_unsigned_varint

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0

_KEY_HEADER = struct.Struct(">hh")
_VALUE_HEAD = struct.Struct(">hqhib")  # version, producer_id, producer_epoch, timeout_ms, status
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_TIMESTAMPS = struct.Struct(">qq")


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    client_transaction_version: int = TV_0


def encode_key(transactional_id: str) -> bytes:
    data = transactional_id.encode()
    return _KEY_HEADER.pack(KEY_VERSION, len(data)) + data


def decode_key(data: bytes) -> str:
    reader = _reader(data)
    if reader.version != KEY_VERSION:
        raise ValueError(f"unknown __transaction_state key version {reader.version}")
    return reader.string()


def encode_value(transit: TxnTransitMetadata, version: int = VALUE_VERSION) -> bytes:
    """TransactionLogValue `version` (0, or the flexible 1 at transaction.version 2) of a transit (Kafka's
    TransactionLog.valueToBytes)."""
    if transit.state is TransactionState.EMPTY and transit.topic_partitions:
        raise ValueError("an Empty transaction carries no partitions")
    if version not in (0, 1):
        raise ValueError(f"unknown __transaction_state value version {version}")
    flexible = version >= 1
    out = bytearray(_VALUE_HEAD.pack(version, transit.producer_id, transit.producer_epoch,
                                     transit.txn_timeout_ms, transit.state.id))
    if transit.state is TransactionState.EMPTY:
        out += encode_unsigned_varint(0) if flexible else _INT32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(transit.topic_partitions):
            by_topic.setdefault(topic, []).append(partition)
        out += encode_unsigned_varint(len(by_topic) + 1) if flexible else _INT32.pack(len(by_topic))
        for topic, partitions in by_topic.items():
            name = topic.encode()
            if flexible:
                out += encode_unsigned_varint(len(name) + 1) + name + encode_unsigned_varint(len(partitions) + 1)
            else:
                out += _INT16.pack(len(name)) + name + _INT32.pack(len(partitions))
            out += b"".join(_INT32.pack(partition) for partition in partitions)
            if flexible:
                out += encode_unsigned_varint(0)  # the topic's tagged fields
    out += _TIMESTAMPS.pack(transit.txn_last_update_timestamp_ms, transit.txn_start_timestamp_ms)
    if flexible:
        tags = [(tag, data) for tag, data, default in (
            (0, _INT64.pack(transit.last_producer_id), transit.last_producer_id == NO_PRODUCER_ID),
            (1, _INT64.pack(transit.next_producer_id), transit.next_producer_id == NO_PRODUCER_ID),
            (2, _INT16.pack(transit.client_transaction_version), transit.client_transaction_version == TV_0),
        ) if not default]
        out += encode_unsigned_varint(len(tags))
        for tag, data in tags:
            out += encode_unsigned_varint(tag) + encode_unsigned_varint(len(data)) + data
    return bytes(out)


def decode_value(data: bytes) -> TransactionLogValue:
    reader = _reader(data)
    if reader.version not in (0, 1):
        raise ValueError(f"unknown __transaction_state value version {reader.version}")
    producer_id = reader.int64()
    producer_epoch = reader.int16()
    timeout_ms = reader.int32()
    state = TransactionState.from_id(reader.int8())
    partitions: set[TopicPartition] = set()
    for _topic_index in range(max(reader.array_length(), 0)):
        topic = reader.string()
        partitions.update((topic, reader.int32()) for _index in range(max(reader.array_length(), 0)))
        reader.skip_tagged_fields()
    last_update_ms = reader.int64()
    start_ms = reader.int64()
    tags = reader.tagged_fields()
    return TransactionLogValue(
        producer_id, producer_epoch, timeout_ms, state, frozenset(partitions), last_update_ms, start_ms,
        previous_producer_id=_INT64.unpack(tags[0])[0] if 0 in tags else NO_PRODUCER_ID,
        next_producer_id=_INT64.unpack(tags[1])[0] if 1 in tags else NO_PRODUCER_ID,
        next_producer_epoch=_INT16.unpack(tags[3])[0] if 3 in tags else NO_PRODUCER_EPOCH,
        client_transaction_version=_INT16.unpack(tags[2])[0] if 2 in tags else TV_0,
    )


def _reader(data: bytes) -> CoordinatorRecordReader:
    """Version 1+ of a value uses the flexible (compact, tagged) encoding."""
    return CoordinatorRecordReader(data, 1, TRANSACTION_STATE_TOPIC)

"""The key and value layouts of `__transaction_state` records, byte-for-byte as Apache Kafka writes them.

Key (TransactionLogKey v0): int16 version 0, string transactional_id. Value (TransactionLogValue):
v0 = producer_id int64, producer_epoch int16, transaction_timeout_ms int32, transaction_status int8,
transaction_partitions nullable array of (topic string, partition_ids array of int32),
last_update_timestamp_ms int64, start_timestamp_ms int64. v1 is the flexible form of the same fields
(compact strings and arrays, tagged fields: 0 PreviousProducerId, 1 NextProducerId, 2
ClientTransactionVersion, 3 NextProducerEpoch). Kafka writes v0 unless transaction.version >= 2, and so
do we; both versions are readable. An Empty transaction is written with null partitions; a null value is a
tombstone (an expired id). Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.groups.coordinator_records import java_string_hash
from broker.transactions.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionState,
    TxnTransitMetadata,
)

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


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's transactional id -> `__transaction_state` partition: Utils.abs(id.hashCode) % partitions."""
    return (java_string_hash(transactional_id) & 0x7FFFFFFF) % num_partitions


def encode_key(transactional_id: str) -> bytes:
    data = transactional_id.encode()
    return _KEY_HEADER.pack(KEY_VERSION, len(data)) + data


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    if reader.version != KEY_VERSION:
        raise ValueError(f"unknown __transaction_state key version {reader.version}")
    return reader.string()


def encode_value(transit: TxnTransitMetadata) -> bytes:
    """TransactionLogValue v0 of a transit (Kafka's TransactionLog.valueToBytes)."""
    if transit.state is TransactionState.EMPTY and transit.topic_partitions:
        raise ValueError("an Empty transaction carries no partitions")
    out = bytearray(_VALUE_HEAD.pack(VALUE_VERSION, transit.producer_id, transit.producer_epoch,
                                     transit.txn_timeout_ms, transit.state.id))
    if transit.state is TransactionState.EMPTY:
        out += _INT32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(transit.topic_partitions):
            by_topic.setdefault(topic, []).append(partition)
        out += _INT32.pack(len(by_topic))
        for topic, partitions in by_topic.items():
            name = topic.encode()
            out += _INT16.pack(len(name)) + name + _INT32.pack(len(partitions))
            out += b"".join(_INT32.pack(partition) for partition in partitions)
    out += _TIMESTAMPS.pack(transit.txn_last_update_timestamp_ms, transit.txn_start_timestamp_ms)
    return bytes(out)


def decode_value(data: bytes) -> TransactionLogValue:
    reader = _Reader(data)
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
    )


class _Reader:
    """Reads one key or value; version 1+ of a value uses the flexible (compact, tagged) encoding."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.position = 0
        self.version = self.int16()
        self.flexible = self.version >= 1

    def _take(self, size: int) -> memoryview:
        if size < 0 or self.position + size > len(self.data):
            raise ValueError("truncated __transaction_state record")
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return chunk

    def int8(self) -> int:
        return int.from_bytes(self._take(1), "big", signed=True)

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self._take(8))[0])

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            byte = self._take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def string(self) -> str:
        length = self.uvarint() - 1 if self.flexible else self.int16()
        return "" if length < 0 else bytes(self._take(length)).decode()

    def array_length(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.int32()

    def tagged_fields(self) -> dict[int, bytes]:
        if not self.flexible:
            return {}
        tags = {}
        for _index in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = bytes(self._take(self.uvarint()))
        return tags

    def skip_tagged_fields(self) -> None:
        self.tagged_fields()

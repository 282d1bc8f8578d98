"""A hand-written decoder of Produce request bodies, v3-v12 (issue 36, produce CPU).

kafka-python's compiled decoder copies every partition's records into new `bytes`: with a 16 KB batch per partition
that is a pass over the whole payload before the log has read a byte of it. This one hands the records out as
memoryviews of the request frame (immutable bytes, so a `RecordBatch` view of them still unpacks its header once)
and builds the same kafka-python objects, field for field, as the compiled decoder does. A body with tagged fields
(which no client sends in a Produce request) is decoded by the compiled decoder instead, so its tags are kept as it
keeps them. Bad bytes raise ValueError, IndexError or struct.error, which `decode_request` turns into ProtocolError.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.records.varint import decode_unsigned_varint

FIRST_VERSION = 3
LAST_VERSION = 12
FIRST_FLEXIBLE_VERSION = 9

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_AND_TIMEOUT = struct.Struct(">hi")
_TOPIC = ProduceRequest.TopicProduceData
_PARTITION = ProduceRequest.TopicProduceData.PartitionProduceData

Decoder = Callable[[memoryview, int], tuple[Any, int]]


class _TaggedFields(Exception):
    """The body has tagged fields: the compiled decoder takes it."""


def produce_decoder(version: int, compiled: Decoder) -> Decoder:
    """The decoder of Produce v`version` bodies, `f(body, position) -> (request, position)`; `compiled`:
    kafka-python's, used for bodies with tagged fields."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return compiled
    flexible = version >= FIRST_FLEXIBLE_VERSION

    def decode(body: memoryview, position: int) -> tuple[Any, int]:
        try:
            return _decode(body, position, version, flexible)
        except _TaggedFields:
            return compiled(body, position)

    return decode


def _new(cls: type, version: int) -> Any:
    obj: Any = object.__new__(cls)
    obj._version = version
    obj.tags = None
    obj.unknown_tags = None
    return obj


def _end_of(body: memoryview, position: int, size: int) -> int:
    end = position + size
    if end > len(body):
        raise ValueError(f"a field of {size} bytes runs past the end of the body ({len(body)} bytes)")
    return end


def _nullable_string(body: memoryview, position: int, flexible: bool) -> tuple[str | None, int]:
    if flexible:
        size, position = decode_unsigned_varint(body, position)
        size -= 1
    else:
        (size,) = _INT16.unpack_from(body, position)
        position += 2
    if size < 0:
        return None, position
    end = _end_of(body, position, size)
    return str(body[position:end], "utf-8"), end


def _array_length(body: memoryview, position: int, flexible: bool) -> tuple[int, int]:
    """An array's element count (-1: null)."""
    if flexible:
        count, position = decode_unsigned_varint(body, position)
        return count - 1, position
    (count,) = _INT32.unpack_from(body, position)
    return count, position + 4


def _no_tagged_fields(body: memoryview, position: int) -> int:
    if body[position] != 0:
        raise _TaggedFields
    return position + 1


def _decode(body: memoryview, position: int, version: int, flexible: bool) -> tuple[Any, int]:
    request = _new(ProduceRequest, version)
    request.transactional_id, position = _nullable_string(body, position, flexible)
    request.acks, request.timeout_ms = _ACKS_AND_TIMEOUT.unpack_from(body, position)
    position += 6
    count, position = _array_length(body, position, flexible)
    topics: list[Any] | None = None if count == -1 else []  # as the compiled decoder reads a count
    for _ in range(count):
        topic = _new(_TOPIC, version)
        topic.name, position = _nullable_string(body, position, flexible)
        partition_count, position = _array_length(body, position, flexible)
        partitions: list[Any] | None = None if partition_count == -1 else []
        for _ in range(partition_count):  # the hot loop, one pass per batch: the helpers inline
            partition = object.__new__(_PARTITION)
            partition._version = version
            partition.tags = None
            partition.unknown_tags = None
            (partition.index,) = _INT32.unpack_from(body, position)
            position += 4
            if flexible:
                size = shift = 0
                while True:
                    byte = body[position]
                    position += 1
                    size |= (byte & 0x7F) << shift
                    if not byte & 0x80:
                        break
                    shift += 7
                    if shift > 28:
                        raise ValueError("unsigned varint longer than 5 bytes")
                size -= 1
            else:
                (size,) = _INT32.unpack_from(body, position)
                position += 4
            if size < 0:
                partition.records = None
            else:
                end = position + size
                if end > len(body):
                    raise ValueError(f"records of {size} bytes run past the end of the body ({len(body)} bytes)")
                partition.records = body[position:end]  # a view of the frame: no copy
                position = end
            if flexible:
                if body[position]:
                    raise _TaggedFields
                position += 1
            partitions.append(partition)  # type: ignore[union-attr]
        topic.partition_data = partitions
        if flexible:
            position = _no_tagged_fields(body, position)
        topics.append(topic)  # type: ignore[union-attr]
    request.topic_data = topics
    if flexible:
        position = _no_tagged_fields(body, position)
    return request, position

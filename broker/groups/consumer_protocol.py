"""The classic consumer's embedded protocol (`ConsumerProtocolSubscription`, `ConsumerProtocolAssignment`,
versions 0-3, non-flexible), as the coordinator needs it where classic members and KIP-848 consumer groups
meet: a classic member's JoinGroup subscription (topics, owned partitions, rack) and the assignment its
SyncGroup returns, the classic group's last assignment on an online upgrade, and the assignment each member
gets on a downgrade. Layouts as in Kafka's `clients/src/main/resources/common/message/ConsumerProtocol*.json`.
Pure functions on bytes; thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "HIGHEST_VERSION",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "parse_assignment",
    "parse_subscription",
    "protocol_version",
    "serialize_assignment",
]

HIGHEST_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None
    #: (topic name, partitions) the member owned when it joined (v1+).
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...]
    generation_id: int
    rack_id: str | None


@dataclass(frozen=True, slots=True)
class ConsumerProtocolAssignment:
    version: int
    partitions: tuple[tuple[str, tuple[int, ...]], ...]
    user_data: bytes | None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.position = 0

    def _take(self, size: int) -> memoryview:
        if size < 0 or self.position + size > len(self.data):
            raise ValueError("truncated consumer protocol data")
        chunk = self.data[self.position : self.position + size]
        self.position += size
        return chunk

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def nullable_string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else bytes(self._take(length)).decode()

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ValueError("null string in consumer protocol data")
        return value

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length < 0 else bytes(self._take(length))

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _topic in range(max(self.int32(), 0)):
            topic = self.string()
            out.append((topic, tuple(self.int32() for _index in range(max(self.int32(), 0)))))
        return tuple(out)

    @property
    def remaining(self) -> int:
        return len(self.data) - self.position


def protocol_version(data: bytes) -> int:
    """The version a subscription or assignment was written with."""
    if len(data) < 2:
        raise ValueError("consumer protocol data too short")
    return int(_INT16.unpack_from(data)[0])


def parse_subscription(data: bytes) -> ConsumerProtocolSubscription:
    """A JoinGroup protocol's metadata; fields a version does not have take their defaults. A version above
    HIGHEST_VERSION is read as the highest (Kafka's clients only ever add fields at the end)."""
    reader = _Reader(data)
    version = reader.int16()
    if version < 0:
        raise ValueError(f"bad consumer protocol subscription version {version}")
    topics = tuple(reader.string() for _index in range(max(reader.int32(), 0)))
    user_data = reader.nullable_bytes()
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id, rack_id = -1, None
    if version >= 1 and reader.remaining:
        owned = reader.topic_partitions()
    if version >= 2 and reader.remaining:
        generation_id = reader.int32()
    if version >= 3 and reader.remaining:
        rack_id = reader.nullable_string()
    return ConsumerProtocolSubscription(version, topics, user_data, owned, generation_id, rack_id)


def parse_assignment(data: bytes) -> ConsumerProtocolAssignment:
    """A SyncGroup assignment; empty bytes (a member the leader gave nothing) is an empty assignment."""
    if not data:
        return ConsumerProtocolAssignment(0, (), None)
    reader = _Reader(data)
    version = reader.int16()
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes() if reader.remaining else None
    return ConsumerProtocolAssignment(version, partitions, user_data)


def serialize_assignment(partitions: Mapping[str, Iterable[int]], version: int) -> bytes:
    """Kafka's ConsumerProtocol.serializeAssignment: topics by name, partitions ascending, no user data,
    written with `version` (clamped to 0..HIGHEST_VERSION)."""
    out = bytearray(_INT16.pack(min(max(version, 0), HIGHEST_VERSION)))
    out += _INT32.pack(len(partitions))
    for topic in sorted(partitions):
        encoded = topic.encode()
        indexes = sorted(partitions[topic])
        out += _INT16.pack(len(encoded)) + encoded + _INT32.pack(len(indexes))
        for index in indexes:
            out += _INT32.pack(index)
    out += _INT32.pack(-1)
    return bytes(out)

"""`CoordinatorRecordReader`: reads the fields of one `__consumer_offsets` or `__transaction_state` record.

Both coordinators' keys and values start with an int16 version; from `flexible_from` on, a version uses
Kafka's flexible encoding (compact strings and arrays as unsigned varint length + 1, tagged fields).
Not thread-safe: one reader per record.
"""

from __future__ import annotations

import struct

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records.varint import decode_unsigned_varint

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class CoordinatorRecordReader:
    """A position in one record's bytes; owns nothing else. `topic` names the record's topic in errors."""

    def __init__(self, data: bytes, flexible_from: int, topic: str) -> None:
        self.data = memoryview(data)
        self.position = 0
        self.topic = topic
        self.version = self.int16()
        self.flexible = self.version >= flexible_from

    def _take(self, size: int) -> memoryview:
        if size < 0 or self.position + size > len(self.data):
            raise ValueError(f"truncated {self.topic} record")
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
        try:
            value, self.position = decode_unsigned_varint(self.data, self.position)
        except CorruptMessageError:
            raise ValueError(f"truncated {self.topic} record") from None
        return value

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

    def tagged_fields(self) -> dict[int, bytes]:
        """The tagged fields by tag (none before the flexible versions)."""
        if not self.flexible:
            return {}
        tags = {}
        for _index in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = bytes(self._take(self.uvarint()))
        return tags

    def skip_tagged_fields(self) -> None:
        self.tagged_fields()

"""Coordinator records (the keys and values of `__consumer_offsets` and `__share_group_state`) from Apache Kafka
4.3.1's own record JSON (`<Name>Key.json`/`<Name>Value.json` in `protocol/schemas`, copied unchanged from the
kafka-group-coordinator and kafka-share-coordinator jars), encoded and decoded with kafka-python's schema machinery.

The layout is Kafka's `CoordinatorRecordSerde`: a key is the record type (the key's apiKey) as int16 then the key
fields at version 0, non-flexible; a value is its version (0) as int16 then the value fields, flexible (compact
strings and arrays, tagged fields). As Kafka's generated writers do, a tagged field is written only when it differs
from its default. Immutable after construction; thread-safe.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from kafka.protocol.data_container import DataContainer
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.load_json import load_json

from minikafka.protocol import schemas

__all__ = ["CoordinatorRecordSchema"]

_I16 = struct.Struct(">h")


class CoordinatorRecordSchema:
    """One coordinator record type, e.g. `CoordinatorRecordSchema("ShareGroupMemberMetadata")`."""

    def __init__(self, name: str) -> None:
        key_json = load_json(name + "Key", schemas)
        value_json = load_json(name + "Value", schemas)
        if key_json["apiKey"] != value_json["apiKey"]:
            raise ValueError(f"{name}: key and value disagree on the record type")
        self.name = name
        self.record_type: int = key_json["apiKey"]
        self._key_struct = StructField(
            {"name": name + "Key", "type": name + "Key", "versions": "0+", "fields": key_json["fields"]}
        )
        self._value_struct = StructField(
            {"name": name + "Value", "type": name + "Value", "versions": "0+", "fields": value_json["fields"]}
        )
        self.key_class: Any = type(name + "Key", (DataContainer,), {"_struct": self._key_struct})
        self.value_class: Any = type(name + "Value", (DataContainer,), {"_struct": self._value_struct})
        self._tagged_defaults = {f.name: f.default for f in self._value_struct._fields if f.tagged_field_q(0)}

    @property
    def key_fields(self) -> Any:
        return self._key_struct._fields

    @property
    def value_fields(self) -> Any:
        return self._value_struct._fields

    def encode_key(self, **fields: Any) -> bytes:
        key = self.key_class(version=0, **fields)
        return _I16.pack(self.record_type) + bytes(self._key_struct.encode(key, version=0))

    def encode_value(self, **fields: Any) -> bytes:
        for name, default in self._tagged_defaults.items():
            if name in fields and fields[name] == default:
                del fields[name]
        value = self.value_class(version=0, **fields)
        return _I16.pack(0) + bytes(self._value_struct.encode(value, version=0, compact=True, tagged=True))

    def decode_key(self, data: bytes) -> Any:
        """The key's fields (ValueError when the bytes are not a whole key of this type)."""
        if len(data) < 2 or _I16.unpack_from(data)[0] != self.record_type:
            raise ValueError(f"not a {self.name} key")
        return self._decode(self._key_struct, self.key_class, data, compact=False)

    def decode_value(self, data: bytes) -> Any:
        if len(data) < 2:
            raise ValueError(f"malformed {self.name} value: {len(data)} bytes")
        (version,) = _I16.unpack_from(data)
        if version != 0:
            raise ValueError(f"unsupported {self.name} value version {version}")
        return self._decode(self._value_struct, self.value_class, data, compact=True)

    def _decode(self, struct_field: StructField, data_class: Any, data: bytes, *, compact: bool) -> Any:
        stream = io.BytesIO(bytes(data[2:]))
        try:
            decoded = struct_field.decode(stream, version=0, compact=compact, tagged=compact, data_class=data_class)
        except Exception as exc:  # the generated decoders raise assorted errors on truncated or garbage input
            raise ValueError(f"malformed {self.name} record: {exc!r}") from exc
        if stream.tell() != len(data) - 2:
            raise ValueError(f"malformed {self.name} record: {len(data) - 2 - stream.tell()} trailing bytes")
        return decoded

"""Primitive writers of Kafka's wire format for the hand-written response encoders (`fetch_response`,
`produce_response`): each appends one field to a bytearray, in the classic encoding or, with `flexible`, the
compact one of KIP-482. Stateless; safe from any thread.
"""

from __future__ import annotations

import struct
import uuid

ZERO_UUID = uuid.UUID(int=0)

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def unsigned_varint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def array_length(out: bytearray, length: int, flexible: bool) -> None:
    if flexible:
        unsigned_varint(out, length + 1)
    else:
        out += _INT32.pack(length)


def nullable_length(out: bytearray, length: int | None, flexible: bool) -> None:
    """The length of a nullable array or bytes field (-1, or 0 when flexible, for null)."""
    if flexible:
        unsigned_varint(out, 0 if length is None else length + 1)
    else:
        out += _INT32.pack(-1 if length is None else length)


def string(out: bytearray, value: str, flexible: bool) -> None:
    data = value.encode("utf-8")
    if flexible:
        unsigned_varint(out, len(data) + 1)
    else:
        out += _INT16.pack(len(data))
    out += data


def nullable_string(out: bytearray, value: str | None, flexible: bool) -> None:
    if value is not None:
        string(out, value, flexible)
    elif flexible:
        out.append(0)
    else:
        out += b"\xff\xff"

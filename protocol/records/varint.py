"""Zigzag varint / varlong helpers for the v2 record format (Kafka's ByteUtils).

Kafka encodes record lengths, deltas and counts as zigzag-encoded base-128 varints: int32 values
(varint) use at most 5 bytes, int64 values (varlong) at most 10. Decoders take any buffer that
indexes to ints (bytes, bytearray, memoryview) and return ``(value, next_position)``.
"""

from __future__ import annotations

from minikafka.protocol.errors import CorruptMessageError

_Buffer = bytes | bytearray | memoryview


def zigzag_encode(value: int) -> int:
    """Map a signed 64-bit int onto an unsigned one (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...)."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def encode_varint(value: int) -> bytes:
    """Zigzag-encode a signed int (varint or varlong) into its base-128 bytes."""
    unsigned = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    if unsigned < 0x80:
        return bytes((unsigned,))
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def encode_unsigned_varint(value: int) -> bytes:
    """A non-negative int as Kafka's unsigned base-128 varint (no zigzag): compact-array lengths and tagged-field
    headers of flexible message versions."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_unsigned_varint(buffer: _Buffer, position: int = 0) -> tuple[int, int]:
    """Decode Kafka's unsigned varint (no zigzag; at most 5 bytes, as its readers of compact lengths and tagged-field
    headers allow); returns (value, next_position). Raises CorruptMessageError when truncated or too long."""
    value = shift = 0
    for index in range(5):
        if position + index >= len(buffer):
            raise CorruptMessageError(f"truncated unsigned varint at position {position}")
        byte = buffer[position + index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position + index + 1
        shift += 7
    raise CorruptMessageError(f"unsigned varint longer than 5 bytes at position {position}")


def write_varint(out: bytearray, value: int) -> None:
    """Append the zigzag varint encoding of ``value`` to ``out``."""
    unsigned = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)


def size_of_varint(value: int) -> int:
    """Number of bytes ``encode_varint(value)`` produces."""
    unsigned = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while unsigned >= 0x80:
        unsigned >>= 7
        size += 1
    return size


def _decode(buffer: _Buffer, position: int, max_bytes: int) -> tuple[int, int]:
    try:
        byte = buffer[position]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), position + 1
        result = byte & 0x7F
        shift = 7
        for index in range(1, max_bytes):
            byte = buffer[position + index]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return (result >> 1) ^ -(result & 1), position + index + 1
            shift += 7
    except IndexError:
        raise CorruptMessageError(f"truncated varint at position {position}") from None
    raise CorruptMessageError(f"varint longer than {max_bytes} bytes at position {position}")


def decode_varint(buffer: _Buffer, position: int = 0) -> tuple[int, int]:
    """Decode a zigzag varint (int32, at most 5 bytes); returns (value, next_position)."""
    return _decode(buffer, position, 5)


def decode_varlong(buffer: _Buffer, position: int = 0) -> tuple[int, int]:
    """Decode a zigzag varlong (int64, at most 10 bytes); returns (value, next_position)."""
    return _decode(buffer, position, 10)

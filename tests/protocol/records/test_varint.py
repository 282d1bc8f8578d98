from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records.varint import (
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    size_of_varint,
    write_varint,
    zigzag_decode,
    zigzag_encode,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"), (300, b"\xd8\x04")],
)
def test_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded) == (value, len(encoded))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    out = bytearray(b"xx")
    write_varint(out, value)
    assert bytes(out[2:]) == encoded
    assert len(encoded) == size_of_varint(value) <= 10
    assert decode_varlong(b"pad" + encoded + b"trailing", 3) == (value, 3 + len(encoded))
    assert zigzag_decode(zigzag_encode(value)) == value


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_varint_round_trip_fits_five_bytes(value: int) -> None:
    encoded = encode_varint(value)
    assert len(encoded) <= 5
    assert decode_varint(memoryview(encoded)) == (value, len(encoded))


def test_truncated_and_overlong_varints_raise() -> None:
    with pytest.raises(CorruptMessageError, match="truncated"):
        decode_varint(b"\x80\x80")
    with pytest.raises(CorruptMessageError, match="longer than 5"):
        decode_varint(b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(CorruptMessageError):
        decode_varlong(b"\xff" * 11)


@given(st.integers(min_value=0, max_value=2**32 - 1), st.binary(max_size=3))
def test_unsigned_varint_round_trip_at_an_offset(value: int, prefix: bytes) -> None:
    encoded = encode_unsigned_varint(value)
    assert decode_unsigned_varint(prefix + encoded + b"\xff", len(prefix)) == (value, len(prefix) + len(encoded))


def test_unsigned_varint_is_not_zigzag_and_rejects_truncated_or_six_bytes() -> None:
    assert decode_unsigned_varint(b"\x01") == (1, 1)
    assert decode_unsigned_varint(b"\xac\x02") == (300, 2)
    with pytest.raises(CorruptMessageError, match="truncated"):
        decode_unsigned_varint(b"\x80\x80")
    with pytest.raises(CorruptMessageError, match="longer than 5 bytes"):
        decode_unsigned_varint(b"\x80\x80\x80\x80\x80\x01")

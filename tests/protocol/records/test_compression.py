from __future__ import annotations

import os
import struct

import cramjam
import pytest

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import CompressionType, compress, decompress
from minikafka.protocol.records.compression import XERIAL_MAGIC

PAYLOAD = b"minikafka record section " * 4000 + os.urandom(5000)


@pytest.mark.parametrize("codec", list(CompressionType))
def test_round_trip_every_codec(codec: CompressionType) -> None:
    encoded = compress(codec, PAYLOAD)
    assert decompress(codec, encoded) == PAYLOAD
    assert decompress(codec, memoryview(bytearray(encoded))) == PAYLOAD
    if codec != CompressionType.NONE:
        assert encoded != PAYLOAD


def test_snappy_is_xerial_framed_with_32k_blocks() -> None:
    encoded = compress(CompressionType.SNAPPY, PAYLOAD)
    assert encoded[:8] == XERIAL_MAGIC
    assert struct.unpack_from(">ii", encoded, 8) == (1, 1)
    (first_block_length,) = struct.unpack_from(">i", encoded, 16)
    first_block = encoded[20 : 20 + first_block_length]
    assert bytes(cramjam.snappy.decompress_raw(first_block)) == PAYLOAD[: 32 * 1024]


def test_snappy_decodes_raw_block() -> None:
    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert decompress(CompressionType.SNAPPY, raw) == PAYLOAD


def test_snappy_decodes_kafka_python_xerial_stream() -> None:
    kafka_codec = pytest.importorskip("kafka.codec")
    if not kafka_codec.has_snappy():
        # Build the Java-client framing by hand from cramjam raw blocks.
        blocks = [bytes(cramjam.snappy.compress_raw(PAYLOAD[i : i + 1000])) for i in range(0, len(PAYLOAD), 1000)]
        framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    else:
        framed = kafka_codec.snappy_encode(PAYLOAD, xerial_compatible=True, xerial_blocksize=1000)
        assert kafka_codec.snappy_decode(compress(CompressionType.SNAPPY, PAYLOAD)) == PAYLOAD
    assert framed[:8] == XERIAL_MAGIC
    assert decompress(CompressionType.SNAPPY, framed) == PAYLOAD


def test_hand_built_xerial_multi_block_stream() -> None:
    blocks = [bytes(cramjam.snappy.compress_raw(PAYLOAD[i : i + 777])) for i in range(0, len(PAYLOAD), 777)]
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    assert decompress(CompressionType.SNAPPY, framed) == PAYLOAD


def test_lz4_frames_interoperate_with_kafka_python() -> None:
    kafka_codec = pytest.importorskip("kafka.codec")
    if not kafka_codec.has_lz4():
        pytest.skip("kafka-python has no lz4 library here")
    assert kafka_codec.lz4_decode(compress(CompressionType.LZ4, PAYLOAD)) == PAYLOAD
    assert decompress(CompressionType.LZ4, kafka_codec.lz4_encode(PAYLOAD)) == PAYLOAD


@pytest.mark.parametrize("codec", [c for c in CompressionType if c != CompressionType.NONE])
def test_garbage_raises_corrupt_message(codec: CompressionType) -> None:
    with pytest.raises(CorruptMessageError):
        decompress(codec, b"\xff\xff\xff\xff definitely not compressed")


def test_truncated_xerial_block_raises() -> None:
    encoded = compress(CompressionType.SNAPPY, PAYLOAD)
    with pytest.raises(CorruptMessageError, match="runs past"):
        decompress(CompressionType.SNAPPY, encoded[:-10])


def test_unknown_codec_raises() -> None:
    with pytest.raises(CorruptMessageError, match="unknown compression codec"):
        decompress(7, b"abc")  # type: ignore[arg-type]

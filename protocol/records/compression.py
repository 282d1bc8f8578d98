"""Record-batch compression codecs (gzip, snappy, lz4, zstd), all through cramjam.

Snappy: the Java client and librdkafka send *Xerial-framed* snappy (magic ``\\x82SNAPPY\\x00``,
int32 version, int32 compatible-version, then ``[int32 length + raw snappy block]*``); some clients
send a raw snappy block. `decompress` accepts both; `compress` writes Xerial framing with 32 KiB
blocks like the Java client's ``SnappyOutputStream``. LZ4 is the LZ4 *frame* format (Kafka's
``KafkaLZ4BlockOutputStream`` for magic 2). gzip and zstd are the standard formats.

Codec failures raise `protocol.errors.CorruptMessageError`.
"""

from __future__ import annotations

import struct

import cramjam

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records.attributes import CompressionType

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE_BYTES = 32 * 1024
_INT32 = struct.Struct(">i")


def compress(codec: CompressionType, data: bytes | bytearray | memoryview) -> bytes:
    """Compress a records section with ``codec`` (NONE returns the bytes unchanged)."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == CompressionType.SNAPPY:
        return _xerial_snappy_encode(data)
    if codec == CompressionType.LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CorruptMessageError(f"unknown compression codec {int(codec)}")


def decompress(codec: CompressionType, data: bytes | bytearray | memoryview) -> bytes:
    """Decompress a records section; raises CorruptMessageError on bad input or an unknown codec."""
    try:
        if codec == CompressionType.NONE:
            return bytes(data)
        if codec == CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == CompressionType.SNAPPY:
            if bytes(data[:8]) == XERIAL_MAGIC:
                return _xerial_snappy_decode(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == CompressionType.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, ValueError, OSError) as exc:
        raise CorruptMessageError(f"cannot decompress {CompressionType(codec).name} records: {exc}") from None
    raise CorruptMessageError(f"unknown compression codec {int(codec)}")


def _xerial_snappy_encode(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data).cast("B")
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(view), XERIAL_BLOCK_SIZE_BYTES):
        block = cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE_BYTES])
        out += _INT32.pack(len(block))
        out += memoryview(block)
    return bytes(out)


def _xerial_snappy_decode(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data).cast("B")
    if len(view) < len(XERIAL_HEADER):
        raise CorruptMessageError("truncated Xerial snappy header")
    out = bytearray()
    position = len(XERIAL_HEADER)
    end = len(view)
    while position < end:
        if position + 4 > end:
            raise CorruptMessageError("truncated Xerial snappy block length")
        (block_length,) = _INT32.unpack_from(view, position)
        position += 4
        if block_length < 0 or position + block_length > end:
            raise CorruptMessageError(f"Xerial snappy block of {block_length} bytes runs past the data")
        out += memoryview(cramjam.snappy.decompress_raw(view[position : position + block_length]))
        position += block_length
    return bytes(out)

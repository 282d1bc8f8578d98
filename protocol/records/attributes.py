"""Batch attribute enums and bit masks of the v2 record batch (Kafka's RecordBatch attributes)."""

from __future__ import annotations

from enum import IntEnum


class CompressionType(IntEnum):
    """Codec id stored in attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    """Timestamp type stored in attribute bit 3."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

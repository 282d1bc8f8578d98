"""Kafka v2 record batches: zero-copy view and validation, builder, codecs, control records.

Sans-IO: bytes in, typed values out. No sockets, files, threads or asyncio.
"""

from protocol.records.attributes import CompressionType, TimestampType
from protocol.records.compression import compress, decompress
from protocol.records.record_batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    Record,
    RecordBatch,
    iter_batches,
    set_base_offset,
    set_max_timestamp_and_type,
    set_partition_leader_epoch,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "CompressionType",
    "Record",
    "RecordBatch",
    "TimestampType",
    "compress",
    "decompress",
    "iter_batches",
    "set_base_offset",
    "set_max_timestamp_and_type",
    "set_partition_leader_epoch",
]

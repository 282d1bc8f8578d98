"""Kafka v2 record batches: zero-copy view and validation, builder, codecs, control records.

Sans-IO: bytes in, typed values out. No sockets, files, threads or asyncio.
"""

from minikafka.protocol.records.attributes import CompressionType, TimestampType
from minikafka.protocol.records.builder import (
    CONTROL_TYPE_ABORT,
    CONTROL_TYPE_COMMIT,
    build_batch,
    build_control_batch,
    parse_control_record_type,
    parse_end_txn_marker_coordinator_epoch,
)
from minikafka.protocol.records.compression import compress, decompress
from minikafka.protocol.records.record_batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    Record,
    RecordBatch,
    iter_batches,
    set_base_offset,
    set_max_timestamp_and_type,
    set_partition_leader_epoch,
)
from minikafka.protocol.records.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    size_of_varint,
    write_varint,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "CONTROL_TYPE_ABORT",
    "CONTROL_TYPE_COMMIT",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "CompressionType",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_control_batch",
    "compress",
    "decode_varint",
    "decode_varlong",
    "decompress",
    "encode_varint",
    "iter_batches",
    "parse_control_record_type",
    "parse_end_txn_marker_coordinator_epoch",
    "set_base_offset",
    "set_max_timestamp_and_type",
    "set_partition_leader_epoch",
    "size_of_varint",
    "write_varint",
]

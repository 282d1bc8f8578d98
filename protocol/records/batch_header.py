"""The v2 record-batch header, named once (Kafka's DefaultRecordBatch constants), with small readers.

Layout (big-endian, offsets from the batch start; kafka-protocol-notes §5.1)::

    0 baseOffset q | 8 batchLength i | 12 partitionLeaderEpoch i | 16 magic b | 17 crc I |
    21 attributes h | 23 lastOffsetDelta i | 27 baseTimestamp q | 35 maxTimestamp q |
    43 producerId q | 51 producerEpoch h | 53 baseSequence i | 57 recordsCount i | 61 records

`batchLength` counts the bytes after itself, so a batch takes `batchLength + LOG_OVERHEAD` bytes. The CRC
(CRC-32C) covers bytes 21 (the attributes) to the end. Every module that reads or writes a header by position
uses these names and structs; `RecordBatch` is the full view. Stateless.
"""

from __future__ import annotations

import struct

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
BATCH_HEADER_SIZE = RECORDS_OFFSET
#: base offset and batch length: the bytes a batch has beyond what `batchLength` counts
LOG_OVERHEAD = LENGTH_OFFSET + 4
MAGIC_V2 = 2

#: the whole header: base offset, length, leader epoch, magic, crc, attributes, last offset delta, base and max
#: timestamp, producer id and epoch, base sequence, records count
HEADER = struct.Struct(">qiibIhiqqqhii")
#: base offset, batch length, partition leader epoch, magic: the part before the CRC and outside it
PREFIX = struct.Struct(">qiib")
#: attributes .. records count: the header fields the CRC covers
CRC_COVERED_HEADER = struct.Struct(">hiqqqhii")
#: base offset .. last offset delta (what a scan of offsets needs)
HEADER_TO_LAST_OFFSET_DELTA = struct.Struct(">qiibIhi")
#: base offset and batch length
LENGTH_PREFIX = struct.Struct(">qi")
#: producer id and epoch
PRODUCER_ID_AND_EPOCH = struct.Struct(">qh")
#: the fields a scan of plain batches reads, the others skipped as padding: base offset, batch length, magic, crc,
#: attributes, last offset delta, max timestamp, producer id, records count
SCAN_HEADER = struct.Struct(">qi4xbIhi8xqq6xi")
assert HEADER.size == BATCH_HEADER_SIZE
assert PREFIX.size + 4 + CRC_COVERED_HEADER.size == BATCH_HEADER_SIZE
assert HEADER_TO_LAST_OFFSET_DELTA.size == BASE_TIMESTAMP_OFFSET
assert SCAN_HEADER.size == BATCH_HEADER_SIZE

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

Buffer = bytes | bytearray | memoryview


def batch_size(buffer: Buffer, position: int = 0) -> int:
    """Bytes the batch at `position` takes (its length field + LOG_OVERHEAD)."""
    return int(_INT32.unpack_from(buffer, position + LENGTH_OFFSET)[0]) + LOG_OVERHEAD


def base_offset(buffer: Buffer, position: int = 0) -> int:
    return int(_INT64.unpack_from(buffer, position + BASE_OFFSET_OFFSET)[0])


def last_offset(buffer: Buffer, position: int = 0) -> int:
    """Base offset + last offset delta of the batch at `position`."""
    return base_offset(buffer, position) + int(_INT32.unpack_from(buffer, position + LAST_OFFSET_DELTA_OFFSET)[0])


def magic(buffer: Buffer, position: int = 0) -> int:
    return int(buffer[position + MAGIC_OFFSET])


def attributes(buffer: Buffer, position: int = 0) -> int:
    return int(_INT16.unpack_from(buffer, position + ATTRIBUTES_OFFSET)[0])


def producer_id_and_epoch(buffer: Buffer, position: int = 0) -> tuple[int, int]:
    producer_id, producer_epoch = PRODUCER_ID_AND_EPOCH.unpack_from(buffer, position + PRODUCER_ID_OFFSET)
    return int(producer_id), int(producer_epoch)

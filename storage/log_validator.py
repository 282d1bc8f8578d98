"""Produce-path validation of one partition's payload (Kafka's LogValidator; notes §3.4/§6, spec §4).

Checks run on the header first; records are decoded only where Kafka needs them: keys on compacted topics,
record timestamps when a timestamp window is configured for CreateTime topics, and a batch whose codec differs
from the topic's `compression.type` (other than `producer`), which is rebuilt in the topic's codec with the same
records, offset deltas, timestamps and producer fields (Kafka's validateMessagesAndAssignOffsetsCompressed).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from minikafka.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    RecordListTooLargeError,
)
from minikafka.protocol.records import (
    LOG_OVERHEAD,
    CompressionType,
    RecordBatch,
    TimestampType,
    build_batch,
    iter_batches,
)
from minikafka.protocol.records.attributes import COMPRESSION_CODEC_MASK
from minikafka.protocol.records.batch_header import BATCH_HEADER_SIZE, LENGTH_OFFSET, MAGIC_OFFSET, magic
from minikafka.storage.config_def import LONG_MAX
from minikafka.storage.log_config import LogConfig

MAGIC_V2 = 2
_BATCH_LENGTH = struct.Struct(">i")
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD  # a batch length below this cannot hold the v2 header
#: topic `compression.type` -> the codec appended batches are stored in ("producer": as received)
TOPIC_CODECS = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}


class LogValidator:
    """Stateless validation for one topic-partition's config; thread-safe (no mutable state). What the config
    decides per batch (target codec, limits, whether records are read) is worked out once, here: a log makes its
    validator again when its config object changes."""

    def __init__(self, topic_partition: str, config: LogConfig) -> None:
        self.topic_partition = topic_partition
        self.config = config
        #: the codec batches are stored in; None: as received (`compression.type=producer`)
        self._target_codec = TOPIC_CODECS.get(config.compression_type)
        self._check_timestamps = not config.log_append_time and (
            config.message_timestamp_before_max_ms < LONG_MAX or config.message_timestamp_after_max_ms < LONG_MAX)
        #: records are decoded only for keys on compacted topics and for a timestamp window
        self._reads_records = config.compact or self._check_timestamps

    def validate(self, records: bytes | bytearray | memoryview, now_ms: int) -> RecordBatch:
        """Return the single valid client batch in `records`, or raise the Kafka error for it."""
        view = memoryview(records)
        size = len(view)
        if size < LOG_OVERHEAD:
            raise CorruptMessageError(f"record set of {size} bytes is too small for a batch header")
        if size > MAGIC_OFFSET and magic(view) != MAGIC_V2:
            raise InvalidRecordError(f"Produce requests must use record batch magic 2, got {magic(view)}")
        (batch_length,) = _BATCH_LENGTH.unpack_from(view, LENGTH_OFFSET)
        if batch_length >= MIN_BATCH_LENGTH and batch_length + LOG_OVERHEAD == size:
            batch = RecordBatch(view, 0)  # one batch filling the record set, as every client sends it: its size
            # and magic are the ones checked above
        else:  # what `iter_batches` finds tells the error apart
            batch = self._single_batch(view)
            if batch.size_bytes != size:
                raise CorruptMessageError(
                    f"record set has {size - batch.size_bytes} trailing bytes after the record batch")
            if batch.magic != MAGIC_V2:
                raise InvalidRecordError(f"Produce requests must use record batch magic 2, got {batch.magic}")
        batch.ensure_valid()  # also rejects codec ids above zstd
        if batch.is_control:
            raise InvalidRecordError("Clients are not allowed to write control records")
        if batch.is_transactional and batch.producer_id < 0:
            raise InvalidRecordError(
                f"Invalid transactional record batch in {self.topic_partition}: transactional records must carry "
                f"a producer id (idempotence), got {batch.producer_id}")
        records_count = batch.records_count
        if records_count <= 0 or records_count != batch.last_offset_delta + 1:
            raise InvalidRecordError(
                f"Inner record count {records_count} does not match last offset delta "
                f"{batch.last_offset_delta} + 1 in {self.topic_partition}")
        config = self.config
        target_codec = self._target_codec
        if target_codec is not None and target_codec != batch.attributes & COMPRESSION_CODEC_MASK:
            batch = recompress(batch, target_codec)
        size_bytes = batch.size_bytes
        if size_bytes > config.max_message_bytes:
            raise MessageTooLargeError(
                f"The record batch of {size_bytes} bytes in {self.topic_partition} is larger than "
                f"max.message.bytes ({config.max_message_bytes})")
        if size_bytes > config.segment_bytes:
            raise RecordListTooLargeError(
                f"The record batch of {size_bytes} bytes in {self.topic_partition} is larger than "
                f"segment.bytes ({config.segment_bytes})")
        if self._reads_records:
            self._validate_records(batch, now_ms)
        return batch

    def _single_batch(self, view: memoryview) -> RecordBatch:
        batches = list(iter_batches(view))
        if not batches:
            raise CorruptMessageError(f"record batch in {len(view)} bytes is truncated")
        if len(batches) > 1:
            raise InvalidRecordError(
                f"Produce request for {self.topic_partition} must contain exactly one record batch, "
                f"got {len(batches)}")
        return batches[0]

    def _validate_records(self, batch: RecordBatch, now_ms: int) -> None:
        config = self.config
        check_timestamps = self._check_timestamps
        if not config.compact and not check_timestamps:
            return
        no_key = f"Compacted topic cannot accept message without key in topic partition {self.topic_partition}."
        if not check_timestamps:  # keys only: the fast path
            missing = tuple((index, no_key) for index, (_offset, key) in enumerate(batch.keys()) if key is None)
            if missing:
                raise InvalidRecordError(_summary(missing), record_errors=missing)
            return
        low = now_ms - config.message_timestamp_before_max_ms
        high = now_ms + config.message_timestamp_after_max_ms
        key_errors: list[tuple[int, str]] = []
        timestamp_errors: list[tuple[int, str]] = []
        log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        for index, record in enumerate(batch.records()):
            if config.compact and record.key is None:
                key_errors.append((index, no_key))
            if check_timestamps:
                timestamp = batch.max_timestamp if log_append else record.timestamp
                if not low <= timestamp <= high:
                    timestamp_errors.append((index, (
                        f"Timestamp {timestamp} of message with offset {record.offset} is out of range. "
                        f"The timestamp should be within [{low}, {high}]")))
        if timestamp_errors:
            raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp",
                                        record_errors=tuple(timestamp_errors))
        if key_errors:
            raise InvalidRecordError(_summary(key_errors), record_errors=tuple(key_errors))


def recompress(batch: RecordBatch, codec: CompressionType) -> RecordBatch:
    """The same batch (records, offset deltas, timestamps, producer id/epoch/sequence, flags) in `codec`."""
    data = build_batch(
        list(batch.records()), base_offset=batch.base_offset, compression=codec,
        timestamp_type=batch.timestamp_type, producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
        partition_leader_epoch=batch.partition_leader_epoch, last_offset_delta=batch.last_offset_delta,
        max_timestamp=batch.max_timestamp)
    return RecordBatch(data, 0)


def _summary(record_errors: Sequence[tuple[int, str]]) -> str:
    """Kafka's InvalidRecordException text (LogValidator.processRecordErrors)."""
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')" for index, message in record_errors[:3])
    return (f"One or more records have been rejected due to {len(record_errors)} record errors in total, "
            f"and only showing the first three errors at most: [{shown}]")

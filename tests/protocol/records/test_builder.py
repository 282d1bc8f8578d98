from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AiokafkaBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBuilder
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import CompressionType, Record, RecordBatch, TimestampType
from minikafka.protocol.records.builder import build_batch, build_control_batch, parse_control_record_type

from .conftest import SAMPLE_RECORDS


def _kafka_python_bytes(records: tuple[Record, ...], codec: int = 0, **producer: int) -> bytes:
    builder = KafkaPythonBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=producer.get("producer_id", -1),
        producer_epoch=producer.get("producer_epoch", -1),
        base_sequence=producer.get("base_sequence", -1),
        batch_size=1 << 24,
    )
    for record in records:
        builder.append(
            record.offset,
            timestamp=record.timestamp,
            key=record.key,
            value=record.value,
            headers=list(record.headers),
        )
    return bytes(builder.build())


def _aiokafka_bytes(records: tuple[Record, ...]) -> bytes:
    builder = AiokafkaBuilder(2, 0, 0, 42, 3, 17, 1 << 24)
    for record in records:
        builder.append(record.offset, record.timestamp, record.key, record.value, list(record.headers))
    return bytes(builder.build())


def _as_records(foreign_batch: object) -> list[Record]:
    return [
        Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
        for r in foreign_batch  # type: ignore[attr-defined]
    ]


def test_byte_for_byte_equal_to_kafka_python_builder() -> None:
    ours = build_batch(SAMPLE_RECORDS, base_offset=0, partition_leader_epoch=0)  # kafka-python writes epoch 0
    assert ours == _kafka_python_bytes(SAMPLE_RECORDS)


def test_byte_for_byte_equal_to_aiokafka_builder_with_producer_state() -> None:
    ours = build_batch(SAMPLE_RECORDS, base_offset=0, producer_id=42, producer_epoch=3, base_sequence=17)
    assert ours == _aiokafka_bytes(SAMPLE_RECORDS)


@pytest.mark.parametrize("codec", list(CompressionType))
def test_every_codec_round_trips_through_all_three_readers(codec: CompressionType) -> None:
    records = tuple(Record(r.offset + 500, r.timestamp, r.key, r.value, r.headers) for r in SAMPLE_RECORDS)
    data = build_batch(records, base_offset=500, compression=codec)
    batch = RecordBatch(data)
    batch.ensure_valid()
    assert batch.compression_type == codec
    assert list(batch.records()) == list(records)
    assert list(batch._records_python()) == list(records)
    assert list(batch.keys()) == [(r.offset, r.key) for r in records]
    assert list(batch._keys_python()) == [(r.offset, r.key) for r in records]
    assert _as_records(KafkaPythonBatch(data)) == list(records)
    assert _as_records(AiokafkaBatch(data)) == list(records)


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4])
def test_reads_batches_compressed_by_kafka_python(codec: CompressionType) -> None:
    data = _kafka_python_bytes(SAMPLE_RECORDS, codec=int(codec))
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert list(batch.records()) == list(SAMPLE_RECORDS)
    assert list(batch._records_python()) == list(SAMPLE_RECORDS)


def test_offset_gaps_keep_absolute_offsets_and_last_offset_delta() -> None:
    records = [Record(100, 10, b"a", b"1"), Record(103, 11, b"b", b"2"), Record(107, 12, b"c", None)]
    batch = RecordBatch(build_batch(records, base_offset=100, last_offset_delta=9))
    assert batch.is_valid()
    assert (batch.base_offset, batch.last_offset_delta, batch.last_offset, batch.next_offset) == (
        100,
        9,
        109,
        110,
    )
    assert batch.records_count == 3
    assert list(batch.records()) == records
    assert [r.offset for r in KafkaPythonBatch(bytes(batch.raw()))] == [100, 103, 107]


def test_last_offset_delta_defaults_to_last_record() -> None:
    records = [Record(50, 1, b"a", b"1"), Record(52, 2, b"b", b"2")]
    batch = RecordBatch(build_batch(records, base_offset=48))
    assert batch.last_offset_delta == 4
    assert batch.last_offset == 52
    assert batch.max_timestamp == 2
    assert batch.base_timestamp == 1


def test_header_fields_and_flags() -> None:
    data = build_batch(
        SAMPLE_RECORDS,
        base_offset=0,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        producer_id=9,
        producer_epoch=2,
        base_sequence=2**31 - 3,
        is_transactional=True,
        partition_leader_epoch=5,
        max_timestamp=1_800_000_000_000,
    )
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert batch.partition_leader_epoch == 5
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.is_transactional and not batch.is_control and not batch.has_delete_horizon
    assert batch.delete_horizon_ms is None
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 2, 2**31 - 3)
    assert batch.last_sequence == KafkaPythonBatch(data).last_sequence == 1  # wraps past 2**31-1 to 0
    assert batch.max_timestamp == 1_800_000_000_000
    # LogAppendTime: every record carries the batch max timestamp.
    assert {r.timestamp for r in batch.records()} == {1_800_000_000_000}
    assert {r.timestamp for r in batch._records_python()} == {1_800_000_000_000}


def test_delete_horizon_sets_bit_6_and_base_timestamp() -> None:
    records = [Record(10, 1_000, b"a", b"x"), Record(11, 2_000, b"t", None, (("h", None),))]
    data = build_batch(records, base_offset=10, delete_horizon_ms=86_400_000, compression=CompressionType.ZSTD)
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert batch.attributes & 0x40
    assert batch.has_delete_horizon
    assert batch.delete_horizon_ms == batch.base_timestamp == 86_400_000
    assert batch.max_timestamp == 2_000
    assert list(batch.records()) == records  # timestamp deltas are relative to the horizon
    assert list(batch._records_python()) == records
    assert _as_records(KafkaPythonBatch(data)) == records


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_empty_batch_preserves_producer_state(codec: CompressionType) -> None:
    data = build_batch(
        [],
        base_offset=40,
        compression=codec,
        producer_id=7,
        producer_epoch=1,
        base_sequence=5,
        last_offset_delta=3,
    )
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert len(data) == batch.size_bytes == 61
    assert batch.records_count == 0
    assert (batch.base_timestamp, batch.max_timestamp) == (-1, -1)
    assert (batch.last_offset, batch.last_sequence) == (43, 8)
    assert list(batch.records()) == []
    assert list(batch.keys()) == []


def test_empty_batch_with_given_timestamps() -> None:
    batch = RecordBatch(build_batch([], base_offset=0, delete_horizon_ms=99, max_timestamp=77))
    assert (batch.base_timestamp, batch.max_timestamp, batch.delete_horizon_ms) == (99, 77, 99)
    assert batch.last_offset_delta == 0


@pytest.mark.parametrize(("commit", "control_type"), [(True, 1), (False, 0)])
def test_control_batch_layout(commit: bool, control_type: int) -> None:
    data = build_control_batch(
        base_offset=77,
        producer_id=1234,
        producer_epoch=5,
        commit=commit,
        coordinator_epoch=9,
        timestamp_ms=1_700_000_000_000,
        partition_leader_epoch=3,
    )
    batch = RecordBatch(data)
    batch.ensure_valid()
    assert batch.attributes == 0x30
    assert batch.is_control and batch.is_transactional
    assert (batch.base_offset, batch.records_count, batch.last_offset_delta) == (77, 1, 0)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1234, 5, -1)
    assert batch.partition_leader_epoch == 3
    assert batch.base_timestamp == batch.max_timestamp == 1_700_000_000_000
    [marker] = list(batch.records())
    assert marker == Record(77, 1_700_000_000_000, struct.pack(">hh", 0, control_type), struct.pack(">hi", 0, 9))
    assert parse_control_record_type(marker.key) == control_type
    assert KafkaPythonBatch(data).is_control_batch
    assert KafkaPythonBatch(data).validate_crc()


def test_parse_control_record_type_rejects_bad_keys() -> None:
    assert parse_control_record_type(struct.pack(">hh", 0, 4)) == 4
    with pytest.raises(CorruptMessageError):
        parse_control_record_type(b"\x00")
    with pytest.raises(CorruptMessageError):
        parse_control_record_type(None)
    with pytest.raises(CorruptMessageError, match="version"):
        parse_control_record_type(struct.pack(">hh", 1, 1))

from __future__ import annotations

import pytest

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    CompressionType,
    Record,
    RecordBatch,
    TimestampType,
    iter_batches,
    set_base_offset,
    set_max_timestamp_and_type,
    set_partition_leader_epoch,
)
from minikafka.protocol.records.builder import build_batch

from .conftest import SAMPLE_RECORDS


def _batch_bytes(base_offset: int = 0, codec: CompressionType = CompressionType.NONE) -> bytes:
    records = [Record(base_offset + i, 1_000 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    return build_batch(records, base_offset=base_offset, compression=codec)


def _log(batch_count: int) -> bytearray:
    return bytearray(b"".join(_batch_bytes(base_offset=i * 3) for i in range(batch_count)))


def test_constants() -> None:
    assert BATCH_HEADER_SIZE == 61
    assert LOG_OVERHEAD == 12


def test_view_at_position_inside_larger_buffer_reads_without_copy() -> None:
    data = _batch_bytes(base_offset=5)
    buffer = bytearray(b"garbage!" + data + b"trailing")
    batch = RecordBatch(memoryview(buffer), 8)
    assert batch.position == 8
    assert batch.size_bytes == len(data) == batch.batch_length + 12
    assert batch.magic == 2
    assert batch.is_valid()
    assert bytes(batch.raw()) == data
    assert batch.crc == batch.compute_crc()
    assert [r.offset for r in batch.records()] == [5, 6, 7]
    set_base_offset(buffer, 8, 1000)  # the view reads lazily, so it sees the patch
    assert batch.base_offset == 1000
    assert [r.offset for r in batch.records()] == [1000, 1001, 1002]


def test_flipping_a_crc_covered_byte_invalidates() -> None:
    original = _batch_bytes()
    for index in (21, 30, 57, BATCH_HEADER_SIZE + 2, len(original) - 1):
        corrupted = bytearray(original)
        corrupted[index] ^= 0x01
        batch = RecordBatch(corrupted)
        assert not batch.is_valid(), index
        with pytest.raises(CorruptMessageError, match="CRC mismatch"):
            batch.ensure_valid()


def test_base_offset_and_leader_epoch_are_not_crc_covered() -> None:
    buffer = bytearray(_batch_bytes())
    crc_before = RecordBatch(buffer).crc
    buffer[3] ^= 0xFF  # raw flip in base offset
    assert RecordBatch(buffer).is_valid()
    set_base_offset(buffer, 0, 2**40)
    set_partition_leader_epoch(buffer, 0, 17)
    batch = RecordBatch(buffer)
    assert batch.is_valid()
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc) == (2**40, 17, crc_before)
    assert batch.last_offset == 2**40 + 2


def test_bad_magic_and_bad_length_are_reported() -> None:
    buffer = bytearray(_batch_bytes())
    buffer[16] = 1
    with pytest.raises(CorruptMessageError, match="magic 1"):
        RecordBatch(buffer).ensure_valid()
    buffer = bytearray(_batch_bytes())
    buffer[8:12] = (10).to_bytes(4, "big")
    assert not RecordBatch(buffer).is_valid()
    with pytest.raises(CorruptMessageError, match="smaller than"):
        RecordBatch(buffer).ensure_valid()


def test_truncated_batch_is_invalid_and_header_too_short_raises() -> None:
    data = _batch_bytes()
    batch = RecordBatch(data[:-1])
    assert not batch.is_valid()
    with pytest.raises(CorruptMessageError, match="truncated"):
        batch.ensure_valid()
    with pytest.raises(CorruptMessageError, match="truncated"):
        list(batch.records())
    with pytest.raises(CorruptMessageError, match="header needs 61"):
        RecordBatch(data[:60])


def test_iter_batches_walks_consecutive_batches() -> None:
    log = _log(4)
    batches = list(iter_batches(log))
    assert [b.base_offset for b in batches] == [0, 3, 6, 9]
    assert all(b.is_valid() for b in batches)
    assert sum(b.size_bytes for b in batches) == len(log)
    second = batches[1].position
    assert [b.base_offset for b in iter_batches(log, second)] == [3, 6, 9]
    assert [b.base_offset for b in iter_batches(log, 0, second + batches[1].size_bytes)] == [0, 3]


@pytest.mark.parametrize("cut", [1, 5, 11, 12, 30, 61, 70])
def test_iter_batches_stops_silently_at_partial_batch(cut: int) -> None:
    log = _log(3)
    size = len(log) // 3
    truncated = log[: 2 * size + cut]
    assert [b.base_offset for b in iter_batches(truncated)] == [0, 3]
    assert [b.base_offset for b in iter_batches(log, 0, 2 * size + cut)] == [0, 3]


def test_iter_batches_rejects_impossible_length() -> None:
    log = _log(2)
    log[8:12] = (0).to_bytes(4, "big")
    with pytest.raises(CorruptMessageError, match="smaller than the header"):
        list(iter_batches(log))


def test_set_max_timestamp_and_type_rewrites_and_recrcs() -> None:
    for codec in (CompressionType.NONE, CompressionType.LZ4):
        buffer = bytearray(b"xx" + _batch_bytes(codec=codec))
        set_max_timestamp_and_type(buffer, 2, 5_555, TimestampType.LOG_APPEND_TIME)
        batch = RecordBatch(buffer, 2)
        assert batch.is_valid()
        assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        assert batch.compression_type == codec
        assert batch.max_timestamp == 5_555
        assert [r.timestamp for r in batch.records()] == [5_555] * 3
        set_max_timestamp_and_type(buffer, 2, 1_002, TimestampType.CREATE_TIME)
        assert batch.is_valid()
        assert batch.timestamp_type == TimestampType.CREATE_TIME
        assert [r.timestamp for r in batch.records()] == [1_000, 1_001, 1_002]


def test_records_handles_every_field_shape() -> None:
    batch = RecordBatch(build_batch(SAMPLE_RECORDS, base_offset=0))
    decoded = list(batch.records())
    assert decoded == list(SAMPLE_RECORDS)
    assert decoded[0].headers == (("trace", b"abc"), ("null", None))
    assert decoded[1].key is None
    assert decoded[2].value is None
    assert (decoded[3].key, decoded[3].value) == (b"", b"")
    assert hash(decoded[0]) == hash(SAMPLE_RECORDS[0])


@pytest.mark.parametrize("reader", ["records", "_records_python", "keys", "_keys_python"])
def test_malformed_records_raise_corrupt_message(reader: str) -> None:
    data = bytearray(build_batch(SAMPLE_RECORDS, base_offset=0))
    data[57:61] = (len(SAMPLE_RECORDS) + 1).to_bytes(4, "big")  # claims one more record than present
    with pytest.raises(CorruptMessageError):
        list(getattr(RecordBatch(data), reader)())
    data[57:61] = (len(SAMPLE_RECORDS) - 1).to_bytes(4, "big")  # leaves bytes unconsumed
    with pytest.raises(CorruptMessageError):
        list(getattr(RecordBatch(data), reader)())


def test_corrupt_compressed_section_raises_corrupt_message() -> None:
    data = bytearray(_batch_bytes(codec=CompressionType.GZIP))
    data[BATCH_HEADER_SIZE + 12 :] = b"\x00" * (len(data) - BATCH_HEADER_SIZE - 12)
    batch = RecordBatch(data)
    assert not batch.is_valid()
    for reader in (batch.records, batch._records_python, batch.keys):
        with pytest.raises(CorruptMessageError):
            list(reader())


def test_repr_names_the_batch() -> None:
    text = repr(RecordBatch(_batch_bytes(base_offset=9)))
    assert "base_offset=9" in text and "last_offset=11" in text


def test_unknown_codec_is_reported_not_crashed() -> None:
    buffer = bytearray(_batch_bytes())
    buffer[22] |= 0x05  # codec id 5 does not exist
    batch = RecordBatch(buffer)
    with pytest.raises(CorruptMessageError, match="unknown compression codec 5"):
        _ = batch.compression_type
    with pytest.raises(CorruptMessageError, match="unknown compression codec 5"):
        batch.ensure_valid()
    with pytest.raises(CorruptMessageError):
        list(batch.records())
    assert "attributes=0x5" in repr(batch)


HEADER_FIELDS = ("base_offset", "batch_length", "size_bytes", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "last_offset", "next_offset", "base_timestamp", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "records_count", "is_control", "is_transactional",
                 "last_sequence", "timestamp_type", "has_delete_horizon", "delete_horizon_ms", "compression_type")


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4])
def test_a_view_of_bytes_reads_the_same_fields_as_a_lazy_view(codec: CompressionType) -> None:
    """Views of immutable bytes unpack the header once; every field must equal the lazy view's reading."""
    records = [Record(40 + i, 5_000 + i, b"k%d" % i, None if i == 2 else b"v%d" % i) for i in range(4)]
    data = build_batch(records, base_offset=40, compression=codec, producer_id=77, producer_epoch=3,
                       base_sequence=2**31 - 2, is_transactional=True, partition_leader_epoch=9,
                       delete_horizon_ms=123_456, timestamp_type=TimestampType.LOG_APPEND_TIME)
    padded = b"xx" + data
    lazy = RecordBatch(bytearray(padded), 2)
    for frozen in (RecordBatch(padded, 2), RecordBatch(memoryview(padded), 2), RecordBatch(memoryview(padded)[2:])):
        assert type(frozen) is not type(lazy)
        for field in HEADER_FIELDS:
            assert getattr(frozen, field) == getattr(lazy, field), field
        assert bytes(frozen.raw()) == data
        assert frozen.is_valid()
        assert [(r.offset, r.value) for r in frozen.records()] == [(r.offset, r.value) for r in lazy.records()]


def test_views_of_mutable_buffers_stay_lazy() -> None:
    """A view over a bytearray (directly, through a memoryview, or a read-only memoryview of it) sees later patches."""
    for wrap in (lambda b: b, memoryview, lambda b: memoryview(b).toreadonly()):
        underlying = bytearray(_batch_bytes(base_offset=5))
        batch = RecordBatch(wrap(underlying))
        set_base_offset(underlying, 0, 9)
        assert batch.base_offset == 9
        assert batch.last_offset == 11

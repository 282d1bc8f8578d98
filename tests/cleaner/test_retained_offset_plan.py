"""The retained-offset plan file (issue 10): writer, validating reader and cursor, on real files under tmp_path.

Refused files are built byte by byte here (`raw_plan`), independently of the writer, with a correct checksum unless
the test is about the checksum, so each test sees the refusal it names."""

from __future__ import annotations

import io
import struct
import uuid
from pathlib import Path

import crc32c
import pytest

from minikafka.cleaner.retained_offset_plan import (
    READ_CHUNK_BYTES,
    InvalidRetainedOffsetPlanError,
    RetainedOffsetCursor,
    RetainedOffsetPlanWriter,
    kafka_topic_id,
    plan_size_bytes,
    read_plan,
)

TOPIC_ID = uuid.UUID("0b5c3a5e-9f0e-4c1a-8d6b-2f3e4a5b6c7d")
OTHER_TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")
CHUNK_OFFSETS = READ_CHUNK_BYTES // 8


def raw_plan(offsets: list[int], *, topic_id: bytes = TOPIC_ID.bytes, partition: int = 3, start: int = 100,
             end: int = 100_000, magic: bytes = b"MKPLAN1\n", count: int | None = None) -> bytes:
    """A plan file's bytes as the format says, with a correct CRC-32C (whatever the offsets are)."""
    head = struct.pack(">8s16siqq", magic, topic_id, partition, start, end)
    body = b"".join(struct.pack(">q", o) for o in offsets)
    return head + body + struct.pack(">qI", len(offsets) if count is None else count, crc32c.crc32c(head + body))


def write_file(tmp_path: Path, data: bytes, name: str = "p.plan") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def refused(path: Path, **expected: object) -> str:
    with pytest.raises(InvalidRetainedOffsetPlanError) as failure:
        read_plan(path, **expected)  # type: ignore[arg-type]
    return str(failure.value)


# ----------------------------------------------------------------------------------------------- round trip
def test_round_trip_across_read_chunks(tmp_path: Path) -> None:
    offsets = [100 + 3 * i for i in range(2 * CHUNK_OFFSETS + 17)]
    path = tmp_path / "p.plan"
    with open(path, "wb") as file:
        writer = RetainedOffsetPlanWriter(file, TOPIC_ID.bytes, 3, 100, offsets[-1] + 1)
        writer.add(offsets[0])
        writer.add_many(offsets[1:10])
        writer.add_many(iter(offsets[10:]))  # any iterable
        writer.add_many([])
        assert writer.finish() == len(offsets)
    assert path.stat().st_size == plan_size_bytes(len(offsets))
    # The writer's bytes are exactly the format's (a file built by hand from the spec).
    assert path.read_bytes() == raw_plan(offsets, end=offsets[-1] + 1)
    plan = read_plan(path, topic_id=TOPIC_ID, partition=3)
    assert (plan.topic_uuid, plan.partition, plan.start_offset, plan.end_offset, plan.count) == (
        TOPIC_ID, 3, 100, offsets[-1] + 1, len(offsets))
    assert plan.describe() == {"count": len(offsets), "start_offset": 100, "end_offset": offsets[-1] + 1}
    chunks = list(plan.chunks())
    assert [len(c) for c in chunks] == [CHUNK_OFFSETS, CHUNK_OFFSETS, 17]  # constant memory: 64 KiB at a time
    assert [o for c in chunks for o in c] == offsets
    assert read_plan(path, topic_id=TOPIC_ID.bytes).count == len(offsets)  # raw bytes or a UUID


def test_empty_plan_and_empty_range(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    RetainedOffsetPlanWriter(buffer, TOPIC_ID, 0, 5, 5).finish()
    plan = read_plan(write_file(tmp_path, buffer.getvalue()))
    assert (plan.count, plan.start_offset, plan.end_offset, list(plan.chunks())) == (0, 5, 5, [])
    assert plan.cursor().take(0, 10) == []


def test_cursor_takes_each_batch_range_in_order_and_passes_over_gaps(tmp_path: Path) -> None:
    offsets = list(range(0, 3 * CHUNK_OFFSETS, 2))  # even offsets over 1.5 chunks... and more
    plan = read_plan(write_file(tmp_path, raw_plan(offsets, start=0, end=3 * CHUNK_OFFSETS)))
    cursor = plan.cursor()
    assert cursor.take(0, 4) == [0, 2, 4]
    assert cursor.take(5, 5) == []
    assert cursor.take(9, 13) == [10, 12]  # 6 and 8 lie in a gap of the log: passed over
    edge = CHUNK_OFFSETS * 2  # the first chunk holds the even offsets below 2 * CHUNK_OFFSETS
    assert cursor.take(edge - 3, edge + 3) == [edge - 2, edge, edge + 2]  # across a chunk boundary
    assert len(cursor._chunk) <= CHUNK_OFFSETS
    assert cursor.take(edge + 100, 10 * CHUNK_OFFSETS) == offsets[(edge + 100) // 2:]
    assert cursor.take(10 * CHUNK_OFFSETS, 20 * CHUNK_OFFSETS) == []
    cursor.close()
    assert RetainedOffsetCursor(iter([])).take(0, 1) == []


# ------------------------------------------------------------------------------------------ writer refusals
@pytest.mark.parametrize(("calls", "message"), [
    ([[150, 149]], "not strictly increasing: 149 after 150"),
    ([[150, 150]], "not strictly increasing: 150 after 150"),
    ([[150], [150]], "not above the previous offset 150"),
    ([[150], [120]], "not above the previous offset 150"),
    ([[99]], "below the range start 100"),
    ([[150, 200]], "not below the range end 200"),
])
def test_writer_refuses_unsorted_duplicate_and_out_of_range_offsets(calls: list[list[int]], message: str) -> None:
    writer = RetainedOffsetPlanWriter(io.BytesIO(), TOPIC_ID, 0, 100, 200)
    with pytest.raises(ValueError, match=message):
        for offsets in calls:
            writer.add_many(offsets)


def test_writer_refuses_bad_headers_and_use_after_finish() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        RetainedOffsetPlanWriter(io.BytesIO(), b"short", 0, 0, 1)
    with pytest.raises(ValueError, match="invalid range"):
        RetainedOffsetPlanWriter(io.BytesIO(), TOPIC_ID, 0, 5, 4)
    with pytest.raises(ValueError, match="partition"):
        RetainedOffsetPlanWriter(io.BytesIO(), TOPIC_ID, -1, 0, 4)
    writer = RetainedOffsetPlanWriter(io.BytesIO(), TOPIC_ID, 0, 0, 4)
    writer.finish()
    with pytest.raises(ValueError, match="finished"):
        writer.add(1)
    with pytest.raises(ValueError, match="finished"):
        writer.finish()


# ------------------------------------------------------------------------------------------ reader refusals
@pytest.mark.parametrize(("offsets", "message"), [
    ([100, 300, 200], r"not strictly increasing \(unsorted\): 200 after 300 at index 2"),
    ([100, 200, 200], r"not strictly increasing \(duplicate\): 200 after 200 at index 2"),
    ([99, 200], r"plan offset 99 \(index 0\) is below the range start 100"),
    ([100, 100_000], r"plan offset 100000 \(index 1\) is not below the range end 100000"),
])
def test_reader_refuses_unsorted_duplicate_and_out_of_range_offsets(tmp_path: Path, offsets: list[int],
                                                                     message: str) -> None:
    with pytest.raises(InvalidRetainedOffsetPlanError, match=message):
        read_plan(write_file(tmp_path, raw_plan(offsets)))


def test_reader_finds_an_order_fault_at_a_chunk_boundary(tmp_path: Path) -> None:
    offsets = [*range(100, 100 + CHUNK_OFFSETS), 150]  # the second chunk starts below the first's end
    message = refused(write_file(tmp_path, raw_plan(offsets)))
    assert f"unsorted): 150 after {99 + CHUNK_OFFSETS} at index {CHUNK_OFFSETS}" in message


@pytest.mark.parametrize("keep_bytes", [0, 7, 43, 44, 50, 55, 44 + 8 * 5, 44 + 8 * 9 + 11, 44 + 8 * 10 + 4])
def test_reader_refuses_a_truncated_file(tmp_path: Path, keep_bytes: int) -> None:
    data = raw_plan(list(range(100, 110)))
    assert len(data) == plan_size_bytes(10)
    message = refused(write_file(tmp_path, data[:keep_bytes]))
    assert "truncated" in message, message


def test_reader_refuses_a_file_truncated_by_whole_offsets(tmp_path: Path) -> None:
    """Cut 8 bytes out: the size is plausible, the trailer's count is not."""
    data = raw_plan(list(range(100, 110)))
    message = refused(write_file(tmp_path, data[:-20] + data[-12:]))
    assert "truncated or corrupt: its trailer counts 10 offsets, its size holds 9" in message


@pytest.mark.parametrize("position", [44, 44 + 3, 44 + 8 * 7 + 7, 12, 30, -1, -3])
def test_reader_refuses_a_flipped_byte_by_its_checksum(tmp_path: Path, position: int) -> None:
    """A flipped byte in the body, the topic id, the range or the CRC itself is reported as a checksum fault (even
    where it also breaks the order: corruption explains both)."""
    data = bytearray(raw_plan(list(range(100, 110))))
    data[position] ^= 0x40
    message = refused(write_file(tmp_path, bytes(data)))
    assert "corrupt: CRC-32C" in message and "does not match" in message, message


def test_reader_refuses_a_flipped_count_byte(tmp_path: Path) -> None:
    data = bytearray(raw_plan(list(range(100, 110))))
    data[-5] ^= 0x01  # the count's lowest byte
    assert "trailer counts 11 offsets" in refused(write_file(tmp_path, bytes(data)))


def test_reader_refuses_wrong_magic_topic_partition_and_range(tmp_path: Path) -> None:
    assert "not a retained-offset plan: magic b'MKPLAN2\\n'" in refused(
        write_file(tmp_path, raw_plan([100], magic=b"MKPLAN2\n")))
    assert "not a retained-offset plan" in refused(write_file(tmp_path, b"x" * 200))
    path = write_file(tmp_path, raw_plan([100]))
    message = refused(path, topic_id=OTHER_TOPIC_ID)
    assert f"plan is for topic id {kafka_topic_id(TOPIC_ID)}, not {kafka_topic_id(OTHER_TOPIC_ID)}" in message
    assert "plan is for partition 3, not 4" in refused(path, partition=4)
    assert "range [7, 6) is invalid" in refused(write_file(tmp_path, raw_plan([], start=7, end=6)))


def test_kafka_topic_id_is_kafkas_base64() -> None:
    assert kafka_topic_id(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert len(kafka_topic_id(TOPIC_ID)) == 22 and "=" not in kafka_topic_id(TOPIC_ID)

"""UnifiedLog: append validation, offsets, reads, rolling, timestamps, retention."""

from __future__ import annotations

import os
import struct

import pytest

from minikafka.protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from minikafka.protocol.records import CompressionType, RecordBatch, TimestampType, iter_batches
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from tests.storage.conftest import T0, LogFactory, batch


def offsets_in(data: bytes) -> list[int]:
    return [r.offset for b in iter_batches(data) for r in b.records()]


def test_append_assigns_offsets_and_leader_epoch(make_log: LogFactory) -> None:
    log = make_log()
    first = log.append_as_leader(batch(b"a", b"b", b"c"), leader_epoch=7)
    second = log.append_as_leader(batch(b"d"))
    assert (first.first_offset, first.last_offset, first.record_count) == (0, 2, 3)
    assert (second.first_offset, second.last_offset) == (3, 3)
    assert first.log_append_time_ms == -1 and not first.duplicate
    assert log.log_end_offset == log.high_watermark == log.last_stable_offset == 4
    data = log.read(0, 1 << 20).records
    batches = list(iter_batches(data))
    assert [b.base_offset for b in batches] == [0, 3]
    assert batches[0].partition_leader_epoch == 7
    assert all(b.is_valid() for b in batches)
    assert offsets_in(data) == [0, 1, 2, 3]


def test_log_append_time_sets_max_timestamp_and_keeps_crc_valid(make_log: LogFactory, clock: FakeClock) -> None:
    log = make_log({"message.timestamp.type": "LogAppendTime"})
    clock.advance_ms(5000)
    info = log.append_as_leader(batch(b"a", timestamp_ms=T0 - 100_000))
    assert info.log_append_time_ms == T0 + 5000
    stored = RecordBatch(log.read(0, 1000).records, 0)
    assert stored.is_valid()
    assert stored.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert stored.max_timestamp == T0 + 5000


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"\x00" * 5, CorruptMessageError),
        (batch(b"a") + batch(b"b"), InvalidRecordError),
        (batch(b"a") + b"\x00\x01", CorruptMessageError),
        (batch(b"a", is_control=True), InvalidRecordError),
    ],
)
def test_bad_payloads_are_rejected(make_log: LogFactory, payload: bytes, error: type[Exception]) -> None:
    log = make_log()
    with pytest.raises(error):
        log.append_as_leader(payload)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_crc_mismatch_and_wrong_magic(make_log: LogFactory) -> None:
    log = make_log()
    corrupt = bytearray(batch(b"hello"))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        log.append_as_leader(corrupt)
    magic1 = bytearray(batch(b"x"))
    magic1[16] = 1
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(magic1)


def test_record_count_must_match_last_offset_delta(make_log: LogFactory) -> None:
    log = make_log()
    raw = bytearray(batch(b"a", b"b"))
    struct.pack_into(">i", raw, 57, 3)  # recordsCount; CRC covers it, so recompute
    import crc32c

    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(raw)


def test_size_limits(make_log: LogFactory) -> None:
    log = make_log({"max.message.bytes": "100"})
    with pytest.raises(MessageTooLargeError):
        log.append_as_leader(batch(b"x" * 200))
    log = make_log({"segment.bytes": "100"})
    with pytest.raises(RecordListTooLargeError):
        log.append_as_leader(batch(b"x" * 200))


def test_each_append_validates_with_the_config_of_that_moment(make_log: LogFactory) -> None:
    """The log keeps one LogValidator per config: an update_config (AlterConfigs) is seen by the next append."""
    log = make_log()
    log.append_as_leader(batch(b"x" * 200))
    log.update_config(LogConfig.from_props({"max.message.bytes": "100"}))
    with pytest.raises(MessageTooLargeError):
        log.append_as_leader(batch(b"x" * 200))
    log.update_config(LogConfig.from_props({"cleanup.policy": "compact"}))
    log.append_as_leader(batch(b"x" * 200))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch(b"a", keys=[None]))
    log.config = LogConfig.from_props({})  # replaced without update_config: still seen
    log.append_as_leader(batch(b"a", keys=[None]))
    assert log.log_end_offset == 3


def test_stored_batch_is_the_clients_bytes_after_the_new_offset_length_and_epoch(make_log: LogFactory) -> None:
    """A CreateTime append writes the client's batch unchanged past its first 16 bytes (base offset, length and
    leader epoch, outside the CRC), whatever buffer type the request handed over."""
    log = make_log()
    sent = batch(b"a", b"b", producer_id=7, producer_epoch=0, base_sequence=0)
    log.append_as_leader(batch(b"z"))
    log.append_as_leader(memoryview(sent), leader_epoch=3)
    stored = bytes(log.read(1, 1 << 20).records)
    assert stored[16:] == sent[16:]
    assert struct.unpack_from(">qii", stored) == (1, len(sent) - 12, 3)
    assert RecordBatch(stored, 0).is_valid()
    assert log.producer_state.producers[7].last_sequence == 1


def test_compacted_topic_rejects_keyless_records_and_appends_nothing(make_log: LogFactory) -> None:
    log = make_log({"cleanup.policy": "compact"})
    with pytest.raises(InvalidRecordError) as excinfo:
        log.append_as_leader(batch(b"a", b"b", b"c", keys=[b"k", None, None]))
    msg = "Compacted topic cannot accept message without key in topic partition topic-0."
    assert excinfo.value.message == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first three "
        f"errors at most: [RecordError(batchIndex=1, message='{msg}'), RecordError(batchIndex=2, message='{msg}')]")
    assert excinfo.value.record_errors == ((1, msg), (2, msg))
    assert log.log_end_offset == 0 and log.size_bytes == 0
    # empty key and null value (tombstone) are fine
    log.append_as_leader(batch(None, keys=[b""]))
    assert log.log_end_offset == 1


def test_timestamp_window(make_log: LogFactory) -> None:
    log = make_log({"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "1000"})
    with pytest.raises(InvalidTimestampError) as excinfo:
        log.append_as_leader(batch(b"a", timestamp_ms=T0 - 5000))
    assert excinfo.value.record_errors[0][0] == 0
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(batch(b"a", timestamp_ms=T0 + 5000))
    log.append_as_leader(batch(b"a", timestamp_ms=T0 - 500))
    assert log.log_end_offset == 1


def test_read_semantics(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "300"})
    for i in range(10):
        log.append_as_leader(batch(b"v" * 50, b"w%d" % i))
    assert len(log.segments()) > 2
    assert log.log_end_offset == 20
    everything = log.read(0, 1 << 20).records
    assert offsets_in(everything) == list(range(20))  # across segment boundaries
    # a start offset inside a batch returns the whole batch containing it
    assert offsets_in(log.read(5, 1 << 20).records)[:2] == [4, 5]
    # min_one_message returns one whole batch even if larger than max_bytes
    one = log.read(0, 1).records
    assert len(list(iter_batches(one))) == 1
    assert log.read(0, 1, min_one_message=False).records == b""
    # max_offset is exclusive and batch-aligned
    assert offsets_in(log.read(0, 1 << 20, max_offset=6).records) == list(range(6))
    # LEO: empty; beyond / below: out of range
    assert log.read(20, 1000).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(21, 1000)
    log.maybe_increment_log_start_offset(4)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(21)


def test_roll_on_segment_bytes(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200"})
    for _ in range(6):
        log.append_as_leader(batch(b"x" * 30))
    segments = log.segments()
    assert len(segments) >= 3
    assert all(s.size_bytes <= 200 for s in segments)
    assert [s.base_offset for s in segments] == sorted(s.base_offset for s in segments)
    assert (log.dir / "00000000000000000000.log").exists()
    # the roll wrote a producer-state snapshot named after the new segment
    assert (log.dir / f"{segments[-1].base_offset:020d}.snapshot").exists()


def test_roll_on_segment_ms_uses_record_timestamps(make_log: LogFactory, clock: FakeClock) -> None:
    log = make_log({"segment.ms": "1000"})
    log.append_as_leader(batch(b"a", timestamp_ms=T0))
    clock.advance_ms(10_000)  # wall clock moves, but record timestamps decide on append
    log.append_as_leader(batch(b"b", timestamp_ms=T0 + 500))
    assert len(log.segments()) == 1
    log.append_as_leader(batch(b"c", timestamp_ms=T0 + 1500))
    assert [s.base_offset for s in log.segments()] == [0, 2]


def test_roll_if_due_uses_broker_time_of_first_append(make_log: LogFactory, clock: FakeClock) -> None:
    log = make_log({"segment.ms": "1000"})
    assert not log.roll_if_due(clock.time_ms() + 10_000)  # empty active segment never rolls
    log.append_as_leader(batch(b"a", timestamp_ms=T0 + 10_000_000))  # producer clock far ahead
    assert not log.roll_if_due(clock.time_ms() + 999)
    assert log.roll_if_due(clock.time_ms() + 1000)
    assert [s.base_offset for s in log.segments()] == [0, 1]


def test_compacted_roll_interval_is_min_of_segment_ms_and_max_lag(make_log: LogFactory, clock: FakeClock) -> None:
    log = make_log({"cleanup.policy": "compact", "segment.ms": "100000", "max.compaction.lag.ms": "2000"})
    log.append_as_leader(batch(b"a"))
    assert not log.roll_if_due(clock.time_ms() + 1999)
    assert log.roll_if_due(clock.time_ms() + 2000)


def test_reads_end_at_the_last_whole_batch_for_every_size_and_start(make_log: LogFactory) -> None:
    """The read's end is found from the offset index's batch starts (LogSegment.read_with_last_offset); for every
    start offset and max_bytes it must be the same cut as a scan of every batch length from the read's start, and
    the reported last offset that of the last batch returned (batches of 1-5 records of varied sizes, an index
    entry after most batches)."""
    log = make_log({"index.interval.bytes": "150", "segment.bytes": "100000"})
    for i in range(40):
        log.append_as_leader(batch(*[b"v" * (20 + 37 * ((i + r) % 7)) for r in range(1 + i % 5)]))
    segment = log.segments()[0]
    assert segment.offset_index.entries > 10
    everything = log.read(0, 1 << 20).records
    batches = [(b.position, b.size_bytes, b.base_offset, b.last_offset) for b in iter_batches(everything)]
    for first, (start, _, base, _) in enumerate(batches):
        for max_bytes in range(1, len(everything) - start + 2, 13):
            records, last = segment.read_with_last_offset(base, max_bytes)
            fitting = [entry for entry in batches[first:] if entry[0] + entry[1] - start <= max_bytes]
            if not fitting:  # min_one_message: the first batch whole
                fitting = batches[first:first + 1]
            end = fitting[-1][0] + fitting[-1][1]
            assert bytes(records) == everything[start:end], (base, max_bytes)
            assert last == fitting[-1][3], (base, max_bytes)
            assert log.read(base, max_bytes).records == records


def test_a_read_continuing_where_the_last_ended_is_one_pread_and_reads_what_a_fresh_log_reads(
        make_log: LogFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A consumer's next Fetch starts where its last read ended (LogSegment keeps those positions): it must read
    the same bytes as a read without kept positions through appends, catching up with the log end,
    and a truncation that cuts under kept positions (other sizes re-appended there), and the
    continuing read is a single pread where a cold one first reads batch headers."""
    log = make_log({"index.interval.bytes": "150", "segment.bytes": "100000"})

    def append(count: int, size: int) -> None:
        for i in range(count):
            log.append_as_leader(batch(*[b"v" * (size + 11 * ((i + r) % 5)) for r in range(1 + i % 3)]))

    def cold_read(offset: int, max_bytes: int) -> bytes:
        """The read with no kept positions (as the segments had none), keeping them for the next warm read."""
        kept = [(segment, dict(segment._read_ends)) for segment in log.segments()]
        for segment, _ in kept:
            segment._read_ends.clear()
        try:
            return bytes(log.read(offset, max_bytes).records)
        finally:
            for segment, read_ends in kept:
                segment._read_ends.clear()
                segment._read_ends.update(read_ends)

    def consume(offset: int, max_bytes: int) -> int:
        """Read from `offset` until caught up, checking every read; the next offset."""
        while True:
            records = bytes(log.read(offset, max_bytes).records)
            assert records == cold_read(offset, max_bytes), (offset, max_bytes)
            if not records:
                return offset
            offset = offsets_in(records)[-1] + 1

    append(30, 40)
    offset = consume(0, 700)
    assert offset == log.log_end_offset
    assert log.read(offset, 700).records == b""  # caught up, again
    append(10, 90)  # the log grows past where the consumer stopped
    offset = consume(offset, 500)
    assert offset == log.log_end_offset
    consume(0, 333)  # a second consumer, other steps
    cut = [b.base_offset for b in iter_batches(bytes(log.read(0, 1 << 20).records))][12]
    kept = offsets_in(bytes(log.read(cut, 400).records))[-1] + 1  # a position kept past the cut
    log.truncate_to(cut)  # at a batch start
    append(15, 25)
    assert cut < kept < log.log_end_offset
    for start in (kept, 0, cut, cut + 4):
        consume(start, 400)

    segment = log.segments()[-1]
    kept = offsets_in(bytes(log.read(0, 300).records))[-1] + 1
    assert segment.read_with_last_offset(kept, 20, min_one_message=False) == (b"", -1)  # a batch over max_bytes
    whole, last = segment.read_with_last_offset(kept, 20)  # ... or all of it
    assert offsets_in(bytes(whole))[0] == kept and offsets_in(bytes(whole))[-1] == last
    assert whole == cold_read(kept, 20)

    preads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, length: int, position: int) -> bytes:
        preads.append(length)
        return real_pread(fd, length, position)

    first = offsets_in(bytes(log.read(0, 400).records))[-1] + 1
    monkeypatch.setattr(os, "pread", counting_pread)
    continued = log.read(first, 400).records
    assert preads == [400] and continued
    preads.clear()
    segment._read_ends.clear()
    assert log.read(first, 400).records == continued
    assert len(preads) > 1  # the cold read looks for the batch first


def test_index_entries_and_trimmed_files(make_log: LogFactory) -> None:
    log = make_log({"index.interval.bytes": "100", "segment.bytes": "100000"})
    for i in range(20):
        log.append_as_leader(batch(b"x" * 60, timestamp_ms=T0 + i * 10))
    segment = log.segments()[0]
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    assert entries, "expected sparse index entries"
    data = log.read(0, 1 << 20).records
    positions = {b.position: b for b in iter_batches(data)}
    for offset, position in entries:
        assert positions[position].last_offset == offset  # what kafka-dump-log checks
    log.close()
    index_bytes = (log.dir / "00000000000000000000.index").read_bytes()
    time_bytes = (log.dir / "00000000000000000000.timeindex").read_bytes()
    assert len(index_bytes) == 8 * len(entries)
    assert len(time_bytes) % 12 == 0 and len(time_bytes) > 0
    rel, pos = struct.unpack_from(">ii", index_bytes, 0)
    assert (rel, pos) == entries[0]
    timestamps = [t for t, _ in struct.iter_unpack(">qi", time_bytes)]
    assert timestamps == sorted(set(timestamps))
    assert timestamps[-1] == T0 + 190  # final entry written when the segment stopped being active


def test_fetch_offset_by_timestamp(make_log: LogFactory) -> None:
    log = make_log({"index.interval.bytes": "50", "segment.bytes": "400"})
    assert log.fetch_offset_by_timestamp(-3) is None
    for i in range(10):
        log.append_as_leader(batch(b"v" * 40, b"w", timestamp_ms=T0 + i * 100))
    assert log.fetch_offset_by_timestamp(-1) == (20, -1)
    assert log.fetch_offset_by_timestamp(-2) == (0, -1)
    assert log.fetch_offset_by_timestamp(T0) == (0, T0)
    assert log.fetch_offset_by_timestamp(T0 + 1) == (1, T0 + 1)
    assert log.fetch_offset_by_timestamp(T0 + 2) == (2, T0 + 100)
    assert log.fetch_offset_by_timestamp(T0 + 750) == (16, T0 + 800)
    assert log.fetch_offset_by_timestamp(T0 + 10_000) is None
    assert log.fetch_offset_by_timestamp(-3) == (19, T0 + 901)


def test_retention_by_time_and_size(make_log: LogFactory, clock: FakeClock) -> None:
    log = make_log({"segment.bytes": "200", "retention.ms": "10000", "file.delete.delay.ms": "0"})
    for i in range(6):
        log.append_as_leader(batch(b"x" * 30, timestamp_ms=T0 + i * 1000))
    count = len(log.segments())
    assert log.delete_retention_segments(T0 + 9000) == 0
    deleted = log.delete_retention_segments(T0 + 100_000)
    assert deleted == count - 1  # never the active segment
    assert log.log_start_offset == log.segments()[0].base_offset
    assert not list(log.dir.glob("*.deleted"))

    log2 = make_log({"segment.bytes": "200", "retention.bytes": "250"})
    for _ in range(6):
        log2.append_as_leader(batch(b"x" * 30))
    log2.delete_retention_segments(T0)
    assert log2.size_bytes <= 250 + 200
    assert log2.log_start_offset > 0


def test_compact_only_topic_ignores_time_retention(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200", "retention.ms": "1", "cleanup.policy": "compact"})
    for _ in range(6):
        log.append_as_leader(batch(b"x" * 30))
    assert log.delete_retention_segments(T0 + 10**9) == 0
    log.maybe_increment_log_start_offset(4)  # only log-start breaches delete
    assert log.delete_retention_segments(T0) >= 1
    assert log.segments()[0].base_offset <= 4


def test_concurrent_appends_reads_and_rolls(make_log: LogFactory, clock: FakeClock) -> None:
    import threading

    log = make_log({"segment.bytes": "500"})
    errors: list[BaseException] = []

    def appender() -> None:
        try:
            for _ in range(100):
                log.append_as_leader(batch(b"x" * 20))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(200):
                data = log.read(log.log_start_offset, 4096).records
                assert all(b.is_valid() for b in iter_batches(data))
                log.roll_if_due(clock.time_ms())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=appender) for _ in range(3)] + [threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert log.log_end_offset == 300
    assert offsets_in(log.read(0, 1 << 20).records) == list(range(300))


def test_roll_defers_fsync_and_flush_rolled_segments_advances_the_recovery_point(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200"})
    for _ in range(4):
        log.append_as_leader(batch(b"x" * 100))
    assert len(log.segments()) > 1
    assert log.recovery_point == 0  # the roll itself did not fsync
    log.flush_rolled_segments()
    assert log.recovery_point == log.segments()[-1].base_offset > 0


@pytest.mark.parametrize(("topic_codec", "stored"), [
    ("lz4", CompressionType.LZ4), ("uncompressed", CompressionType.NONE), ("producer", CompressionType.GZIP)])
def test_topic_compression_type_recompresses_on_append(make_log: LogFactory, topic_codec: str,
                                                       stored: CompressionType) -> None:
    log = make_log({"compression.type": topic_codec})
    sent = batch(b"v0", b"v1", b"v2", producer_id=7, producer_epoch=1, base_sequence=0,
                 compression=CompressionType.GZIP, is_transactional=False)
    info = log.append_as_leader(sent)
    assert (info.first_offset, info.last_offset) == (0, 2)
    (appended,) = iter_batches(log.read(0, 1 << 20).records)
    appended.ensure_valid()
    assert appended.compression_type == stored
    assert (appended.producer_id, appended.producer_epoch, appended.base_sequence) == (7, 1, 0)
    assert appended.max_timestamp == T0 + 2
    assert [(r.offset, r.timestamp, r.key, r.value) for r in appended.records()] == [
        (i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    # the retried batch is still recognised as a duplicate of the recompressed one
    assert log.append_as_leader(sent).duplicate


def test_truncate_to_removes_records_across_segments_and_the_producer_state_past_it(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200"})
    for sequence in range(6):
        log.append_as_leader(batch(b"x" * 40, producer_id=7, producer_epoch=0, base_sequence=sequence))
    assert len(log.segments()) > 2 and log.log_end_offset == 6
    assert log.truncate_to(2) == 4
    assert (log.log_end_offset, log.high_watermark) == (2, 2)
    assert [segment.base_offset for segment in log.segments()] == [0, 1]
    assert offsets_in(log.read(0, 1 << 20).records) == [0, 1]
    assert log.active_producers()[0].last_sequence == 1  # the producer state as of offset 2
    # the next batch takes offset 2 again and continues the producer's sequence from there
    assert log.append_as_leader(batch(b"y", producer_id=7, producer_epoch=0, base_sequence=2)).first_offset == 2
    assert log.truncate_to(9) == 0
    log.close()
    reopened = make_log({"segment.bytes": "200"})
    assert reopened.log_end_offset == 3
    assert offsets_in(reopened.read(0, 1 << 20).records) == [0, 1, 2]


def test_the_high_watermark_cap_holds_the_high_watermark_and_the_latest_offset(make_log: LogFactory) -> None:
    log = make_log()
    log.append_as_leader(batch(b"a", b"b", b"c"))
    log.high_watermark_cap = 1
    assert (log.high_watermark, log.fetch_offset_by_timestamp(-1)) == (1, (1, -1))
    assert log.read(0, 1 << 20).high_watermark == 1
    log.high_watermark_cap = None
    assert log.high_watermark == 3

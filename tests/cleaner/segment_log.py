"""Test helper: a partition directory built segment by segment with storage's LogSegment, no validation.

Lets cleaner tests write exactly the batches a scenario needs (unkeyed records, control batches, arbitrary
producer ids) and swap cleaned groups in the way UnifiedLog.replace_segments does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.cleaner.cleaner import Cleaner, CleaningResult, LastProducerRecord
from minikafka.cleaner.log_to_clean import LogToClean
from minikafka.cleaner.offset_map import OffsetMap
from minikafka.protocol.records import CompressionType, Record, RecordBatch, TimestampType
from minikafka.protocol.records.builder import build_batch, build_control_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_segment import CLEANED_SUFFIX, LogSegment
from minikafka.storage.transaction_index import AbortedTransaction

KeyValue = tuple[bytes | None, bytes | None]


@dataclass(frozen=True)
class TopicConfig:
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    delete_retention_ms: int = 86_400_000


class SegmentLog:
    def __init__(self, directory: Path, clock: FakeClock, config: TopicConfig | None = None) -> None:
        self.dir = directory
        self.clock = clock
        self.config = config or TopicConfig()
        self.segments: list[LogSegment] = [self._new_segment(0)]
        self.next_offset = 0

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment(self.dir, base_offset, index_interval_bytes=self.config.index_interval_bytes,
                          max_index_size_bytes=self.config.segment_index_bytes)

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    def append_batch(self, data: bytes) -> RecordBatch:
        batch = RecordBatch(data)
        self.active.append(data, batch.last_offset, batch.max_timestamp, batch.last_offset)
        self.next_offset = batch.next_offset
        return batch

    def append(
        self,
        records: Sequence[KeyValue],
        *,
        timestamp: int | None = None,
        offsets: Sequence[int] | None = None,
        compression: CompressionType = CompressionType.NONE,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    ) -> RecordBatch:
        ts = self.clock.time_ms() if timestamp is None else timestamp
        if offsets is None:
            offsets = list(range(self.next_offset, self.next_offset + len(records)))
        built = [Record(offset, ts, key, value) for offset, (key, value) in zip(offsets, records)]
        return self.append_batch(build_batch(
            built, base_offset=offsets[0], compression=compression, producer_id=producer_id,
            producer_epoch=producer_epoch, base_sequence=base_sequence, is_transactional=transactional,
            timestamp_type=timestamp_type,
            max_timestamp=ts if timestamp_type == TimestampType.LOG_APPEND_TIME else None))

    def append_marker(self, producer_id: int, *, commit: bool, producer_epoch: int = 0,
                      first_offset: int | None = None) -> RecordBatch:
        """A COMMIT/ABORT marker; an ABORT with `first_offset` also gets an entry in the segment's `.txnindex`."""
        offset = self.next_offset
        batch = self.append_batch(build_control_batch(
            base_offset=offset, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
            coordinator_epoch=0, timestamp_ms=self.clock.time_ms()))
        if not commit and first_offset is not None:
            self.active.txn_index.append(AbortedTransaction(producer_id, first_offset, offset, offset))
        return batch

    def roll(self, base_offset: int | None = None) -> None:
        self.active.on_becoming_inactive()
        self.active.flush()
        base = self.next_offset if base_offset is None else base_offset
        self.next_offset = base
        self.segments.append(self._new_segment(base))

    # ------------------------------------------------------------- inspection
    def batches(self) -> list[RecordBatch]:
        out = []
        for segment in self.segments:
            for _, batch in segment.log.batches(0):
                out.append(RecordBatch(bytes(batch.raw())))
        return out

    def records(self) -> list[Record]:
        return [r for b in self.batches() if not b.is_control for r in b.records()]

    def offsets(self) -> list[int]:
        return [r.offset for r in self.records()]

    def key_values(self) -> list[tuple[int, bytes | None, bytes | None]]:
        return [(r.offset, r.key, r.value) for r in self.records()]

    def aborted_transactions(self) -> list[AbortedTransaction]:
        """Every entry of every segment's transaction index, in log order."""
        return [t for segment in self.segments for t in segment.txn_index.all_aborted_transactions()]

    # ---------------------------------------------------------------- cleaning
    def swap(self, result: CleaningResult) -> None:
        for group in result.groups:
            for source in group.sources:
                self.segments.remove(source)
                source.close()
                source.delete()
            group.cleaned.change_file_suffixes(CLEANED_SUFFIX, "")
            self.segments.append(group.cleaned)
            self.segments.sort(key=lambda s: s.base_offset)

    def clean(
        self,
        cleaner: Cleaner,
        first_dirty_offset: int,
        *,
        now_ms: int | None = None,
        producers: Mapping[int, LastProducerRecord] | None = None,
        uncleanable_offset: int | None = None,
    ) -> CleaningResult:
        to_clean = LogToClean.of(self.segments, first_dirty_offset,
                                 self.active.base_offset if uncleanable_offset is None else uncleanable_offset)
        result = cleaner.clean(
            self.segments, first_dirty_offset=first_dirty_offset,
            first_uncleanable_offset=to_clean.first_uncleanable_offset,
            now_ms=self.clock.time_ms() if now_ms is None else now_ms, config=self.config, producers=producers)
        self.swap(result)
        return result


def make_cleaner(clock: FakeClock, slots: int = 1024, load_factor: float = 0.9) -> Cleaner:
    return Cleaner(OffsetMap(OffsetMap.memory_bytes_for_slots(slots), load_factor), clock)


def kv(*pairs: str) -> list[KeyValue]:
    """kv("k1=a", "k2=", "=x") -> [(b"k1", b"a"), (b"k2", None), (None, b"x")]; "k=" is a tombstone."""
    out: list[KeyValue] = []
    for pair in pairs:
        key, _, value = pair.partition("=")
        out.append((key.encode() if key else None, value.encode() if value else None))
    return out

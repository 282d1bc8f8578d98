"""Where the recopy pass writes one source segment's retained batches (`CleanedSegmentWriter`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.transaction_metadata import CleanedTransactionMetadata
from minikafka.storage.log_segment import LogSegment

_WRITE_CHUNK_BYTES = 1 << 20


class LastProducerRecord(NamedTuple):
    """Producer-state view (Kafka's lastRecordsOfActiveProducers): last data offset (None if the producer's
    last entry is a marker) and current epoch."""

    last_data_offset: int | None
    producer_epoch: int


class CleanedSegmentWriter:
    """The recopy pass's output for one source segment: owns the bytes not yet appended to the cleaned segment
    (appended every _WRITE_CHUNK_BYTES, with their last offset and max timestamp so far) and carries the round's
    parameters the per-batch decisions read. Not thread-safe: one per source segment of a round."""

    def __init__(self, dest: LogSegment, stats: CleanerStats, throttle: Callable[[int], None], now_ms: int,
                 delete_retention_ms: int, transactions: CleanedTransactionMetadata,
                 producers: Mapping[int, LastProducerRecord], upper_bound_offset: int) -> None:
        self.dest, self.stats, self._throttle = dest, stats, throttle
        self.now_ms, self.delete_retention_ms, self.upper_bound_offset = now_ms, delete_retention_ms, upper_bound_offset
        self.transactions, self.producers = transactions, producers
        #: last offsets of batches that may be kept even when empty: producers' last data batches, the round's last
        self.maybe_retained_empty = {last.last_data_offset for last in producers.values()
                                     if last.last_data_offset is not None} | {upper_bound_offset - 1}
        self._out = bytearray()
        self._last_offset = self._max_timestamp = self._offset_of_max_timestamp = -1

    def write(self, data: bytes | memoryview, last_offset: int, max_timestamp: int) -> None:
        self._out += data
        self._last_offset = last_offset
        if max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max_timestamp = max_timestamp, last_offset
        if len(self._out) >= _WRITE_CHUNK_BYTES:
            self.flush()

    def flush(self) -> None:
        data = self._out
        if data:
            self._throttle(len(data))
            self.dest.append(data, self._last_offset, self._max_timestamp, self._offset_of_max_timestamp)
            self.stats.bytes_written += len(data)
            self._out = bytearray()  # the max timestamp carries on: each append is given the segment's so far

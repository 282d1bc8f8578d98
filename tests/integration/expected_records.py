"""`ExpectedRecords`: the records a test produces, what the producer acknowledged, and checks of what came back.

A consumed record is normalised by every client driver to a `ConsumedRecord` so that one set of checks (and
one digest) works for confluent-kafka, kafka-python and aiokafka alike.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class ProducedRecord:
    index: int
    key: bytes
    value: bytes
    headers: Headers
    timestamp_ms: int


@dataclass(frozen=True)
class ConsumedRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp_ms: int
    timestamp_type: int  # 0 = CreateTime, 1 = LogAppendTime (Kafka's numbering)


class ExpectedRecords:
    """Generates `count` keyed records with headers and explicit timestamps, and remembers each record's
    acknowledged (partition, offset) from the producer's delivery reports. Not thread-safe; one test owns it."""

    def __init__(self, count: int, base_timestamp_ms: int | None = None) -> None:
        # Within the last hour so the default 7-day retention never touches the records.
        base_ms = base_timestamp_ms if base_timestamp_ms is not None else int(time.time() * 1000) - 3_600_000
        self.records = [self._make(i, base_ms + i) for i in range(count)]
        self.acked: dict[tuple[int, int], int] = {}  # (partition, offset) -> record index

    @staticmethod
    def _make(index: int, timestamp_ms: int) -> ProducedRecord:
        value = f"value-{index:08d}-".encode() + bytes((index % 256, (index * 7) % 256)) * 4
        headers: Headers = (("idx", str(index).encode()),)
        if index % 2 == 0:
            headers += (("even", b"\x00\x01\xff"),)
        return ProducedRecord(index, f"k{index}".encode(), value, headers, timestamp_ms)

    def ack(self, index: int, partition: int, offset: int) -> None:
        previous = self.acked.setdefault((partition, offset), index)
        assert previous == index, f"two records acknowledged at {partition}/{offset}: {previous} and {index}"

    def check_acked_all(self) -> None:
        assert len(self.acked) == len(self.records), f"only {len(self.acked)} of {len(self.records)} acked"

    def check_consumed(self, consumed: list[ConsumedRecord], partitions: int) -> None:
        """Every acknowledged record is back at its offset, intact; each partition holds exactly offsets
        0..n-1 in producer order; nothing extra came back."""
        by_partition: dict[int, list[ConsumedRecord]] = {p: [] for p in range(partitions)}
        for record in consumed:
            by_partition[record.partition].append(record)
        for partition, records in by_partition.items():
            offsets = [r.offset for r in records]
            assert offsets == list(range(len(records))), f"partition {partition}: offsets not 0..n-1 in order"
            indexes = [self.acked[(partition, r.offset)] for r in records]
            assert indexes == sorted(indexes), f"partition {partition}: records not in producer order"
        assert len(consumed) == len(self.acked), f"consumed {len(consumed)}, acknowledged {len(self.acked)}"
        for record in consumed:
            expected = self.records[self.acked[(record.partition, record.offset)]]
            where = f"partition {record.partition} offset {record.offset}"
            assert record.key == expected.key, f"{where}: key {record.key!r} != {expected.key!r}"
            assert record.value == expected.value, f"{where}: value {record.value!r} != {expected.value!r}"
            assert record.headers == expected.headers, f"{where}: headers {record.headers} != {expected.headers}"
            assert record.timestamp_type == 0, f"{where}: timestamp type {record.timestamp_type}, want CreateTime"
            assert record.timestamp_ms == expected.timestamp_ms, f"{where}: timestamp {record.timestamp_ms}"


def digest(consumed: list[ConsumedRecord]) -> str:
    """sha256 over every consumed record's partition, offset, key, value, headers and timestamp."""
    sha = hashlib.sha256()
    for record in sorted(consumed, key=lambda r: (r.partition, r.offset)):
        sha.update(repr(record).encode())
    return sha.hexdigest()

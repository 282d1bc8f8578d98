"""`SharePartition`'s in-flight state kept per batch and bounded as Apache Kafka 4.3.1 bounds it: the window
`end_offset - start_offset + 1` counts against `group.share.partition.max.record.locks` (Kafka's
canAcquireRecords), and a gap in the log or a large batch costs one in-flight batch, not one entry per offset.
Memory is measured with tracemalloc around the one call; time with a fake clock for the locks."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_types import (
    AcknowledgementBatch,
    AcknowledgeType,
    FetchedBatch,
    RecordState,
    ShareGroupConfig,
)

MEMBER = "member-1"
ACCEPT, RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)
LOCK_MS = 30_000


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def make(clock: FakeClock, max_locks: int = 2000) -> SharePartition:
    partition = SharePartition("g", b"\x01" * 16, 0, clock_ms=clock, config=ShareGroupConfig(
        record_lock_duration_ms=LOCK_MS, partition_max_record_locks=max_locks))
    partition.initialize(0, 0, [])
    return partition


def acquire(partition: SharePartition, first: int, last: int, max_records: int = 500) -> int:
    """Read the log batch [first, last] from the partition's next fetch offset, as the broker does."""
    result = partition.acquire(MEMBER, partition.next_fetch_offset(), [FetchedBatch(first, last)],
                               max_fetch_records=max_records, batch_size=500)
    return result.count


def ack(partition: SharePartition, first: int, last: int, ack_type: int = ACCEPT) -> None:
    partition.acknowledge(MEMBER, [AcknowledgementBatch(first, last, (ack_type,))])


def peak_bytes(call: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_record_held_at_the_start_offset_fills_the_window() -> None:
    """Kafka counts endOffset - startOffset + 1, not the unacknowledged records: with offset 0 held, the records
    acknowledged behind it still fill the window, and acquisition stops at max.record.locks."""
    clock = FakeClock()
    partition = make(clock, max_locks=20)
    assert acquire(partition, 0, 0) == 1  # held: never acknowledged
    assert acquire(partition, 1, 10) == 10
    ack(partition, 1, 10)
    assert acquire(partition, 11, 19) == 9
    ack(partition, 11, 19)
    assert partition.in_flight_count() == 1
    assert partition.can_acquire_records() is False  # 20 offsets from the SPSO to the SPEO
    assert acquire(partition, 20, 29) == 0
    assert partition.end_offset == 19
    # the held record's lock runs out: it is fetched again (inside the window), nothing past the window
    clock.now_ms += LOCK_MS
    partition.expire_acquisition_locks()
    assert partition.can_acquire_records() is True
    assert partition.next_fetch_offset() == 0
    assert partition.acquire(MEMBER, 0, [FetchedBatch(0, 0), FetchedBatch(1, 29)], max_fetch_records=500,
                             batch_size=500).count == 1
    assert partition.offset_state(0) == (RecordState.ACQUIRED, 2, MEMBER)
    ack(partition, 0, 0)
    assert (partition.start_offset, partition.in_flight_count()) == (20, 0)
    assert acquire(partition, 20, 29) == 10


def test_a_stuck_record_keeps_the_state_bounded() -> None:
    """200,000 records acknowledged one fetch at a time behind a record held at the SPSO: the window stops new
    acquisitions at the limit, so the state never holds more than the window."""
    clock = FakeClock()
    partition = make(clock, max_locks=2000)
    acquire(partition, 0, 0)
    offset = 1
    for _ in range(400):
        if not partition.can_acquire_records():
            break
        count = acquire(partition, offset, offset + 499)
        ack(partition, offset, offset + count - 1)
        offset += count
    assert partition.can_acquire_records() is False
    # the limit is soft in batch_optimized mode: the last log batch is acquired whole (Kafka)
    assert partition.end_offset - partition.start_offset + 1 < 2000 + 500
    assert partition.in_flight_batch_count() <= 5
    assert peak_bytes(lambda: acquire(partition, offset, offset + 499)) < 64 * 1024


def test_a_two_million_offset_gap_costs_constant_memory_and_time() -> None:
    """A compacted topic whose first surviving batch is at 2,000,000: one acquisition, one in-flight batch."""
    clock = FakeClock()
    partition = make(clock)
    started = time.perf_counter()
    peak = peak_bytes(lambda: acquire(partition, 2_000_000, 2_000_009))
    elapsed_s = time.perf_counter() - started
    assert partition.offset_state(2_000_000) == (RecordState.ACQUIRED, 1, MEMBER)
    assert partition.start_offset == 2_000_000
    assert peak < 64 * 1024, peak
    assert elapsed_s < 0.1, elapsed_s


def test_a_gap_behind_records_in_flight_is_one_batch() -> None:
    """Records in flight, then the log skips 2,000,000 offsets: the gap is archived as one batch (constant memory),
    and the window from the SPSO spans it, so nothing more is acquired until the SPSO passes it (Kafka)."""
    clock = FakeClock()
    partition = make(clock)
    acquire(partition, 0, 9)
    peak = peak_bytes(lambda: partition.acquire(MEMBER, 10, [FetchedBatch(2_000_010, 2_000_019)],
                                                max_fetch_records=500, batch_size=500))
    assert peak < 64 * 1024, peak
    assert partition.offset_state(1_000_000) == (RecordState.ARCHIVED, 0, "")
    assert partition.in_flight_batch_count() == 3
    assert partition.can_acquire_records() is False
    ack(partition, 0, 9)
    assert partition.start_offset == 2_000_010
    assert partition.in_flight_batch_count() == 1


def test_a_whole_batch_keeps_batch_state_until_an_acknowledgement_splits_it() -> None:
    """A million-record log batch acquired and accepted whole costs one batch; acknowledging part of it splits
    only that batch, and the SPSO moves as Kafka's does."""
    clock = FakeClock()
    partition = make(clock)
    peak = peak_bytes(lambda: acquire(partition, 0, 999_999))
    assert peak < 64 * 1024, peak
    assert partition.in_flight_count() == 1_000_000
    assert peak_bytes(lambda: ack(partition, 0, 999_999)) < 64 * 1024
    assert (partition.start_offset, partition.in_flight_batch_count()) == (1_000_000, 0)
    acquire(partition, 1_000_000, 1_000_099)
    ack(partition, 1_000_000, 1_000_009, RELEASE)
    ack(partition, 1_000_010, 1_000_019)
    assert partition.offset_state(1_000_005) == (RecordState.AVAILABLE, 1, "")
    assert partition.offset_state(1_000_015) == (RecordState.ACKNOWLEDGED, 1, "")
    assert partition.offset_state(1_000_050) == (RecordState.ACQUIRED, 1, MEMBER)
    assert partition.next_fetch_offset() == 1_000_000
    # lock expiry by the fake clock releases the rest; re-acquisition hands out the released run again
    clock.now_ms += LOCK_MS
    assert partition.expire_acquisition_locks()
    assert partition.offset_state(1_000_050) == (RecordState.AVAILABLE, 1, "")
    assert partition.next_lock_deadline_ms() is None


def test_restore_puts_back_the_state_a_snapshot_took() -> None:
    """What the share-partition manager rolls back to when the write of a change fails."""
    clock = FakeClock()
    partition = make(clock)
    acquire(partition, 0, 99)
    before = partition.snapshot()
    ack(partition, 0, 9)
    ack(partition, 20, 29, RELEASE)
    acquire(partition, 100, 199)
    partition.restore(before)
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (0, 99, 100)
    assert partition.offset_state(5) == (RecordState.ACQUIRED, 1, MEMBER)
    assert partition.offset_state(25) == (RecordState.ACQUIRED, 1, MEMBER)
    assert partition.next_lock_deadline_ms() == clock.now_ms + LOCK_MS
    ack(partition, 0, 99)  # the restored state is live: the same acknowledgement applies again
    assert partition.start_offset == 100

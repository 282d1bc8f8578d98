"""Acquisition of a share partition's records for a member, as Apache Kafka 4.3.1's `SharePartition.acquire`:
the window bound (`lastOffsetAndMaxRecordsToAcquire`), re-acquiring released records of the in-flight batches
(whole batches where the rules allow, Kafka's throttling near the delivery limit), new batches from the log
(split at the client's batch size, or cut at MaxRecords in record_limit mode), the archiving of offsets the log
no longer has and, under read_committed, of aborted transactions. Functions over a partition's `InFlightState`;
the owning `SharePartition`'s thread only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from minikafka.broker.share.in_flight_batch import InFlightBatch
from minikafka.broker.share.in_flight_state import InFlightState, is_acquired, union_runs
from minikafka.broker.share.share_types import (
    AbortedTransaction,
    AcquiredRecords,
    FetchedBatch,
    IsolationLevel,
    PersisterStateBatch,
    RecordState,
    ShareAcquireMode,
    ShareGroupConfig,
)

__all__ = ["ShareAcquiredRecords", "acquire"]

_MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2
_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ARCHIVED = RecordState.ARCHIVED


@dataclass(frozen=True, slots=True)
class ShareAcquiredRecords:
    """What one `acquire` handed to a member, and the state batches it archived on the way (offsets the log no
    longer has, aborted transactions under read_committed), to be persisted."""

    acquired_records: list[AcquiredRecords] = field(default_factory=list)
    count: int = 0
    archived: list[PersisterStateBatch] = field(default_factory=list)


def acquire(
    state: InFlightState,
    config: ShareGroupConfig,
    now_ms: int,
    member_id: str,
    fetch_offset: int,
    batches: Sequence[FetchedBatch],
    *,
    max_fetch_records: int,
    batch_size: int,
    acquire_mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED,
    aborted_transactions: Sequence[AbortedTransaction] = (),
) -> ShareAcquiredRecords:
    """Acquire for `member_id` the records of `batches` (read from `fetch_offset`) that are free to deliver.

    Acquisition is by offset range from the first batch's base offset, as Kafka's: gaps inside the range are
    delivered and the client reports them (acknowledge type GAP). `max_fetch_records` is a soft limit in
    `batch_optimized` mode (whole log batches and whole in-flight batches are acquired) and a hard one in
    `record_limit` mode; both are capped by the room the window has under `partition_max_record_locks`. With
    `share.isolation.level=read_committed` the batches of aborted transactions are archived, not delivered."""
    if max_fetch_records <= 0 or not batches:
        return ShareAcquiredRecords()
    if batches[-1].last_offset < state.start_offset:
        return ShareAcquiredRecords()
    max_records, last_to_acquire = _limits(state, config, fetch_offset, max_fetch_records, batches[-1].last_offset)
    if max_records <= 0:
        return ShareAcquiredRecords()
    state.deadlines_changed()
    record_limit = acquire_mode is ShareAcquireMode.RECORD_LIMIT
    deadline_ms = now_ms + config.record_lock_duration_ms
    archived = _archive_stale(state, config, fetch_offset, batches[0].base_offset)
    acquired: list[list[int]] = []  # [first, last, delivery count, id of the in-flight batch]
    offset: int | None = max(batches[0].base_offset, state.start_offset)
    cache_after = state.cache_after()
    if offset is not None and offset < cache_after:
        offset = _acquire_cached(state, config, member_id, offset, min(last_to_acquire, cache_after - 1), max_records,
                                      record_limit, deadline_ms, acquired)
    count = sum(r[1] - r[0] + 1 for r in acquired)
    if offset is not None and offset <= last_to_acquire and count < max_records and offset >= cache_after:
        _acquire_new(state, member_id, offset, last_to_acquire, max_records - count, batch_size, record_limit,
                          batches, deadline_ms, acquired)
    ranges = [(first, last, delivery_count) for first, last, delivery_count, _batch in acquired]
    if aborted_transactions and config.isolation_level is IsolationLevel.READ_COMMITTED:
        ranges, aborted = _archive_aborted(state, config, batches, aborted_transactions, ranges)
        archived += aborted
    state.advance_start_offset()
    records = [AcquiredRecords(first, last, delivery_count) for first, last, delivery_count in ranges]
    return ShareAcquiredRecords(records, sum(r.count for r in records), state.persister_batches(union_runs(archived)))


def _limits(state: InFlightState, config: ShareGroupConfig, fetch_offset: int, max_fetch_records: int,
            last_offset: int) -> tuple[int, int]:
    """Kafka's lastOffsetAndMaxRecordsToAcquire: (max records, last offset to acquire)."""
    max_records = min(max_fetch_records, config.partition_max_record_locks - state.window())
    if max_records <= 0 and fetch_offset <= state.end_offset:
        # The window is full but the read is inside it (records were released): only what is already in
        # flight may be acquired again.
        return min(max_fetch_records, state.end_offset - fetch_offset + 1), min(last_offset, state.end_offset)
    return max_records, last_offset


def _archive_stale(state: InFlightState, config: ShareGroupConfig, fetch_offset: int,
                   base_offset: int) -> list[tuple[int, int]]:
    """Archive the AVAILABLE offsets the log no longer has (compacted or deleted between the fetch offset and
    the first batch read); returns them as runs, to be persisted."""
    first, last = max(fetch_offset, state.start_offset), min(base_offset, state.cache_after()) - 1
    if first > last:
        return []
    return state.transition(first, last, _is_available, _ARCHIVED, config.delivery_count_limit)


def _acquire_cached(
    state: InFlightState,
    config: ShareGroupConfig,
    member_id: str,
    first: int,
    last: int,
    max_records: int,
    record_limit: bool,
    deadline_ms: int,
    acquired: list[list[int]],
) -> int | None:
    """Re-acquire AVAILABLE offsets in [first, last], whole batches where the rules allow; returns where to go
    on, or None to stop."""
    limit = config.delivery_count_limit
    throttle = max(_MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, math.ceil(limit / 2))
    batch_end = -1  # last offset of the in-flight batch of the previous acquisition
    throttled_max = -1
    count = 0
    for batch in list(state.overlapping(first, last)):
        lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
        if batch.states is None:
            if batch.state is not _AVAILABLE:
                continue
            delivery_count = batch.delivery_count
            if count >= max_records and (record_limit or lo > batch_end):
                return None
            if count and ((lo > batch_end and delivery_count >= throttle)
                          or (limit > 2 and delivery_count == limit - 1)):
                return None
            if (batch.covers(lo, hi) and delivery_count < throttle
                    and (not record_limit or count + len(batch) <= max_records)):
                batch.set_batch_state(_ACQUIRED, delivery_count + 1, member_id, deadline_ms)
                acquired.append([lo, hi, delivery_count + 1, id(batch)])
                count += len(batch)
                batch_end = batch.last_offset
                continue
        states = batch.split()
        counts = batch.counts
        batch_first = max(batch.first_offset, state.start_offset)
        for offset in range(lo, hi + 1):
            index = offset - batch.first_offset
            if states[index] is not _AVAILABLE:
                continue
            if count >= max_records and (record_limit or offset > batch_end):
                return None
            delivery_count = counts[index]
            # Kafka's throttling: a batch near the delivery limit is not joined to others, a record on its
            # last attempt goes out on its own (so one poison record does not archive its neighbours).
            if count and ((offset > batch_end and delivery_count >= throttle)
                          or (limit > 2 and delivery_count == limit - 1)):
                return None
            if delivery_count >= throttle and throttled_max < 0:
                throttled_max = max(1, (batch.last_offset - batch_first + 1) >> (delivery_count - throttle + 1))
            batch_end = batch.last_offset
            delivery_count += 1
            batch.set_offset_state(index, _ACQUIRED, delivery_count, member_id, deadline_ms)
            previous = acquired[-1] if acquired else None
            if previous and previous[1] + 1 == offset and previous[2] == delivery_count \
                    and previous[3] == id(batch):
                previous[1] = offset
            else:
                acquired.append([offset, offset, delivery_count, id(batch)])
            count += 1
            if limit > 2 and delivery_count == limit:
                return None
            if throttled_max > 0 and count >= throttled_max:
                return None
    return last + 1


def _acquire_new(
    state: InFlightState,
    member_id: str,
    first: int,
    last: int,
    remaining: int,
    batch_size: int,
    record_limit: bool,
    batches: Sequence[FetchedBatch],
    deadline_ms: int,
    acquired: list[list[int]],
) -> None:
    cache_after = state.cache_after()
    if first > cache_after:  # the log has nothing between the end of the in-flight records and `first`
        state.append_batch(InFlightBatch(cache_after, first - 1, _ARCHIVED, 0))
    last_acquired = last
    if remaining < last - first + 1:
        in_batch = first + remaining - 1
        last_acquired = next(
            (b.last_offset for b in batches if b.base_offset <= in_batch <= b.last_offset), in_batch
        )
        last_acquired = min(last_acquired, last)
    if record_limit:
        after_acquired = min(last_acquired, first + remaining - 1) + 1
        batch = InFlightBatch(first, last_acquired, _ACQUIRED, 1, member_id, deadline_ms)
        if after_acquired <= last_acquired:  # the rest of the in-flight batch stays AVAILABLE
            batch.split()
            for index in range(after_acquired - first, last_acquired - first + 1):
                batch.set_offset_state(index, _AVAILABLE, 0)
        state.append_batch(batch)
        acquired.append([first, after_acquired - 1, 1, id(batch)])
    else:
        starts = _split_starts(first, last_acquired, batch_size, batches)
        for start, after in zip(starts, [*starts[1:], last_acquired + 1], strict=True):
            batch = InFlightBatch(start, after - 1, _ACQUIRED, 1, member_id, deadline_ms)
            state.append_batch(batch)
            acquired.append([start, after - 1, 1, id(batch)])
    state.end_offset = max(state.end_offset, last_acquired)


def _split_starts(first: int, last: int, batch_size: int, batches: Sequence[FetchedBatch]) -> list[int]:
    """Kafka's createBatches: split a new acquisition at log batch bases once `batch_size` is reached."""
    starts = [first]
    if last - first + 1 > batch_size > 0:
        for batch in batches:
            if batch.base_offset > last:
                break
            if batch.base_offset - starts[-1] >= batch_size:
                starts.append(batch.base_offset)
    return starts


def _archive_aborted(
    state: InFlightState, config: ShareGroupConfig, batches: Sequence[FetchedBatch],
    aborted: Sequence[AbortedTransaction], acquired: list[tuple[int, int, int]],
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """Kafka's read_committed filter: archive the acquired offsets of batches whose transaction aborted.
    Returns the acquired ranges left and the archived runs."""
    pending = sorted(aborted, key=lambda a: a.first_offset)
    aborted_producers: set[int] = set()
    aborted_ranges: list[tuple[int, int]] = []
    for batch in batches:
        if batch.producer_id < 0:
            continue
        while pending and pending[0].first_offset <= batch.last_offset:
            aborted_producers.add(pending.pop(0).producer_id)
        if batch.is_abort_marker:
            aborted_producers.discard(batch.producer_id)
        elif batch.is_transactional and batch.producer_id in aborted_producers:
            aborted_ranges.append((batch.base_offset, batch.last_offset))
    if not aborted_ranges:
        return acquired, []
    kept: list[tuple[int, int, int]] = []
    archived: list[tuple[int, int]] = []
    for first, last, delivery_count in acquired:
        cursor = first
        for lo, hi in aborted_ranges:
            lo, hi = max(lo, cursor), min(hi, last)
            if lo > hi:
                continue
            if lo > cursor:
                kept.append((cursor, lo - 1, delivery_count))
            archived += state.transition(lo, hi, is_acquired, _ARCHIVED, config.delivery_count_limit)
            cursor = hi + 1
        if cursor <= last:
            kept.append((cursor, last, delivery_count))
    return kept, archived


def _is_available(state: RecordState, _member: str, _deadline_ms: int) -> bool:
    return state is _AVAILABLE

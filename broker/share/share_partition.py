"""`SharePartition`: the delivery state of one topic partition for one share group (KIP-932), as Apache Kafka
4.3.1's `kafka.server.share.SharePartition` keeps it, without I/O.

The share-partition start offset (SPSO, `start_offset`) is the first offset not yet ACKNOWLEDGED or ARCHIVED; the
end offset (SPEO, `end_offset`) is the last offset ever acquired (Kafka's `endOffset`: equal to `start_offset`
while nothing is in flight). Between them every offset has a state (AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED), a
delivery count, the member holding it and, while ACQUIRED, the time its acquisition lock expires.

As Kafka's `cachedState`, the state is a sorted list of in-flight batches (`InFlightBatch`: the log's batch
boundaries as they were acquired, split at the client's batch size), each keeping one state for all its offsets
until an acknowledgement, a release, a lock expiry or an acquisition touches part of it, and per-offset state from
then on. Memory and time go with the number of batches, not offsets: a gap in the log (a compacted topic, an
aborted transaction's range) is one batch, whatever its length. The window `end_offset - start_offset + 1` is what
Kafka's `canAcquireRecords` and `lastOffsetAndMaxRecordsToAcquire` count against
`group.share.partition.max.record.locks`: a record held at the SPSO stops new acquisitions once the window is full,
however many records behind it are acknowledged.

Sans-IO: the caller reads the log and passes in the fetched batch boundaries (and, read_committed, the aborted
transactions), persists the `PersisterStateBatch`es that `acknowledge`, `release_acquired_records`,
`expire_acquisition_locks` and `acquire` return, and calls `expire_acquisition_locks` when
`next_lock_deadline_ms` passes. `snapshot`/`restore` let the caller roll a change back when its write fails (Kafka
rolls its in-flight state back on a persister error). Time comes from the `clock_ms` given at construction. Not
thread-safe: one owner (the broker's event loop) calls it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from minikafka.broker.share.in_flight_batch import NO_MEMBER, TERMINAL_STATES, InFlightBatch
from minikafka.broker.share.share_types import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AbortedTransaction,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    IsolationLevel,
    PersisterStateBatch,
    RecordState,
    ShareAcknowledgeError,
    ShareAcquireMode,
    ShareGroupConfig,
)

__all__ = ["UNINITIALIZED_START_OFFSET", "InFlightBatchView", "ShareAcquiredRecords", "SharePartition",
           "SharePartitionSnapshot"]

#: The start offset the share coordinator reports for a partition no consumer has read yet (`PartitionFactory`).
UNINITIALIZED_START_OFFSET = -1
_MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2
_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ARCHIVED = RecordState.ARCHIVED
_ACK_TO_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}
_UNKNOWN = -2  # the cached earliest lock deadline must be recomputed


@dataclass(frozen=True, slots=True)
class ShareAcquiredRecords:
    """What one `acquire` handed to a member, and the state batches it archived on the way (offsets the log no
    longer has, aborted transactions under read_committed), to be persisted."""

    acquired_records: list[AcquiredRecords] = field(default_factory=list)
    count: int = 0
    archived: list[PersisterStateBatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class InFlightBatchView:
    first_offset: int
    last_offset: int
    states: tuple[tuple[RecordState, int, str], ...]  # per offset: state, delivery count, member id


@dataclass(frozen=True, slots=True)
class SharePartitionSnapshot:
    """The whole in-flight state of a share partition at one moment, to put back with `SharePartition.restore`."""

    start_offset: int
    end_offset: int
    batches: list[InFlightBatch]


class SharePartition:
    """The in-flight state of one share partition. See the module docstring for what it owns."""

    def __init__(
        self,
        group_id: str,
        topic_id: bytes,
        partition: int,
        *,
        config: ShareGroupConfig | None = None,
        clock_ms: Callable[[], int],
    ) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.partition = partition
        self.config = config or ShareGroupConfig()
        self._clock_ms = clock_ms
        self._start = 0
        self._end = 0
        self._batches: list[InFlightBatch] = []  # contiguous, ascending; the first may start before the SPSO
        self._firsts: list[int] = []  # first offsets of `_batches`, for bisect
        self._min_deadline_ms: int | None = None
        self.state_epoch = 0
        self.initialized = False

    # ---- initialisation from the share coordinator's state ------------------------------------------------
    def initialize(self, start_offset: int, state_epoch: int, state_batches: Iterable[PersisterStateBatch]) -> None:
        """Load persisted state (ReadShareGroupState): the SPSO and the batches the coordinator holds.

        `start_offset` must already be resolved (see `resolve_start_offset` for a partition the coordinator
        reports as uninitialised). Offsets between batches are gaps the partition never recorded a delivery for:
        they are AVAILABLE with delivery count 0 and are fetched again. Raises ValueError on state Kafka refuses
        (batches before the start offset, overlapping or reversed batches, states other than AVAILABLE,
        ACKNOWLEDGED and ARCHIVED)."""
        if start_offset < 0:
            raise ValueError(f"start offset {start_offset} is not resolved")
        batches: list[InFlightBatch] = []
        next_offset = start_offset
        for batch in sorted(state_batches, key=lambda b: b.first_offset):
            if batch.first_offset < start_offset:
                raise ValueError(f"state batch {batch} starts before the start offset {start_offset}")
            if batch.last_offset < batch.first_offset:
                raise ValueError(f"state batch {batch} ends before it starts")
            if batch.first_offset < next_offset:
                raise ValueError(f"state batch {batch} overlaps the batch before it")
            state = RecordState(batch.delivery_state)
            if state not in (RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                raise ValueError(f"state batch {batch} has state {state.name}, which is never persisted")
            if batch.delivery_count < 0:
                raise ValueError(f"state batch {batch} has a negative delivery count")
            if batch.first_offset > next_offset:
                batches.append(InFlightBatch(next_offset, batch.first_offset - 1, _AVAILABLE, 0))
            batches.append(InFlightBatch(batch.first_offset, batch.last_offset, state, batch.delivery_count))
            next_offset = batch.last_offset + 1
        self._start = start_offset
        self._set_batches(batches)
        self._end = next_offset - 1 if batches else start_offset
        self.state_epoch = state_epoch
        self.initialized = True
        self._advance_start_offset()

    def _set_batches(self, batches: list[InFlightBatch]) -> None:
        self._batches = batches
        self._firsts = [b.first_offset for b in batches]
        self._min_deadline_ms = _UNKNOWN

    def _append_batch(self, batch: InFlightBatch) -> None:
        self._batches.append(batch)
        self._firsts.append(batch.first_offset)

    def snapshot(self) -> SharePartitionSnapshot:
        """A copy of the in-flight state, for `restore` when the write of a change fails."""
        return SharePartitionSnapshot(self._start, self._end, [batch.copy() for batch in self._batches])

    def restore(self, snapshot: SharePartitionSnapshot) -> None:
        """Put back the state `snapshot` took (Kafka's rollback of in-flight state on a persister failure)."""
        self._start, self._end = snapshot.start_offset, snapshot.end_offset
        self._set_batches([batch.copy() for batch in snapshot.batches])

    # ---- offsets ------------------------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    def _cache_after(self) -> int:
        """The first offset past the in-flight batches (the SPSO when there are none)."""
        return self._batches[-1].last_offset + 1 if self._batches else self._start

    def _overlapping(self, first: int, last: int) -> Iterator[InFlightBatch]:
        """The in-flight batches holding any offset of [first, last], ascending."""
        batches = self._batches
        index = max(0, bisect.bisect_right(self._firsts, first) - 1)
        while index < len(batches) and batches[index].first_offset <= last:
            if batches[index].last_offset >= first:
                yield batches[index]
            index += 1

    def next_fetch_offset(self) -> int:
        """Where the next log read for this partition starts: the first AVAILABLE offset, else past the end."""
        for batch in self._overlapping(self._start, self._end):
            offset = batch.first_with_state(max(batch.first_offset, self._start), _AVAILABLE)
            if offset is not None:
                return offset
        return self._end + 1 if self._batches else self._end

    def _window(self) -> int:
        """Kafka's numInFlightRecords: `endOffset - startOffset + 1`, 0 while nothing is in flight."""
        return self._end - self._start + 1 if self._batches else 0

    def can_acquire_records(self) -> bool:
        """Kafka's canAcquireRecords: in-flight records are AVAILABLE again, or the window from the SPSO to the
        SPEO has room under `group.share.partition.max.record.locks`; else a fetch need not read the log."""
        if self.next_fetch_offset() != self._end + 1:
            return True
        return self._window() < self.config.partition_max_record_locks

    def _counts(self) -> tuple[int, int]:
        """(non-terminal, terminal) offsets from the SPSO to the end of the in-flight batches."""
        non_terminal = terminal = 0
        for batch in self._batches:
            first = max(batch.first_offset, self._start)
            if first > batch.last_offset:
                continue
            live, _available = batch.count_states(first, batch.last_offset)
            non_terminal += live
            terminal += batch.last_offset - first + 1 - live
        return non_terminal, terminal

    def in_flight_count(self) -> int:
        """Offsets from the SPSO neither ACKNOWLEDGED nor ARCHIVED (Kafka's InFlightMessageCount)."""
        return self._counts()[0]

    def delivery_complete_count(self) -> int:
        """Offsets at or past the SPSO whose delivery is complete (KIP-1226's DeliveryCompleteCount)."""
        return self._counts()[1]

    def in_flight_batch_count(self) -> int:
        return sum(1 for batch in self._batches if batch.last_offset >= self._start)

    def archived_count(self) -> int:
        """ARCHIVED offsets from the SPSO (rejected, over the delivery limit, aborted, gaps)."""
        return sum(
            last - first + 1
            for batch in self._batches if batch.last_offset >= self._start
            for first, last, state, _count in batch.pieces(max(batch.first_offset, self._start), batch.last_offset)
            if state is _ARCHIVED
        )

    def offset_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, member id) of an offset in flight; None below the SPSO or past the SPEO."""
        if not self._start <= offset < self._cache_after():
            return None
        batch = next(self._overlapping(offset, offset))
        state, count, member, _deadline = batch.offset_state(offset)
        return state, count, member

    def in_flight_batches(self) -> list[InFlightBatchView]:
        """Every in-flight batch from the SPSO with its offsets' states (tests and tools; one tuple per offset)."""
        views = []
        for batch in self._batches:
            first = max(batch.first_offset, self._start)
            if first > batch.last_offset:
                continue
            states = tuple(batch.offset_state(o)[:3] for o in range(first, batch.last_offset + 1))
            views.append(InFlightBatchView(first, batch.last_offset, states))
        return views

    def state_batches(self) -> list[PersisterStateBatch]:
        """The state to snapshot: runs of equal (state, delivery count), ACQUIRED written as AVAILABLE (its lock
        does not survive the broker), never-delivered gap offsets left out."""
        pieces = [
            piece
            for batch in self._batches if batch.last_offset >= self._start
            for piece in batch.pieces(max(batch.first_offset, self._start), batch.last_offset)
            if not (piece[2] is _AVAILABLE and piece[3] == 0)
        ]
        return _merge(pieces, acquired_as_available=True)

    # ---- acquisition --------------------------------------------------------------------------------------
    def acquire(
        self,
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
        if not self.initialized or max_fetch_records <= 0 or not batches:
            return ShareAcquiredRecords()
        if batches[-1].last_offset < self._start:
            return ShareAcquiredRecords()
        max_records, last_to_acquire = self._limits(fetch_offset, max_fetch_records, batches[-1].last_offset)
        if max_records <= 0:
            return ShareAcquiredRecords()
        self._min_deadline_ms = _UNKNOWN
        record_limit = acquire_mode is ShareAcquireMode.RECORD_LIMIT
        deadline_ms = self._clock_ms() + self.config.record_lock_duration_ms
        archived = self._archive_stale(fetch_offset, batches[0].base_offset)
        acquired: list[list[int]] = []  # [first, last, delivery count, id of the in-flight batch]
        offset: int | None = max(batches[0].base_offset, self._start)
        cache_after = self._cache_after()
        if offset is not None and offset < cache_after:
            offset = self._acquire_cached(member_id, offset, min(last_to_acquire, cache_after - 1), max_records,
                                          record_limit, deadline_ms, acquired)
        count = sum(r[1] - r[0] + 1 for r in acquired)
        if offset is not None and offset <= last_to_acquire and count < max_records and offset >= cache_after:
            self._acquire_new(member_id, offset, last_to_acquire, max_records - count, batch_size, record_limit,
                              batches, deadline_ms, acquired)
        ranges = [(first, last, delivery_count) for first, last, delivery_count, _batch in acquired]
        if aborted_transactions and self.config.isolation_level is IsolationLevel.READ_COMMITTED:
            ranges, aborted = self._archive_aborted(batches, aborted_transactions, ranges)
            archived += aborted
        self._advance_start_offset()
        records = [AcquiredRecords(first, last, delivery_count) for first, last, delivery_count in ranges]
        return ShareAcquiredRecords(records, sum(r.count for r in records), self._persister_batches(_union(archived)))

    def _limits(self, fetch_offset: int, max_fetch_records: int, last_offset: int) -> tuple[int, int]:
        """Kafka's lastOffsetAndMaxRecordsToAcquire: (max records, last offset to acquire)."""
        max_records = min(max_fetch_records, self.config.partition_max_record_locks - self._window())
        if max_records <= 0 and fetch_offset <= self._end:
            # The window is full but the read is inside it (records were released): only what is already in
            # flight may be acquired again.
            return min(max_fetch_records, self._end - fetch_offset + 1), min(last_offset, self._end)
        return max_records, last_offset

    def _archive_stale(self, fetch_offset: int, base_offset: int) -> list[tuple[int, int]]:
        """Archive the AVAILABLE offsets the log no longer has (compacted or deleted between the fetch offset and
        the first batch read); returns them as runs, to be persisted."""
        first, last = max(fetch_offset, self._start), min(base_offset, self._cache_after()) - 1
        if first > last:
            return []
        return self._transition(first, last, lambda state, _member, _deadline: state is _AVAILABLE, _ARCHIVED)

    def _acquire_cached(
        self,
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
        limit = self.config.delivery_count_limit
        throttle = max(_MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, math.ceil(limit / 2))
        batch_end = -1  # last offset of the in-flight batch of the previous acquisition
        throttled_max = -1
        count = 0
        for batch in list(self._overlapping(first, last)):
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
            batch_first = max(batch.first_offset, self._start)
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
        self,
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
        cache_after = self._cache_after()
        if first > cache_after:  # the log has nothing between the end of the in-flight records and `first`
            self._append_batch(InFlightBatch(cache_after, first - 1, _ARCHIVED, 0))
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
            self._append_batch(batch)
            acquired.append([first, after_acquired - 1, 1, id(batch)])
        else:
            starts = self._split_starts(first, last_acquired, batch_size, batches)
            for start, after in zip(starts, [*starts[1:], last_acquired + 1], strict=True):
                batch = InFlightBatch(start, after - 1, _ACQUIRED, 1, member_id, deadline_ms)
                self._append_batch(batch)
                acquired.append([start, after - 1, 1, id(batch)])
        self._end = max(self._end, last_acquired)

    @staticmethod
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
        self, batches: Sequence[FetchedBatch], aborted: Sequence[AbortedTransaction],
        acquired: list[tuple[int, int, int]],
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
                archived += self._transition(lo, hi, _is_acquired, _ARCHIVED)
                cursor = hi + 1
            if cursor <= last:
                kept.append((cursor, last, delivery_count))
        return kept, archived

    # ---- state changes --------------------------------------------------------------------------------------
    def _transition(self, first: int, last: int, selected: Callable[[RecordState, str, int], bool],
                    state: RecordState) -> list[tuple[int, int]]:
        """The offsets of [first, last] that `selected(state, member, lock deadline)` picks go to `state` (AVAILABLE
        becomes ARCHIVED at the delivery count limit), released by their member; a batch only partly changed is
        split. Returns the changed offsets as runs (first, last)."""
        limit = self.config.delivery_count_limit
        changed: list[tuple[int, int]] = []
        for batch in self._overlapping(first, last):
            lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
            if batch.states is None:
                if not selected(batch.state, batch.member_id, batch.deadline_ms):
                    continue
                if batch.covers(lo, hi):
                    count = batch.delivery_count
                    batch.set_batch_state(_ARCHIVED if state is _AVAILABLE and count >= limit else state, count)
                    _add_run(changed, lo, hi)
                    continue
            states = batch.split()
            counts, members, deadlines = batch.counts, batch.members, batch.deadlines
            for offset in range(lo, hi + 1):
                index = offset - batch.first_offset
                if selected(states[index], members[index], deadlines[index]):
                    count = counts[index]
                    batch.set_offset_state(index, _ARCHIVED if state is _AVAILABLE and count >= limit else state,
                                           count)
                    _add_run(changed, offset, offset)
        if changed:
            self._min_deadline_ms = _UNKNOWN
        return changed

    # ---- acknowledgement, release, lock expiry -----------------------------------------------------------
    def acknowledge(self, member_id: str, batches: Sequence[AcknowledgementBatch]) -> list[PersisterStateBatch]:
        """Apply a member's acknowledgements, all or none: raises ShareAcknowledgeError (INVALID_REQUEST or
        INVALID_RECORD_STATE, Kafka's codes and messages) and changes nothing when any batch is refused.
        Returns the state batches to persist. Offsets below the SPSO are already archived and are skipped.
        The request-level checks (`validate_acknowledgement_batches`) come first, in the handler, as in Kafka."""
        planned: list[tuple[int, int, AcknowledgeType]] = []  # runs of offsets with one acknowledge type
        for batch in batches:
            self._plan_acknowledgement(member_id, batch, planned)
        if any(t is AcknowledgeType.RENEW for _f, _l, t in planned) and not self.config.renew_acknowledge_enable:
            raise ShareAcknowledgeError(
                INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group."
            )
        renewed_deadline_ms = self._clock_ms() + self.config.record_lock_duration_ms
        changed: list[tuple[int, int]] = []
        for first, last, ack_type in sorted(planned, key=lambda run: run[0]):
            if ack_type is AcknowledgeType.RENEW:
                self._renew(first, last, renewed_deadline_ms)
                continue
            changed += self._transition(first, last, _is_acquired, _ACK_TO_STATE[ack_type])
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

    def _renew(self, first: int, last: int, deadline_ms: int) -> None:
        """The locks of the ACQUIRED offsets [first, last] run until `deadline_ms` now."""
        for batch in self._overlapping(first, last):
            lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
            if batch.states is None and batch.covers(lo, hi):
                batch.deadline_ms = deadline_ms
                continue
            batch.split()
            batch.deadlines[lo - batch.first_offset:hi - batch.first_offset + 1] = [deadline_ms] * (hi - lo + 1)
        self._min_deadline_ms = _UNKNOWN

    def _held_by(self, member_id: str, first: int, last: int) -> bool:
        """Every offset of [first, last] is ACQUIRED by `member_id`."""
        for batch in self._overlapping(first, last):
            lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
            if batch.states is None:
                if batch.state is not _ACQUIRED or batch.member_id != member_id:
                    return False
                continue
            window = slice(lo - batch.first_offset, hi - batch.first_offset + 1)
            length = hi - lo + 1
            if batch.states[window].count(_ACQUIRED) != length or batch.members[window].count(member_id) != length:
                return False
        return True

    def _plan_acknowledgement(
        self, member_id: str, batch: AcknowledgementBatch, planned: list[tuple[int, int, AcknowledgeType]]
    ) -> None:
        types = batch.acknowledge_types
        if batch.last_offset < batch.first_offset:
            raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledgement batch {batch}.")
        if not types or (len(types) > 1 and len(types) != batch.last_offset - batch.first_offset + 1):
            raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
        try:
            ack_types = [AcknowledgeType(t) for t in types]
        except ValueError:
            raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}") from None
        if batch.last_offset < self._start:
            return
        if not self._batches or self._cache_after() <= self._start:
            raise ShareAcknowledgeError(
                INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache."
            )
        last_cached = self._cache_after() - 1
        if batch.first_offset > last_cached:
            raise ShareAcknowledgeError(
                INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records."
            )
        if batch.last_offset > last_cached:
            raise ShareAcknowledgeError(
                INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records."
            )
        first = max(batch.first_offset, self._start)
        if not self._held_by(member_id, first, batch.last_offset) \
                or any(f <= batch.last_offset and first <= e for f, e, _t in planned):
            self._refuse_acknowledgement(member_id, first, batch.last_offset, planned)
        if len(ack_types) == 1:
            planned.append((first, batch.last_offset, ack_types[0]))
            return
        for offset in range(first, batch.last_offset + 1):
            ack_type = ack_types[offset - batch.first_offset]
            if planned and planned[-1][1] == offset - 1 and planned[-1][2] is ack_type and planned[-1][0] >= first:
                planned[-1] = (planned[-1][0], offset, ack_type)
            else:
                planned.append((offset, offset, ack_type))

    def _refuse_acknowledgement(
        self, member_id: str, first: int, last: int, planned: list[tuple[int, int, AcknowledgeType]]
    ) -> None:
        """Raise the error of the first offset in [first, last] that cannot be acknowledged, as Kafka checks them."""
        for offset in range(first, last + 1):
            state, _count, member = self.offset_state(offset) or (_ARCHIVED, 0, NO_MEMBER)
            if state is not _ACQUIRED or any(f <= offset <= e for f, e, _t in planned):
                raise ShareAcknowledgeError(
                    INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired."
                )
            if member != member_id:
                raise ShareAcknowledgeError(INVALID_RECORD_STATE, "Member is not the owner of offset")

    def release_acquired_records(self, member_id: str) -> list[PersisterStateBatch]:
        """The member left or closed its share session: its acquired records become AVAILABLE again (ARCHIVED if
        they reached the delivery count limit), their delivery counts unchanged."""
        if not self._batches:
            return []
        changed = self._transition(
            self._start, self._end, lambda state, member, _d: state is _ACQUIRED and member == member_id, _AVAILABLE)
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

    def next_lock_deadline_ms(self) -> int | None:
        """The earliest lock deadline of an ACQUIRED offset; None when none is acquired."""
        if self._min_deadline_ms == _UNKNOWN:
            deadlines = [d for d in (b.min_deadline_ms() for b in self._batches) if d is not None]
            self._min_deadline_ms = min(deadlines) if deadlines else None
        return self._min_deadline_ms

    def expire_acquisition_locks(self) -> list[PersisterStateBatch]:
        """Release every acquired record whose lock (`record_lock_duration_ms`) has run out, as the member's
        RELEASE would; returns the state batches to persist."""
        now_ms = self._clock_ms()
        deadline = self.next_lock_deadline_ms()
        if deadline is None or deadline > now_ms:
            return []
        changed = self._transition(
            self._start, self._end, lambda state, _m, deadline_ms: state is _ACQUIRED and deadline_ms <= now_ms,
            _AVAILABLE)
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

    # ---- the start offset -----------------------------------------------------------------------------------
    def on_log_start_offset(self, log_start_offset: int) -> bool:
        """The log's start offset moved (retention, DeleteRecords) past the SPSO: what is gone is archived and the
        SPSO follows it. Returns True when the SPSO moved (the caller persists the new start offset)."""
        if log_start_offset <= self._start:
            return False
        if log_start_offset > self._end or not self._batches:
            self._start = self._end = log_start_offset
            self._set_batches([])
            return True
        self._transition(self._start, log_start_offset - 1, lambda state, _m, _d: state not in TERMINAL_STATES,
                         _ARCHIVED)
        self._advance_start_offset()
        return True

    def _advance_start_offset(self) -> None:
        """Kafka's maybeUpdateCachedStateAndOffsets: the SPSO moves to the first offset not yet ACKNOWLEDGED or
        ARCHIVED; batches wholly before it are forgotten."""
        start = self._start
        for batch in self._overlapping(start, self._end):
            offset = batch.first_non_terminal(max(start, batch.first_offset))
            if offset is not None:
                start = offset
                break
            start = batch.last_offset + 1
        if start == self._start:
            return
        self._start = start
        if start >= self._cache_after():
            self._end = start
            self._set_batches([])
            return
        drop = bisect.bisect_right(self._firsts, start) - 1
        if drop > 0:
            del self._batches[:drop], self._firsts[:drop]

    def _persister_batches(self, runs: Iterable[tuple[int, int]]) -> list[PersisterStateBatch]:
        """The offsets of `runs` (first, last), ascending, as state batches: runs of one (state, delivery count)."""
        pieces = [
            piece
            for first, last in runs
            for batch in self._overlapping(first, last)
            for piece in batch.pieces(max(first, batch.first_offset), min(last, batch.last_offset))
        ]
        return _merge(pieces)


def _is_acquired(state: RecordState, _member: str, _deadline_ms: int) -> bool:
    return state is _ACQUIRED


def _add_run(runs: list[tuple[int, int]], first: int, last: int) -> None:
    if runs and runs[-1][1] + 1 == first:
        runs[-1] = (runs[-1][0], last)
    else:
        runs.append((first, last))


def _union(runs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs (first, last) sorted, contiguous ones joined."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(runs):
        _add_run(out, first, last)
    return out


def _merge(pieces: Iterable[tuple[int, int, RecordState, int]],
           acquired_as_available: bool = False) -> list[PersisterStateBatch]:
    """Ascending pieces (first, last, state, delivery count) as state batches, contiguous equal ones joined."""
    out: list[list[int]] = []
    for first, last, state, count in pieces:
        if acquired_as_available and state is _ACQUIRED:
            state = _AVAILABLE
        if out and out[-1][1] + 1 == first and out[-1][2] == state and out[-1][3] == count:
            out[-1][1] = last
        else:
            out.append([first, last, int(state), count])
    return [PersisterStateBatch(first, last, state, count) for first, last, state, count in out]

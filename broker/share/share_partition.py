"""`SharePartition`: the delivery state of one topic partition for one share group (KIP-932), as Apache Kafka
4.3.1's `kafka.server.share.SharePartition` keeps it, without I/O.

The share-partition start offset (SPSO, `start_offset`) is the first offset not yet ACKNOWLEDGED or ARCHIVED; the
end offset (SPEO, `end_offset`) is the last offset ever acquired (Kafka's `endOffset`: equal to `start_offset`
while nothing is in flight). Between them every offset has a state (AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED), a
delivery count, the member holding it and, while ACQUIRED, the time its acquisition lock expires. Offsets are
grouped into in-flight batches as they were acquired (the log's batch boundaries, split at the client's batch
size), which is what `batch_optimized` acquisition re-delivers whole.

Kafka keeps batch-level state until a batch must be split; this model keeps one small record per offset from the
start: the number of offsets in flight is bounded by `group.share.partition.max.record.locks` (2000 by default),
and the observable behaviour (which offsets are acquired, with which delivery counts, which acknowledgements are
refused with which error, where the SPSO moves) is Kafka's.

Sans-IO: the caller reads the log and passes in the fetched batch boundaries (and, read_committed, the aborted
transactions), persists the `PersisterStateBatch`es that `acknowledge`, `release_acquired_records`,
`expire_acquisition_locks` and `acquire` return, and calls `expire_acquisition_locks` when
`next_lock_deadline_ms` passes. Time comes from the `clock_ms` given at construction. Not thread-safe: one owner
(the broker's event loop) calls it.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

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

__all__ = ["UNINITIALIZED_START_OFFSET", "InFlightBatchView", "ShareAcquiredRecords", "SharePartition"]

#: The start offset the share coordinator reports for a partition no consumer has read yet (`PartitionFactory`).
UNINITIALIZED_START_OFFSET = -1
_EMPTY_MEMBER_ID = ""
_MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2
_ACK_TO_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


class _OffsetState:
    __slots__ = ("deadline_ms", "delivery_count", "member_id", "state")

    def __init__(self, state: RecordState, delivery_count: int, member_id: str = _EMPTY_MEMBER_ID) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = 0


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
        self._records: list[_OffsetState] = []  # offsets start_offset .. start_offset + len - 1
        self._batch_starts: list[int] = []  # first offsets of the in-flight batches (the first one may be < SPSO)
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
        records: list[_OffsetState] = []
        batch_starts: list[int] = []
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
                batch_starts.append(next_offset)
                records.extend(_OffsetState(RecordState.AVAILABLE, 0) for _ in range(batch.first_offset - next_offset))
            batch_starts.append(batch.first_offset)
            count = batch.last_offset - batch.first_offset + 1
            records.extend(_OffsetState(state, batch.delivery_count) for _ in range(count))
            next_offset = batch.last_offset + 1
        self._start = start_offset
        self._records = records
        self._batch_starts = batch_starts
        self._end = next_offset - 1 if records else start_offset
        self.state_epoch = state_epoch
        self.initialized = True
        self._advance_start_offset()

    # ---- offsets ------------------------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    def next_fetch_offset(self) -> int:
        """Where the next log read for this partition starts: the first AVAILABLE offset, else past the end."""
        for index, record in enumerate(self._records):
            if record.state is RecordState.AVAILABLE:
                return self._start + index
        return self._end + 1 if self._records else self._end

    def in_flight_count(self) -> int:
        return sum(1 for r in self._records if not r.state.terminal)

    def delivery_complete_count(self) -> int:
        """Offsets at or past the SPSO whose delivery is complete (KIP-1226's DeliveryCompleteCount)."""
        return len(self._records) - self.in_flight_count()

    def offset_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, member id) of an offset in flight; None below the SPSO or past the SPEO."""
        if not self._start <= offset < self._start + len(self._records):
            return None
        record = self._records[offset - self._start]
        return record.state, record.delivery_count, record.member_id

    def in_flight_batches(self) -> list[InFlightBatchView]:
        views = []
        starts = [s for s in self._batch_starts if s > self._start]
        bounds = [self._start, *starts, self._start + len(self._records)]
        for first, after in itertools.pairwise(bounds):
            if after > first:
                states = tuple(
                    (r.state, r.delivery_count, r.member_id)
                    for r in self._records[first - self._start : after - self._start]
                )
                views.append(InFlightBatchView(first, after - 1, states))
        return views

    def state_batches(self) -> list[PersisterStateBatch]:
        """The state to snapshot: runs of equal (state, delivery count), ACQUIRED written as AVAILABLE (its lock
        does not survive the broker), never-delivered gap offsets left out."""
        changed = [
            self._start + i
            for i, r in enumerate(self._records)
            if not (r.state is RecordState.AVAILABLE and r.delivery_count == 0)
        ]
        return self._persister_batches(changed, acquired_as_available=True)

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
        `record_limit` mode; both are capped by the room left under `partition_max_record_locks`. With
        `share.isolation.level=read_committed` the batches of aborted transactions are archived, not delivered."""
        if not self.initialized or max_fetch_records <= 0 or not batches:
            return ShareAcquiredRecords()
        if batches[-1].last_offset < self._start:
            return ShareAcquiredRecords()
        max_records, last_to_acquire = self._limits(fetch_offset, max_fetch_records, batches[-1].last_offset)
        if max_records <= 0:
            return ShareAcquiredRecords()
        record_limit = acquire_mode is ShareAcquireMode.RECORD_LIMIT
        deadline_ms = self._clock_ms() + self.config.record_lock_duration_ms
        stale = self._archive_stale(fetch_offset, batches[0].base_offset)
        acquired: list[int] = []
        offset: int | None = max(batches[0].base_offset, self._start)
        cache_after = self._start + len(self._records)
        if offset is not None and offset < cache_after:
            offset = self._acquire_cached(
                member_id,
                offset,
                min(last_to_acquire, cache_after - 1),
                max_records,
                record_limit,
                deadline_ms,
                acquired,
            )
        if offset is not None and offset <= last_to_acquire and len(acquired) < max_records and offset >= cache_after:
            self._acquire_new(
                member_id,
                offset,
                last_to_acquire,
                max_records - len(acquired),
                batch_size,
                record_limit,
                batches,
                deadline_ms,
                acquired,
            )
        archived = self._persister_batches(stale)
        if aborted_transactions and self.config.isolation_level is IsolationLevel.READ_COMMITTED:
            acquired, aborted = self._archive_aborted(batches, aborted_transactions, acquired)
            archived += aborted
        self._advance_start_offset()
        return ShareAcquiredRecords(self._acquired_ranges(acquired), len(acquired), archived)

    def _limits(self, fetch_offset: int, max_fetch_records: int, last_offset: int) -> tuple[int, int]:
        max_records = min(max_fetch_records, self.config.partition_max_record_locks - self.in_flight_count())
        if max_records <= 0 and fetch_offset <= self._end:
            # At the in-flight limit but reading inside the in-flight range (records were released): only what
            # is already in flight may be acquired again.
            return min(max_fetch_records, self._end - fetch_offset + 1), min(last_offset, self._end)
        return max_records, last_offset

    def _archive_stale(self, fetch_offset: int, base_offset: int) -> list[int]:
        """Archive the offsets the log no longer has (compacted or deleted between the fetch offset and the first
        batch read); returns them, to be persisted."""
        archived = []
        for offset in range(max(fetch_offset, self._start), min(base_offset, self._start + len(self._records))):
            record = self._records[offset - self._start]
            if record.state is RecordState.AVAILABLE:
                record.state = RecordState.ARCHIVED
                archived.append(offset)
        return archived

    def _acquire_cached(
        self,
        member_id: str,
        first: int,
        last: int,
        max_records: int,
        record_limit: bool,
        deadline_ms: int,
        acquired: list[int],
    ) -> int | None:
        """Re-acquire AVAILABLE offsets in [first, last]; returns where to go on, or None to stop."""
        limit = self.config.delivery_count_limit
        throttle = max(_MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, math.ceil(limit / 2))
        batch_end = -1  # last offset of the in-flight batch of the previous acquisition
        throttled_max = -1
        offset = first
        while offset <= last:
            record = self._records[offset - self._start]
            if record.state is not RecordState.AVAILABLE:
                offset += 1
                continue
            if len(acquired) >= max_records and (record_limit or offset > batch_end):
                return None
            count = record.delivery_count
            # Kafka's throttling: a batch near the delivery limit is not joined to others, a record on its last
            # attempt goes out on its own (so one poison record does not archive its neighbours).
            if acquired and ((offset > batch_end and count >= throttle) or (limit > 2 and count == limit - 1)):
                return None
            if count >= throttle and throttled_max < 0:
                first_of_batch, batch_last = self._batch_bounds(offset)
                throttled_max = max(1, (batch_last - first_of_batch + 1) >> (count - throttle + 1))
            batch_end = self._batch_bounds(offset)[1]
            record.state = RecordState.ACQUIRED
            record.delivery_count += 1
            record.member_id = member_id
            record.deadline_ms = deadline_ms
            acquired.append(offset)
            offset += 1
            if limit > 2 and record.delivery_count == limit:
                return None
            if throttled_max > 0 and len(acquired) >= throttled_max:
                return None
        return offset

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
        acquired: list[int],
    ) -> None:
        cache_after = self._start + len(self._records)
        if first > cache_after:  # the log has nothing between the end of the in-flight records and `first`
            self._batch_starts.append(cache_after)
            self._records.extend(_OffsetState(RecordState.ARCHIVED, 0) for _ in range(first - cache_after))
        last_acquired = last
        if remaining < last - first + 1:
            in_batch = first + remaining - 1
            last_acquired = next(
                (b.last_offset for b in batches if b.base_offset <= in_batch <= b.last_offset), in_batch
            )
            last_acquired = min(last_acquired, last)
        if record_limit:
            self._batch_starts.append(first)
        else:
            self._batch_starts.extend(self._split_starts(first, last_acquired, batch_size, batches))
        for offset in range(first, last_acquired + 1):
            if record_limit and offset >= first + remaining:
                self._records.append(_OffsetState(RecordState.AVAILABLE, 0))
                continue
            record = _OffsetState(RecordState.ACQUIRED, 1, member_id)
            record.deadline_ms = deadline_ms
            self._records.append(record)
            acquired.append(offset)
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

    def _batch_bounds(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._batch_starts, offset) - 1
        first = self._batch_starts[index] if index >= 0 else self._start
        after = (
            self._batch_starts[index + 1] if index + 1 < len(self._batch_starts) else self._start + len(self._records)
        )
        return max(first, self._start), after - 1

    def _archive_aborted(
        self, batches: Sequence[FetchedBatch], aborted: Sequence[AbortedTransaction], acquired: list[int]
    ) -> tuple[list[int], list[PersisterStateBatch]]:
        """Kafka's read_committed filter: archive the acquired offsets of batches whose transaction aborted."""
        pending = sorted(aborted, key=lambda a: a.first_offset)
        aborted_producers: set[int] = set()
        archive: list[int] = []
        acquired_set = set(acquired)
        for batch in batches:
            if batch.producer_id < 0:
                continue
            while pending and pending[0].first_offset <= batch.last_offset:
                aborted_producers.add(pending.pop(0).producer_id)
            if batch.is_abort_marker:
                aborted_producers.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in aborted_producers:
                archive.extend(o for o in range(batch.base_offset, batch.last_offset + 1) if o in acquired_set)
        for offset in archive:
            record = self._records[offset - self._start]
            record.state = RecordState.ARCHIVED
            record.member_id = _EMPTY_MEMBER_ID
        dropped = set(archive)
        return [o for o in acquired if o not in dropped], self._persister_batches(archive)

    def _acquired_ranges(self, offsets: list[int]) -> list[AcquiredRecords]:
        """Runs of consecutive offsets with one delivery count, cut where an in-flight batch starts."""
        starts = set(self._batch_starts)
        ranges: list[AcquiredRecords] = []
        for offset in offsets:
            count = self._records[offset - self._start].delivery_count
            if (
                ranges
                and ranges[-1].last_offset + 1 == offset
                and ranges[-1].delivery_count == count
                and offset not in starts
            ):
                ranges[-1] = AcquiredRecords(ranges[-1].first_offset, offset, count)
            else:
                ranges.append(AcquiredRecords(offset, offset, count))
        return ranges

    # ---- acknowledgement, release, lock expiry -----------------------------------------------------------
    def acknowledge(self, member_id: str, batches: Sequence[AcknowledgementBatch]) -> list[PersisterStateBatch]:
        """Apply a member's acknowledgements, all or none: raises ShareAcknowledgeError (INVALID_REQUEST or
        INVALID_RECORD_STATE, Kafka's codes and messages) and changes nothing when any batch is refused.
        Returns the state batches to persist. Offsets below the SPSO are already archived and are skipped.
        The request-level checks (`validate_acknowledgement_batches`) come first, in the handler, as in Kafka."""
        planned: dict[int, AcknowledgeType] = {}
        for batch in batches:
            self._plan_acknowledgement(member_id, batch, planned)
        if any(t is AcknowledgeType.RENEW for t in planned.values()) and not self.config.renew_acknowledge_enable:
            raise ShareAcknowledgeError(
                INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group."
            )
        now_ms = self._clock_ms()
        changed = []
        for offset, ack_type in sorted(planned.items()):
            record = self._records[offset - self._start]
            if ack_type is AcknowledgeType.RENEW:
                record.deadline_ms = now_ms + self.config.record_lock_duration_ms
                continue
            self._release_to(record, _ACK_TO_STATE[ack_type])
            changed.append(offset)
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

    def _plan_acknowledgement(
        self, member_id: str, batch: AcknowledgementBatch, planned: dict[int, AcknowledgeType]
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
        if not self._records:
            raise ShareAcknowledgeError(
                INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache."
            )
        last_cached = self._start + len(self._records) - 1
        if batch.first_offset > last_cached:
            raise ShareAcknowledgeError(
                INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records."
            )
        if batch.last_offset > last_cached:
            raise ShareAcknowledgeError(
                INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records."
            )
        for offset in range(max(batch.first_offset, self._start), batch.last_offset + 1):
            record = self._records[offset - self._start]
            if record.state is not RecordState.ACQUIRED or offset in planned:
                raise ShareAcknowledgeError(
                    INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired."
                )
            if record.member_id != member_id:
                raise ShareAcknowledgeError(INVALID_RECORD_STATE, "Member is not the owner of offset")
            planned[offset] = ack_types[0] if len(ack_types) == 1 else ack_types[offset - batch.first_offset]

    def release_acquired_records(self, member_id: str) -> list[PersisterStateBatch]:
        """The member left or closed its share session: its acquired records become AVAILABLE again (ARCHIVED if
        they reached the delivery count limit), their delivery counts unchanged."""
        changed = []
        for index, record in enumerate(self._records):
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._release_to(record, RecordState.AVAILABLE)
                changed.append(self._start + index)
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

    def next_lock_deadline_ms(self) -> int | None:
        deadlines = [r.deadline_ms for r in self._records if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def expire_acquisition_locks(self) -> list[PersisterStateBatch]:
        """Release every acquired record whose lock (`record_lock_duration_ms`) has run out, as the member's
        RELEASE would; returns the state batches to persist."""
        now_ms = self._clock_ms()
        changed = []
        for index, record in enumerate(self._records):
            if record.state is RecordState.ACQUIRED and record.deadline_ms <= now_ms:
                self._release_to(record, RecordState.AVAILABLE)
                changed.append(self._start + index)
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

    def _release_to(self, record: _OffsetState, state: RecordState) -> None:
        if state is RecordState.AVAILABLE and record.delivery_count >= self.config.delivery_count_limit:
            state = RecordState.ARCHIVED
        record.state = state
        record.member_id = _EMPTY_MEMBER_ID
        record.deadline_ms = 0

    # ---- the start offset -----------------------------------------------------------------------------------
    def on_log_start_offset(self, log_start_offset: int) -> bool:
        """The log's start offset moved (retention, DeleteRecords) past the SPSO: what is gone is archived and the
        SPSO follows it. Returns True when the SPSO moved (the caller persists the new start offset)."""
        if log_start_offset <= self._start:
            return False
        drop = min(log_start_offset - self._start, len(self._records))
        del self._records[:drop]
        self._start = log_start_offset
        if not self._records:
            self._end = log_start_offset
        self._batch_starts = [s for s in self._batch_starts if s >= self._start]
        self._advance_start_offset()
        return True

    def _advance_start_offset(self) -> None:
        terminal = 0
        for record in self._records:
            if not record.state.terminal:
                break
            terminal += 1
        if not terminal:
            return
        if terminal == len(self._records):
            self._start = self._end = self._start + terminal
            self._records.clear()
            self._batch_starts.clear()
            return
        del self._records[:terminal]
        self._start += terminal
        index = bisect.bisect_right(self._batch_starts, self._start)
        self._batch_starts = [self._start, *self._batch_starts[index:]]

    def _persister_batches(self, offsets: list[int], acquired_as_available: bool = False) -> list[PersisterStateBatch]:
        batches: list[PersisterStateBatch] = []
        for offset in offsets:
            record = self._records[offset - self._start]
            state = record.state
            if acquired_as_available and state is RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            last = batches[-1] if batches else None
            if (
                last is not None
                and last.last_offset + 1 == offset
                and last.delivery_state == state
                and last.delivery_count == record.delivery_count
            ):
                batches[-1] = PersisterStateBatch(last.first_offset, offset, int(state), record.delivery_count)
            else:
                batches.append(PersisterStateBatch(offset, offset, int(state), record.delivery_count))
        return batches

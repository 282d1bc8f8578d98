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

from minikafka.broker.share.in_flight_offsets import InFlightOffsets
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
        self._offsets = InFlightOffsets()  # offsets start_offset .. start_offset + len - 1
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
        offsets = InFlightOffsets()
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
                offsets.append_run(RecordState.AVAILABLE, 0, batch.first_offset - next_offset)
            batch_starts.append(batch.first_offset)
            offsets.append_run(state, batch.delivery_count, batch.last_offset - batch.first_offset + 1)
            next_offset = batch.last_offset + 1
        self._start = start_offset
        self._offsets = offsets
        self._batch_starts = batch_starts
        self._end = next_offset - 1 if len(offsets) else start_offset
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
        index = self._offsets.first_available()
        if index is not None:
            return self._start + index
        return self._end + 1 if len(self._offsets) else self._end

    def can_acquire_records(self) -> bool:
        """Kafka's canAcquireRecords: in-flight records are AVAILABLE again, or there is room under
        `group.share.partition.max.record.locks` for new ones; else a fetch need not read the log."""
        return self._offsets.available > 0 or self._offsets.non_terminal < self.config.partition_max_record_locks

    def in_flight_count(self) -> int:
        return self._offsets.non_terminal

    def delivery_complete_count(self) -> int:
        """Offsets at or past the SPSO whose delivery is complete (KIP-1226's DeliveryCompleteCount)."""
        return len(self._offsets) - self._offsets.non_terminal

    def offset_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, member id) of an offset in flight; None below the SPSO or past the SPEO."""
        if not self._start <= offset < self._start + len(self._offsets):
            return None
        index = offset - self._start
        offsets = self._offsets
        return offsets.states[index], offsets.counts[index], offsets.members[index]

    def in_flight_batches(self) -> list[InFlightBatchView]:
        views = []
        starts = [s for s in self._batch_starts if s > self._start]
        bounds = [self._start, *starts, self._start + len(self._offsets)]
        offsets = self._offsets
        for first, after in itertools.pairwise(bounds):
            if after > first:
                window = slice(first - self._start, after - self._start)
                states = tuple(zip(offsets.states[window], offsets.counts[window], offsets.members[window],
                                   strict=True))
                views.append(InFlightBatchView(first, after - 1, states))
        return views

    def state_batches(self) -> list[PersisterStateBatch]:
        """The state to snapshot: runs of equal (state, delivery count), ACQUIRED written as AVAILABLE (its lock
        does not survive the broker), never-delivered gap offsets left out."""
        states, counts = self._offsets.states, self._offsets.counts
        changed = [
            self._start + i
            for i, state in enumerate(states)
            if not (state is RecordState.AVAILABLE and counts[i] == 0)
        ]
        return self._persister_batches(_runs(changed), acquired_as_available=True)

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
        cache_after = self._start + len(self._offsets)
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
        archived = self._persister_batches(_runs(stale))
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
        offsets = self._offsets
        for offset in range(max(fetch_offset, self._start), min(base_offset, self._start + len(offsets))):
            if offsets.states[offset - self._start] is RecordState.AVAILABLE:
                offsets.archive_available(offset - self._start)
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
        offsets = self._offsets
        while offset <= last:
            index = offset - self._start
            if offsets.states[index] is not RecordState.AVAILABLE:
                offset += 1
                continue
            if len(acquired) >= max_records and (record_limit or offset > batch_end):
                return None
            count = offsets.counts[index]
            # Kafka's throttling: a batch near the delivery limit is not joined to others, a record on its last
            # attempt goes out on its own (so one poison record does not archive its neighbours).
            if acquired and ((offset > batch_end and count >= throttle) or (limit > 2 and count == limit - 1)):
                return None
            if count >= throttle and throttled_max < 0:
                first_of_batch, batch_last = self._batch_bounds(offset)
                throttled_max = max(1, (batch_last - first_of_batch + 1) >> (count - throttle + 1))
            batch_end = self._batch_bounds(offset)[1]
            count = offsets.acquire(index, member_id, deadline_ms)
            acquired.append(offset)
            offset += 1
            if limit > 2 and count == limit:
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
        cache_after = self._start + len(self._offsets)
        if first > cache_after:  # the log has nothing between the end of the in-flight records and `first`
            self._batch_starts.append(cache_after)
            self._offsets.append_run(RecordState.ARCHIVED, 0, first - cache_after)
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
        after_acquired = min(last_acquired, first + remaining - 1) + 1 if record_limit else last_acquired + 1
        self._offsets.append_run(RecordState.ACQUIRED, 1, after_acquired - first, member_id, deadline_ms)
        acquired.extend(range(first, after_acquired))
        # record_limit: the rest of the in-flight batch stays AVAILABLE
        self._offsets.append_run(RecordState.AVAILABLE, 0, last_acquired + 1 - after_acquired)
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
            self._batch_starts[index + 1] if index + 1 < len(self._batch_starts) else self._start + len(self._offsets)
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
            self._offsets.release_run(offset - self._start, offset - self._start + 1, RecordState.ARCHIVED,
                                      self.config.delivery_count_limit)
        dropped = set(archive)
        return [o for o in acquired if o not in dropped], self._persister_batches(_runs(sorted(archive)))

    def _acquired_ranges(self, offsets: list[int]) -> list[AcquiredRecords]:
        """Runs of consecutive offsets with one delivery count, cut where an in-flight batch starts."""
        starts = set(self._batch_starts)
        counts, base = self._offsets.counts, self._start
        runs: list[list[int]] = []  # [first, last, delivery count]
        run = [-2, -2, -1]
        for offset in offsets:
            count = counts[offset - base]
            if run[1] + 1 == offset and run[2] == count and offset not in starts:
                run[1] = offset
            else:
                run = [offset, offset, count]
                runs.append(run)
        return [AcquiredRecords(first, last, count) for first, last, count in runs]

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
        offsets, start = self._offsets, self._start
        for first, last, ack_type in sorted(planned, key=lambda run: run[0]):
            if ack_type is AcknowledgeType.RENEW:
                offsets.renew_run(first - start, last - start + 1, renewed_deadline_ms)
                continue
            offsets.release_run(first - start, last - start + 1, _ACK_TO_STATE[ack_type],
                                self.config.delivery_count_limit)
            changed.append((first, last))
        writes = self._persister_batches(changed)
        self._advance_start_offset()
        return writes

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
        offsets = self._offsets
        if not len(offsets):
            raise ShareAcknowledgeError(
                INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache."
            )
        last_cached = self._start + len(offsets) - 1
        if batch.first_offset > last_cached:
            raise ShareAcknowledgeError(
                INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records."
            )
        if batch.last_offset > last_cached:
            raise ShareAcknowledgeError(
                INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records."
            )
        first = max(batch.first_offset, self._start)
        window = slice(first - self._start, batch.last_offset - self._start + 1)
        length = batch.last_offset - first + 1
        if (
            offsets.states[window].count(RecordState.ACQUIRED) != length
            or offsets.members[window].count(member_id) != length
            or any(f <= batch.last_offset and first <= e for f, e, _t in planned)
        ):
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
        offsets = self._offsets
        for offset in range(first, last + 1):
            index = offset - self._start
            if offsets.states[index] is not RecordState.ACQUIRED or any(f <= offset <= e for f, e, _t in planned):
                raise ShareAcknowledgeError(
                    INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired."
                )
            if offsets.members[index] != member_id:
                raise ShareAcknowledgeError(INVALID_RECORD_STATE, "Member is not the owner of offset")

    def release_acquired_records(self, member_id: str) -> list[PersisterStateBatch]:
        """The member left or closed its share session: its acquired records become AVAILABLE again (ARCHIVED if
        they reached the delivery count limit), their delivery counts unchanged."""
        offsets = self._offsets
        states = offsets.states
        held = [i for i, m in enumerate(offsets.members) if m == member_id and states[i] is RecordState.ACQUIRED]
        return self._release_indexes(held)

    def next_lock_deadline_ms(self) -> int | None:
        return self._offsets.next_lock_deadline_ms()

    def expire_acquisition_locks(self) -> list[PersisterStateBatch]:
        """Release every acquired record whose lock (`record_lock_duration_ms`) has run out, as the member's
        RELEASE would; returns the state batches to persist."""
        now_ms = self._clock_ms()
        offsets = self._offsets
        deadline = offsets.next_lock_deadline_ms()
        if deadline is None or deadline > now_ms:
            return []
        states = offsets.states
        expired = [i for i, d in enumerate(offsets.deadlines) if d <= now_ms and states[i] is RecordState.ACQUIRED]
        return self._release_indexes(expired)

    def _release_indexes(self, indexes: list[int]) -> list[PersisterStateBatch]:
        limit = self.config.delivery_count_limit
        for index in indexes:
            self._offsets.release_run(index, index + 1, RecordState.AVAILABLE, limit)
        writes = self._persister_batches(_runs(self._start + i for i in indexes))
        self._advance_start_offset()
        return writes

    # ---- the start offset -----------------------------------------------------------------------------------
    def on_log_start_offset(self, log_start_offset: int) -> bool:
        """The log's start offset moved (retention, DeleteRecords) past the SPSO: what is gone is archived and the
        SPSO follows it. Returns True when the SPSO moved (the caller persists the new start offset)."""
        if log_start_offset <= self._start:
            return False
        self._offsets.drop_front(log_start_offset - self._start)
        self._start = log_start_offset
        if not len(self._offsets):
            self._end = log_start_offset
        self._batch_starts = [s for s in self._batch_starts if s >= self._start]
        self._advance_start_offset()
        return True

    def _advance_start_offset(self) -> None:
        terminal = self._offsets.leading_terminal()
        if not terminal:
            return
        if terminal == len(self._offsets):
            self._start = self._end = self._start + terminal
            self._offsets.clear()
            self._batch_starts.clear()
            return
        self._offsets.drop_front(terminal)
        self._start += terminal
        index = bisect.bisect_right(self._batch_starts, self._start)
        self._batch_starts = [self._start, *self._batch_starts[index:]]

    def _persister_batches(
        self, runs: Iterable[tuple[int, int]], acquired_as_available: bool = False
    ) -> list[PersisterStateBatch]:
        """The offsets of `runs` (first, last), ascending, as state batches: runs of one (state, delivery count)."""
        states, counts, base = self._offsets.states, self._offsets.counts, self._start
        out: list[list[int]] = []  # [first, last, state, delivery count]
        for first, last in runs:
            window = slice(first - base, last - base + 1)
            length = last - first + 1
            state, count = states[first - base], counts[first - base]
            if states[window].count(state) == length and counts[window].count(count) == length:
                pieces: Iterable[tuple[int, RecordState, int]] = ((first, state, count),)
                last_of_piece = last
            else:
                pieces = ((o, states[o - base], counts[o - base]) for o in range(first, last + 1))
                last_of_piece = -1
            for offset, piece_state, piece_count in pieces:
                if acquired_as_available and piece_state is RecordState.ACQUIRED:
                    piece_state = RecordState.AVAILABLE
                end = last_of_piece if last_of_piece >= 0 else offset
                if out and out[-1][1] + 1 == offset and out[-1][2] == piece_state and out[-1][3] == piece_count:
                    out[-1][1] = end
                else:
                    out.append([offset, end, int(piece_state), piece_count])
        return [PersisterStateBatch(first, last, state, count) for first, last, state, count in out]


def _runs(offsets: Iterable[int]) -> list[tuple[int, int]]:
    """Ascending offsets as runs of consecutive ones, (first, last)."""
    runs: list[tuple[int, int]] = []
    for offset in offsets:
        if runs and runs[-1][1] + 1 == offset:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return runs

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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from minikafka.broker.share import share_acknowledgement, share_acquisition
from minikafka.broker.share.in_flight_batch import InFlightBatch
from minikafka.broker.share.in_flight_state import InFlightState, InFlightStateSnapshot, merge_pieces
from minikafka.broker.share.share_acquisition import ShareAcquiredRecords
from minikafka.broker.share.share_types import (
    AbortedTransaction,
    AcknowledgementBatch,
    FetchedBatch,
    PersisterStateBatch,
    RecordState,
    ShareAcquireMode,
    ShareGroupConfig,
)

__all__ = ["UNINITIALIZED_START_OFFSET", "InFlightBatchView", "ShareAcquiredRecords", "SharePartition"]

#: The start offset the share coordinator reports for a partition no consumer has read yet (`PartitionFactory`).
UNINITIALIZED_START_OFFSET = -1
_AVAILABLE = RecordState.AVAILABLE


@dataclass(frozen=True, slots=True)
class InFlightBatchView:
    first_offset: int
    last_offset: int
    states: tuple[tuple[RecordState, int, str], ...]  # per offset: state, delivery count, member id


class SharePartition:
    """The in-flight state of one share partition. See the module docstring for what it owns; acquisition
    (`share_acquisition`) and acknowledgement (`share_acknowledgement`) are functions over its `InFlightState`."""

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
        self._state = InFlightState()
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
        in_flight = InFlightState(start_offset)
        in_flight.set_batches(batches)
        in_flight.end_offset = next_offset - 1 if batches else start_offset
        in_flight.advance_start_offset()
        self._state = in_flight
        self.state_epoch = state_epoch
        self.initialized = True

    def snapshot(self) -> InFlightStateSnapshot:
        """A copy of the in-flight state, for `restore` when the write of a change fails."""
        return self._state.snapshot()

    def restore(self, snapshot: InFlightStateSnapshot) -> None:
        """Put back the state `snapshot` took (Kafka's rollback of in-flight state on a persister failure)."""
        self._state.restore(snapshot)

    # ---- offsets ------------------------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._state.start_offset

    @property
    def end_offset(self) -> int:
        return self._state.end_offset

    def next_fetch_offset(self) -> int:
        """Where the next log read for this partition starts: the first AVAILABLE offset, else past the end."""
        return self._state.next_fetch_offset()

    def can_acquire_records(self) -> bool:
        """Kafka's canAcquireRecords: in-flight records are AVAILABLE again, or the window from the SPSO to the
        SPEO has room under `group.share.partition.max.record.locks`; else a fetch need not read the log."""
        if self._state.next_fetch_offset() != self._state.end_offset + 1:
            return True
        return self._state.window() < self.config.partition_max_record_locks

    def in_flight_count(self) -> int:
        """Offsets from the SPSO neither ACKNOWLEDGED nor ARCHIVED (Kafka's InFlightMessageCount)."""
        return self._state.counts()[0]

    def delivery_complete_count(self) -> int:
        """Offsets at or past the SPSO whose delivery is complete (KIP-1226's DeliveryCompleteCount)."""
        return self._state.counts()[1]

    def in_flight_batch_count(self) -> int:
        return sum(1 for _batch in self._state.live_batches())

    def archived_count(self) -> int:
        """ARCHIVED offsets from the SPSO (rejected, over the delivery limit, aborted, gaps)."""
        return sum(last - first + 1
                   for batch, start in self._state.live_batches()
                   for first, last, state, _count in batch.pieces(start, batch.last_offset)
                   if state is RecordState.ARCHIVED)

    def offset_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, member id) of an offset in flight; None below the SPSO or past the SPEO."""
        found = self._state.offset_state(offset)
        return None if found is None else found[:3]

    def in_flight_batches(self) -> list[InFlightBatchView]:
        """Every in-flight batch from the SPSO with its offsets' states (tests and tools; one tuple per offset)."""
        return [
            InFlightBatchView(first, batch.last_offset,
                              tuple(batch.offset_state(o)[:3] for o in range(first, batch.last_offset + 1)))
            for batch, first in self._state.live_batches()
        ]

    def state_batches(self) -> list[PersisterStateBatch]:
        """The state to snapshot: runs of equal (state, delivery count), ACQUIRED written as AVAILABLE (its lock
        does not survive the broker), never-delivered gap offsets left out."""
        pieces = [
            piece
            for batch, first in self._state.live_batches()
            for piece in batch.pieces(first, batch.last_offset)
            if not (piece[2] is _AVAILABLE and piece[3] == 0)
        ]
        return merge_pieces(pieces, acquired_as_available=True)

    def next_lock_deadline_ms(self) -> int | None:
        return self._state.next_lock_deadline_ms()

    # ---- acquisition, acknowledgement, release, lock expiry ------------------------------------------------
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
        """Acquire for `member_id` the records of `batches` (read from `fetch_offset`) that are free to deliver
        (`share_acquisition.acquire`)."""
        if not self.initialized:
            return ShareAcquiredRecords()
        return share_acquisition.acquire(
            self._state, self.config, self._clock_ms(), member_id, fetch_offset, batches,
            max_fetch_records=max_fetch_records, batch_size=batch_size, acquire_mode=acquire_mode,
            aborted_transactions=aborted_transactions)

    def acknowledge(self, member_id: str, batches: Sequence[AcknowledgementBatch]) -> list[PersisterStateBatch]:
        """Apply a member's acknowledgements, all or none (`share_acknowledgement.acknowledge`); returns the state
        batches to persist."""
        return share_acknowledgement.acknowledge(self._state, self.config, self._clock_ms(), member_id, batches)

    def release_acquired_records(self, member_id: str) -> list[PersisterStateBatch]:
        """The member closed its share session: its acquired records become AVAILABLE again."""
        return share_acknowledgement.release_acquired_records(self._state, self.config, member_id)

    def expire_acquisition_locks(self) -> list[PersisterStateBatch]:
        """Release every acquired record whose lock (`record_lock_duration_ms`) has run out."""
        return share_acknowledgement.expire_acquisition_locks(self._state, self.config, self._clock_ms())

    def on_log_start_offset(self, log_start_offset: int) -> bool:
        """The log's start offset moved (retention, DeleteRecords) past the SPSO: what is gone is archived and the
        SPSO follows it. Returns True when the SPSO moved (the caller persists the new start offset)."""
        return self._state.on_log_start_offset(log_start_offset, self.config.delivery_count_limit)

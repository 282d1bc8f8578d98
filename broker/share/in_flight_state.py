"""`InFlightState`: a share partition's in-flight batches and its start and end offsets, as Apache Kafka 4.3.1's
`SharePartition` keeps them (`cachedState`, a sorted map of `InFlightBatch`es, `startOffset`, `endOffset`): the
queries acquisition and acknowledgement share (the batches over a range, the next fetch offset, the window), the
one state change both make (`transition`), the SPSO's advance, and the state batches a change writes.

The batches are contiguous and ascending from the first one holding the SPSO (which may start before it) to the
last offset ever acquired; memory and time go with the number of batches, not offsets (`InFlightBatch`). Not
thread-safe: the owning `SharePartition`'s thread only.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from minikafka.broker.share.in_flight_batch import TERMINAL_STATES, InFlightBatch
from minikafka.broker.share.share_types import PersisterStateBatch, RecordState

__all__ = ["InFlightState", "InFlightStateSnapshot", "add_run", "is_acquired", "merge_pieces", "union_runs"]

_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ARCHIVED = RecordState.ARCHIVED
_UNKNOWN = -2  # the cached earliest lock deadline must be recomputed

#: picks offsets for `InFlightState.transition`: (state, member id, lock deadline) -> picked
OffsetFilter = Callable[[RecordState, str, int], bool]


@dataclass(frozen=True, slots=True)
class InFlightStateSnapshot:
    """The whole in-flight state at one moment, to put back with `InFlightState.restore`."""

    start_offset: int
    end_offset: int
    batches: list[InFlightBatch]


class InFlightState:
    """The in-flight batches and offsets of one share partition. See the module docstring."""

    def __init__(self, start_offset: int = 0) -> None:
        self.start_offset = start_offset  # the SPSO: the first offset not yet ACKNOWLEDGED or ARCHIVED
        self.end_offset = start_offset  # the SPEO: the last offset in flight (the SPSO while none is)
        self.batches: list[InFlightBatch] = []  # contiguous, ascending; the first may start before the SPSO
        self._firsts: list[int] = []  # first offsets of `batches`, for bisect
        self._min_deadline_ms: int | None = _UNKNOWN

    def set_batches(self, batches: list[InFlightBatch]) -> None:
        self.batches = batches
        self._firsts = [b.first_offset for b in batches]
        self._min_deadline_ms = _UNKNOWN

    def append_batch(self, batch: InFlightBatch) -> None:
        self.batches.append(batch)
        self._firsts.append(batch.first_offset)
        self._min_deadline_ms = _UNKNOWN

    def deadlines_changed(self) -> None:
        self._min_deadline_ms = _UNKNOWN

    def snapshot(self) -> InFlightStateSnapshot:
        return InFlightStateSnapshot(self.start_offset, self.end_offset, [batch.copy() for batch in self.batches])

    def restore(self, snapshot: InFlightStateSnapshot) -> None:
        self.start_offset, self.end_offset = snapshot.start_offset, snapshot.end_offset
        self.set_batches([batch.copy() for batch in snapshot.batches])

    # ---- queries ------------------------------------------------------------------------------------------
    def cache_after(self) -> int:
        """The first offset past the in-flight batches (the SPSO when there are none)."""
        return self.batches[-1].last_offset + 1 if self.batches else self.start_offset

    def overlapping(self, first: int, last: int) -> Iterator[InFlightBatch]:
        """The in-flight batches holding any offset of [first, last], ascending."""
        batches = self.batches
        index = max(0, bisect.bisect_right(self._firsts, first) - 1)
        while index < len(batches) and batches[index].first_offset <= last:
            if batches[index].last_offset >= first:
                yield batches[index]
            index += 1

    def next_fetch_offset(self) -> int:
        """The first AVAILABLE offset from the SPSO, else past the end."""
        for batch in self.overlapping(self.start_offset, self.end_offset):
            offset = batch.first_with_state(max(batch.first_offset, self.start_offset), _AVAILABLE)
            if offset is not None:
                return offset
        return self.end_offset + 1 if self.batches else self.end_offset

    def window(self) -> int:
        """Kafka's numInFlightRecords: `endOffset - startOffset + 1`, 0 while nothing is in flight."""
        return self.end_offset - self.start_offset + 1 if self.batches else 0

    def live_batches(self) -> Iterator[tuple[InFlightBatch, int]]:
        """The batches holding offsets from the SPSO, each with its first offset at or past the SPSO."""
        for batch in self.batches:
            first = max(batch.first_offset, self.start_offset)
            if first <= batch.last_offset:
                yield batch, first

    def counts(self) -> tuple[int, int]:
        """(non-terminal, terminal) offsets from the SPSO to the end of the in-flight batches."""
        non_terminal = terminal = 0
        for batch, first in self.live_batches():
            live, _available = batch.count_states(first, batch.last_offset)
            non_terminal += live
            terminal += batch.last_offset - first + 1 - live
        return non_terminal, terminal

    def offset_state(self, offset: int) -> tuple[RecordState, int, str, int] | None:
        """(state, delivery count, member id, lock deadline) of an offset in flight; None outside the window."""
        if not self.start_offset <= offset < self.cache_after():
            return None
        return next(self.overlapping(offset, offset)).offset_state(offset)

    def next_lock_deadline_ms(self) -> int | None:
        """The earliest lock deadline of an ACQUIRED offset; None when none is acquired."""
        if self._min_deadline_ms == _UNKNOWN:
            deadlines = [d for d in (b.min_deadline_ms() for b in self.batches) if d is not None]
            self._min_deadline_ms = min(deadlines) if deadlines else None
        return self._min_deadline_ms

    def persister_batches(self, runs: Iterable[tuple[int, int]]) -> list[PersisterStateBatch]:
        """The offsets of `runs` (first, last), ascending, as state batches: runs of one (state, delivery count)."""
        pieces = [
            piece
            for first, last in runs
            for batch in self.overlapping(first, last)
            for piece in batch.pieces(max(first, batch.first_offset), min(last, batch.last_offset))
        ]
        return merge_pieces(pieces)

    # ---- changes ------------------------------------------------------------------------------------------
    def transition(self, first: int, last: int, selected: OffsetFilter, state: RecordState,
                   delivery_count_limit: int) -> list[tuple[int, int]]:
        """The offsets of [first, last] that `selected(state, member, lock deadline)` picks go to `state` (AVAILABLE
        becomes ARCHIVED at `delivery_count_limit`), released by their member; a batch only partly changed is
        split. Returns the changed offsets as runs (first, last)."""
        changed: list[tuple[int, int]] = []
        for batch in self.overlapping(first, last):
            lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
            if batch.states is None:
                if not selected(batch.state, batch.member_id, batch.deadline_ms):
                    continue
                if batch.covers(lo, hi):
                    count = batch.delivery_count
                    batch.set_batch_state(
                        _ARCHIVED if state is _AVAILABLE and count >= delivery_count_limit else state, count)
                    add_run(changed, lo, hi)
                    continue
            states = batch.split()
            counts, members, deadlines = batch.counts, batch.members, batch.deadlines
            for offset in range(lo, hi + 1):
                index = offset - batch.first_offset
                if selected(states[index], members[index], deadlines[index]):
                    count = counts[index]
                    batch.set_offset_state(
                        index, _ARCHIVED if state is _AVAILABLE and count >= delivery_count_limit else state, count)
                    add_run(changed, offset, offset)
        if changed:
            self._min_deadline_ms = _UNKNOWN
        return changed

    def advance_start_offset(self) -> None:
        """Kafka's maybeUpdateCachedStateAndOffsets: the SPSO moves to the first offset not yet ACKNOWLEDGED or
        ARCHIVED; batches wholly before it are forgotten."""
        start = self.start_offset
        for batch in self.overlapping(start, self.end_offset):
            offset = batch.first_non_terminal(max(start, batch.first_offset))
            if offset is not None:
                start = offset
                break
            start = batch.last_offset + 1
        if start == self.start_offset:
            return
        self.start_offset = start
        if start >= self.cache_after():
            self.end_offset = start
            self.set_batches([])
            return
        drop = bisect.bisect_right(self._firsts, start) - 1
        if drop > 0:
            del self.batches[:drop], self._firsts[:drop]

    def on_log_start_offset(self, log_start_offset: int, delivery_count_limit: int) -> bool:
        """The log's start offset moved past the SPSO: what is gone is archived and the SPSO follows it. Returns
        True when the SPSO moved."""
        if log_start_offset <= self.start_offset:
            return False
        if log_start_offset > self.end_offset or not self.batches:
            self.start_offset = self.end_offset = log_start_offset
            self.set_batches([])
            return True
        self.transition(self.start_offset, log_start_offset - 1,
                        lambda state, _m, _d: state not in TERMINAL_STATES, _ARCHIVED, delivery_count_limit)
        self.advance_start_offset()
        return True


def is_acquired(state: RecordState, _member: str, _deadline_ms: int) -> bool:
    return state is _ACQUIRED


def add_run(runs: list[tuple[int, int]], first: int, last: int) -> None:
    """Append [first, last] to ascending runs, joining it to the last run when contiguous."""
    if runs and runs[-1][1] + 1 == first:
        runs[-1] = (runs[-1][0], last)
    else:
        runs.append((first, last))


def union_runs(runs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs (first, last) sorted, contiguous ones joined."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(runs):
        add_run(out, first, last)
    return out


def merge_pieces(pieces: Iterable[tuple[int, int, RecordState, int]],
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

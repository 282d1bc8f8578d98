"""`InFlightBatch`: one in-flight batch of a share partition, as Apache Kafka 4.3.1's `InFlightBatch` keeps it.

A batch holds one state for all its offsets (state, delivery count, holding member, lock deadline) until an
acknowledgement, a release, a lock expiry or an acquisition touches only part of it; then it is split
(`split`) and keeps that state per offset, as Kafka's `offsetState` map, here four parallel lists indexed from
`first_offset` (an object per offset made the garbage collector's full collections run every few fetches). Memory
is one small object per batch plus four list slots per offset of a split batch: a gap in the log is one batch,
whatever its length. Not thread-safe: the owning `SharePartition`'s thread only.
"""

from __future__ import annotations

from minikafka.broker.share.share_types import RecordState

__all__ = ["NO_MEMBER", "TERMINAL_STATES", "InFlightBatch"]

TERMINAL_STATES = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})
NO_MEMBER = ""


class InFlightBatch:
    """Offsets `first_offset .. last_offset` and their delivery state: batch-level while `states is None`, per
    offset (the lists, index = offset - first_offset) once split."""

    __slots__ = ("counts", "deadline_ms", "deadlines", "delivery_count", "first_offset", "last_offset", "member_id",
                 "members", "state", "states")

    def __init__(self, first_offset: int, last_offset: int, state: RecordState, delivery_count: int,
                 member_id: str = NO_MEMBER, deadline_ms: int = 0) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = deadline_ms
        self.states: list[RecordState] | None = None
        self.counts: list[int] = []
        self.members: list[str] = []
        self.deadlines: list[int] = []

    def __len__(self) -> int:
        return self.last_offset - self.first_offset + 1

    def __repr__(self) -> str:
        if self.states is None:
            return (f"InFlightBatch({self.first_offset}-{self.last_offset} {self.state.name} "
                    f"count={self.delivery_count} member={self.member_id!r})")
        return f"InFlightBatch({self.first_offset}-{self.last_offset} split)"

    def copy(self) -> InFlightBatch:
        batch = InFlightBatch(self.first_offset, self.last_offset, self.state, self.delivery_count, self.member_id,
                              self.deadline_ms)
        if self.states is not None:
            batch.states = self.states[:]
            batch.counts, batch.members, batch.deadlines = self.counts[:], self.members[:], self.deadlines[:]
        return batch

    def split(self) -> list[RecordState]:
        """Keep the state per offset from now on (Kafka's initializeInflightState); returns the states list."""
        if self.states is None:
            length = len(self)
            self.states = [self.state] * length
            self.counts = [self.delivery_count] * length
            self.members = [self.member_id] * length
            self.deadlines = [self.deadline_ms] * length
        return self.states

    def covers(self, first: int, last: int) -> bool:
        return first <= self.first_offset and self.last_offset <= last

    def set_batch_state(self, state: RecordState, delivery_count: int, member_id: str = NO_MEMBER,
                        deadline_ms: int = 0) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = deadline_ms

    def set_offset_state(self, index: int, state: RecordState, delivery_count: int, member_id: str = NO_MEMBER,
                         deadline_ms: int = 0) -> None:
        assert self.states is not None
        self.states[index] = state
        self.counts[index] = delivery_count
        self.members[index] = member_id
        self.deadlines[index] = deadline_ms

    def offset_state(self, offset: int) -> tuple[RecordState, int, str, int]:
        """(state, delivery count, member id, lock deadline) of one offset of this batch."""
        if self.states is None:
            return self.state, self.delivery_count, self.member_id, self.deadline_ms
        index = offset - self.first_offset
        return self.states[index], self.counts[index], self.members[index], self.deadlines[index]

    def pieces(self, first: int, last: int) -> list[tuple[int, int, RecordState, int]]:
        """[first, last] (inside this batch) as runs of one (state, delivery count): (first, last, state, count)."""
        if self.states is None:
            return [(first, last, self.state, self.delivery_count)]
        out: list[tuple[int, int, RecordState, int]] = []
        base, states, counts = self.first_offset, self.states, self.counts
        run_first, run_state, run_count = first, states[first - base], counts[first - base]
        for offset in range(first + 1, last + 1):
            state, count = states[offset - base], counts[offset - base]
            if state is not run_state or count != run_count:
                out.append((run_first, offset - 1, run_state, run_count))
                run_first, run_state, run_count = offset, state, count
        out.append((run_first, last, run_state, run_count))
        return out

    def count_states(self, first: int, last: int) -> tuple[int, int]:
        """(non-terminal, AVAILABLE) offsets in [first, last] (inside this batch)."""
        if self.states is None:
            length = last - first + 1
            return (0 if self.state in TERMINAL_STATES else length,
                    length if self.state is RecordState.AVAILABLE else 0)
        window = self.states[first - self.first_offset:last - self.first_offset + 1]
        terminal = window.count(RecordState.ACKNOWLEDGED) + window.count(RecordState.ARCHIVED)
        return len(window) - terminal, window.count(RecordState.AVAILABLE)

    def first_with_state(self, first: int, state: RecordState) -> int | None:
        """The first offset at or after `first` in this batch with `state`, or None."""
        if self.states is None:
            return first if self.state is state else None
        try:
            return self.first_offset + self.states.index(state, first - self.first_offset)
        except ValueError:
            return None

    def first_non_terminal(self, first: int) -> int | None:
        """The first offset at or after `first` in this batch neither ACKNOWLEDGED nor ARCHIVED, or None."""
        if self.states is None:
            return None if self.state in TERMINAL_STATES else first
        states = self.states
        for index in range(first - self.first_offset, len(states)):
            if states[index] not in TERMINAL_STATES:
                return self.first_offset + index
        return None

    def min_deadline_ms(self) -> int | None:
        """The earliest lock deadline of an ACQUIRED offset of this batch, or None."""
        if self.states is None:
            return self.deadline_ms if self.state is RecordState.ACQUIRED else None
        states = self.states
        deadlines = [d for i, d in enumerate(self.deadlines) if states[i] is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

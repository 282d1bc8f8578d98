"""`InFlightOffsets`: the per-offset delivery state of a share partition's in-flight offsets (state, delivery
count, holding member, lock deadline), as four parallel lists indexed from the partition's start offset.

Parallel lists rather than an object per offset: a share partition acquires whole log batches (a thousand 1 KiB
records a fetch), and an object per offset made the garbage collector's full collections (tens of ms over the
broker's heap) run every few fetches, stalling every connection. It also keeps, with every change, the counts and
the earliest lock deadline that each fetch and each acknowledgement asks for, so neither scans up to
`group.share.partition.max.record.locks` offsets. Not thread-safe: the owning `SharePartition`'s thread only.
"""

from __future__ import annotations

from minikafka.broker.share.share_types import RecordState

__all__ = ["InFlightOffsets"]

_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ARCHIVED = RecordState.ARCHIVED
_TERMINAL_STATES = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})
_NO_MEMBER = ""


class InFlightOffsets:
    """The state of offsets `start .. start + len - 1` of one share partition (indexes here are relative to
    `start`, which the owner keeps). See the module docstring."""

    __slots__ = ("_deadline_known", "_min_deadline_ms", "available", "counts", "deadlines", "members",
                 "non_terminal", "states")

    def __init__(self) -> None:
        self.states: list[RecordState] = []
        self.counts: list[int] = []  # delivery counts
        self.members: list[str] = []  # the member holding an ACQUIRED offset, else ""
        self.deadlines: list[int] = []  # the lock deadline of an ACQUIRED offset, else 0
        self.non_terminal = 0  # offsets neither ACKNOWLEDGED nor ARCHIVED
        self.available = 0  # AVAILABLE offsets
        # While known, the cached minimum is exact: releasing the offset that holds it makes it unknown.
        self._min_deadline_ms: int | None = None
        self._deadline_known = True

    def __len__(self) -> int:
        return len(self.states)

    def append_run(self, state: RecordState, delivery_count: int, length: int, member_id: str = _NO_MEMBER,
                   deadline_ms: int = 0) -> None:
        """Append `length` offsets in one state."""
        if length <= 0:
            return
        self.states.extend([state] * length)
        self.counts.extend([delivery_count] * length)
        self.members.extend([member_id] * length)
        self.deadlines.extend([deadline_ms] * length)
        if state not in _TERMINAL_STATES:
            self.non_terminal += length
        if state is _AVAILABLE:
            self.available += length
        elif state is _ACQUIRED:
            self._note_deadline(deadline_ms)

    def drop_front(self, length: int) -> None:
        """Forget the first `length` offsets (the start offset moved past them)."""
        if length >= len(self.states):
            self.clear()
            return
        terminal = all(state in _TERMINAL_STATES for state in self.states[:length])
        del self.states[:length], self.counts[:length], self.members[:length], self.deadlines[:length]
        if not terminal:
            self.recount()

    def clear(self) -> None:
        self.states.clear()
        self.counts.clear()
        self.members.clear()
        self.deadlines.clear()
        self.recount()

    def recount(self) -> None:
        self.non_terminal = sum(1 for state in self.states if state not in _TERMINAL_STATES)
        self.available = self.states.count(_AVAILABLE)
        self._deadline_known = False

    def leading_terminal(self) -> int:
        """How many offsets from the first one are ACKNOWLEDGED or ARCHIVED."""
        count = 0
        for state in self.states:
            if state not in _TERMINAL_STATES:
                break
            count += 1
        return count

    def first_available(self) -> int | None:
        if not self.available:
            return None
        return self.states.index(_AVAILABLE)

    # ---- state changes of one offset -----------------------------------------------------------------------
    def acquire(self, index: int, member_id: str, deadline_ms: int) -> int:
        """An AVAILABLE offset is acquired; returns its new delivery count."""
        self.states[index] = _ACQUIRED
        self.available -= 1
        count = self.counts[index] + 1
        self.counts[index] = count
        self.members[index] = member_id
        self.deadlines[index] = deadline_ms
        self._note_deadline(deadline_ms)
        return count

    def archive_available(self, index: int) -> None:
        self.states[index] = _ARCHIVED
        self.available -= 1
        self.non_terminal -= 1

    def release_run(self, start: int, stop: int, state: RecordState, delivery_count_limit: int) -> None:
        """The ACQUIRED offsets [start, stop) leave ACQUIRED for `state` (AVAILABLE becomes ARCHIVED for an offset
        at the delivery count limit)."""
        length = stop - start
        window = slice(start, stop)
        if self._deadline_known and self._min_deadline_ms in self.deadlines[window]:
            self._deadline_known = False
        if state is _AVAILABLE:
            states, counts = self.states, self.counts
            for index in range(start, stop):
                if counts[index] >= delivery_count_limit:
                    states[index] = _ARCHIVED
                    self.non_terminal -= 1
                else:
                    states[index] = _AVAILABLE
                    self.available += 1
        else:
            self.states[window] = [state] * length
            if state in _TERMINAL_STATES:
                self.non_terminal -= length
        self.members[window] = [_NO_MEMBER] * length
        self.deadlines[window] = [0] * length

    def renew_run(self, start: int, stop: int, deadline_ms: int) -> None:
        """The locks of the ACQUIRED offsets [start, stop) run until `deadline_ms` now."""
        self.deadlines[start:stop] = [deadline_ms] * (stop - start)
        self._deadline_known = False

    # ---- lock deadlines -------------------------------------------------------------------------------------
    def next_lock_deadline_ms(self) -> int | None:
        """The earliest lock deadline of an ACQUIRED offset; None when none is acquired."""
        if self.non_terminal == self.available:
            return None
        if not self._deadline_known:
            states = self.states
            self._min_deadline_ms = min(d for i, d in enumerate(self.deadlines) if states[i] is _ACQUIRED)
            self._deadline_known = True
        return self._min_deadline_ms

    def _note_deadline(self, deadline_ms: int) -> None:
        if self._deadline_known and (self._min_deadline_ms is None or deadline_ms < self._min_deadline_ms):
            self._min_deadline_ms = deadline_ms

"""Injected time: storage and the cleaner never call `time.time()` themselves.

`Clock` is the interface; `SystemClock` reads the OS clocks and `FakeClock` is advanced by tests.
Both are safe to share between threads (reads of a float/int are atomic under the GIL).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock and monotonic time in milliseconds."""

    def time_ms(self) -> int:
        """Milliseconds since the epoch (record timestamps, retention, lags)."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds from an arbitrary origin that never goes backwards (timeouts, durations)."""
        ...


class SystemClock:
    """The real clock."""

    def time_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class FakeClock:
    """A clock that moves only when a test calls `advance_ms` or `set_time_ms`."""

    def __init__(self, time_ms: int = 1_700_000_000_000) -> None:
        self._time_ms = time_ms
        self._monotonic_ms = 0

    def time_ms(self) -> int:
        return self._time_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def advance_ms(self, delta_ms: int) -> None:
        if delta_ms < 0:
            raise ValueError(f"FakeClock cannot go backwards (delta_ms={delta_ms})")
        self._time_ms += delta_ms
        self._monotonic_ms += delta_ms

    def set_time_ms(self, time_ms: int) -> None:
        """Set the wall clock only (to model clock skew); the monotonic clock is untouched."""
        self._time_ms = time_ms

"""Kafka's Throttler (spec §2.14) for `log.cleaner.io.max.bytes.per.second`, shared by all cleaner threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from minikafka.storage.clock import Clock

_CHECK_INTERVAL_MS = 300


class Throttler:
    """Keeps the observed byte rate of all callers at or below `desired_rate_per_sec` on average.

    Owns the current measuring window. Thread-safe: one lock guards the window; the sleep happens outside it
    only for the caller that closed the window, as in Kafka (`SV/Throttler.java`).
    """

    def __init__(self, desired_rate_per_sec: float, clock: Clock,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.desired_rate_per_sec = desired_rate_per_sec
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._period_start_ms = clock.monotonic_ms()
        self._observed_so_far = 0
        #: bytes seen since construction (Kafka's `cleaner-io` meter)
        self.total_bytes = 0

    @property
    def enabled(self) -> bool:
        return self.desired_rate_per_sec < 1e300

    def maybe_throttle(self, observed_bytes: int) -> None:
        sleep_ms = 0
        with self._lock:
            self.total_bytes += observed_bytes
            if not self.enabled:
                return
            self._observed_so_far += observed_bytes
            now_ms = self._clock.monotonic_ms()
            elapsed_ms = now_ms - self._period_start_ms
            if elapsed_ms >= _CHECK_INTERVAL_MS and self._observed_so_far > 0:
                rate_per_sec = self._observed_so_far * 1000.0 / elapsed_ms
                if rate_per_sec > self.desired_rate_per_sec:
                    sleep_ms = round(self._observed_so_far / (self.desired_rate_per_sec / 1000.0) - elapsed_ms)
                self._period_start_ms = now_ms + max(sleep_ms, 0)
                self._observed_so_far = 0
        if sleep_ms > 0:
            self._sleep(sleep_ms / 1000.0)

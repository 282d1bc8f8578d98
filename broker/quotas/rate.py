"""`SampledRate`: Kafka's quota measurement, `Rate` over a `WindowedSum` (`SampledStat`), and `QuotaUtils`'
throttle time.

The rate is the sum of the retained samples divided by the window they cover; samples are `window_ms` long and
`samples` of them are kept (plus one overlapping the start of the monitored window). Until `samples - 1` full
windows have elapsed the window is taken as that long anyway, so a new client is not throttled for its first
request, but may burst up to quota x (samples - 1) x window before it is (exactly as Kafka). A quota is violated
when the measured rate exceeds its bound; the throttle time is then the delay X that brings the observed rate O
back to the bound T over the window W: O x W / (W + X) = T, i.e. X = (O - T) / T x W.
Not thread-safe: the event-loop thread owns every rate.
"""

from __future__ import annotations

import math


class _Sample:
    __slots__ = ("event_count", "last_event_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


class SampledRate:
    """One quota sensor's rate (per second) over `samples` windows of `window_ms` (Kafka's Rate + WindowedSum)."""

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample of at least 1 ms")
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """SampledStat.record: add `value` to the current sample, advancing to a new one once it is complete."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """Rate.measure: the retained sum per second of the window."""
        self._purge_obsolete_samples(now_ms)
        total = sum(sample.value for sample in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        """Rate.windowSize: the time since the oldest retained sample began, at least `samples - 1` windows."""
        self._purge_obsolete_samples(now_ms)
        elapsed_ms = now_ms - self._oldest(now_ms).start_ms
        full_windows = elapsed_ms // self.window_ms
        min_full_windows = self.samples - 1
        if full_windows < min_full_windows:
            elapsed_ms += (min_full_windows - full_windows) * self.window_ms
        return max(elapsed_ms, 1)

    def throttle_time_ms(self, bound: float, now_ms: int) -> int:
        """QuotaUtils.throttleTime after recording: 0 while the rate is within `bound`, else the delay (ms) that
        brings it back to the bound if nothing more were recorded."""
        observed = self.measure(now_ms)
        if observed <= bound:
            return 0
        return _java_round((observed - bound) / bound * self.window_size_ms(now_ms))

    @property
    def last_record_ms(self) -> int | None:
        return max((sample.last_event_ms for sample in self._samples if sample.event_count), default=None)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        max_samples = self.samples + 1  # one extra for the sample overlapping the window's start
        self._current = (self._current + 1) % max_samples
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return min(self._samples, key=lambda sample: sample.start_ms)

    def _purge_obsolete_samples(self, now_ms: int) -> None:
        expire_age_ms = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age_ms:
                sample.reset(now_ms)


def _java_round(value: float) -> int:
    """Java's Math.round (half up), which QuotaUtils uses."""
    return math.floor(value + 0.5)

"""Kafka's quota rate and throttle math (`SampledRate`): Rate over a WindowedSum of 11 x 1 s samples, the
"at least samples - 1 windows" rule, sample expiry, and QuotaUtils.throttleTime's X = (O - T) / T x W."""

from __future__ import annotations

import pytest

from minikafka.broker.quotas.rate import SampledRate


def test_a_new_rate_counts_samples_minus_one_full_windows() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(1000, now_ms=0)
    assert rate.window_size_ms(0) == 10_000  # 0 ms elapsed + 10 missing full windows
    assert rate.measure(0) == pytest.approx(100.0)  # 1000 bytes over 10 s
    assert rate.window_size_ms(500) == 10_500
    assert rate.measure(500) == pytest.approx(1000 / 10.5)


def test_the_window_grows_with_elapsed_time_once_full() -> None:
    rate = SampledRate(samples=3, window_ms=1000)
    for second in range(5):
        rate.record(100, now_ms=second * 1000)
    # samples + 1 slots; the sample of 1 s has had no event for samples x window (3 s) and is purged
    assert rate.window_size_ms(3999) == 2999  # samples of 1, 2 and 3 s: 2.999 s elapsed, 2 full windows
    assert rate.window_size_ms(4500) == 2500  # samples of 2, 3 and 4 s
    assert rate.measure(4500) == pytest.approx(300 / 2.5)


def test_samples_without_events_for_the_whole_window_are_purged() -> None:
    rate = SampledRate(samples=2, window_ms=1000)
    rate.record(5000, now_ms=0)
    assert rate.measure(1999) == pytest.approx(5000 / 1.999)
    assert rate.measure(2000) == 0.0  # 2 windows without an event: the sample is reset


def test_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    bound = 1000.0  # per second
    rate.record(10_000, now_ms=0)
    assert rate.throttle_time_ms(bound, 0) == 0  # 10 000 / 10 s == bound: acceptable (upper bound inclusive)
    rate.record(5_000, now_ms=0)
    # O = 15 000 / 10 s = 1500/s, T = 1000/s, W = 10 s: X = (1500 - 1000) / 1000 x 10 000 ms
    assert rate.throttle_time_ms(bound, 0) == 5000


def test_in_steady_state_waiting_the_throttle_time_restores_the_bound() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    bound = 1000.0
    for now_ms in range(0, 20_000, 100):
        rate.record(100, now_ms)  # exactly the bound
    rate.record(3000, 20_000)
    window_ms = rate.window_size_ms(20_000)
    observed = rate.measure(20_000)
    throttle_ms = rate.throttle_time_ms(bound, 20_000)
    assert throttle_ms == round((observed - bound) / bound * window_ms) > 0
    assert rate.measure(20_000 + throttle_ms) <= bound * 1.01


def test_throttle_time_rounds_half_up_like_java() -> None:
    rate = SampledRate(samples=2, window_ms=1000)
    rate.record(1001, now_ms=0)
    # O = 1001/s over W = 1000 ms, T = 1000/s: X = 0.001 x 1000 = 1 ms
    assert rate.throttle_time_ms(1000.0, 0) == 1
    rate = SampledRate(samples=2, window_ms=1000)
    rate.record(1000.5, now_ms=0)
    assert rate.throttle_time_ms(1000.0, 0) == 1  # 0.5 ms rounds up


def test_negative_records_unrecord_a_value() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(20_000, now_ms=100)
    rate.record(-20_000, now_ms=100)
    assert rate.measure(100) == 0.0

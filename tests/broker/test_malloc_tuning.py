"""The broker's glibc malloc thresholds (broker/malloc_tuning.py): applied on glibc, left alone when the user set
glibc's own environment variables."""

from __future__ import annotations

import platform

import pytest

from minikafka.broker.malloc_tuning import keep_freed_memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt thresholds are glibc's")
def test_glibc_takes_the_thresholds() -> None:
    assert keep_freed_memory() is True


def test_an_explicit_malloc_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert keep_freed_memory() is False

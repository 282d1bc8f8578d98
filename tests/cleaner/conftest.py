"""Fixtures of the cleaner tests: a FakeClock at `T0` and a started `LogManager` under tmp_path.

A test module that defines its own `clock` or `log_manager` fixture overrides these.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from tests.cleaner.compacted_log import T0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def log_manager(tmp_path: Path, clock: FakeClock) -> Iterator[LogManager]:
    manager = LogManager(tmp_path / "data", {}, clock)
    manager.startup()
    yield manager
    manager.shutdown()

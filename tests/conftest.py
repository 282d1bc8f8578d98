"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess

pytest_plugins = ["pytester"]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A running minikafka broker in a subprocess, data under tmp_path; stopped (SIGTERM) afterwards."""
    process = BrokerProcess(tmp_path / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[object]:
    """Build brokers with custom overrides: `broker_factory({"auto.create.topics.enable": "false"})`."""
    started: list[BrokerProcess] = []

    def make(overrides: dict[str, str] | None = None, name: str = "data") -> BrokerProcess:
        process = BrokerProcess(tmp_path / name, overrides)
        process.start()
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()

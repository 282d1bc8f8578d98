"""Shared helpers for storage tests: batch builders and a log factory on tmp_path with a FakeClock."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from minikafka.protocol.errors import KafkaError
from minikafka.protocol.records import Record
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.unified_log import UnifiedLog

T0 = 1_700_000_000_000


def batch(
    *values: bytes | None,
    keys: Sequence[bytes | None] | None = None,
    timestamp_ms: int = T0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    **kwargs: object,
) -> bytes:
    """A client batch (base offset 0) with one record per value."""
    if keys is None:
        keys = [b"k%d" % i for i in range(len(values))]
    records = [Record(i, timestamp_ms + i, keys[i], v, ()) for i, v in enumerate(values)]
    return build_batch(records, base_offset=0, producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=base_sequence, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


LogFactory = Callable[..., UnifiedLog]


@pytest.fixture
def make_log(tmp_path: Path, clock: FakeClock) -> Iterator[LogFactory]:
    """Opens logs of `topic-0` under tmp_path; whatever a test leaves open is closed after it (files and all)."""
    opened: list[UnifiedLog] = []

    def factory(overrides: dict[str, str] | None = None, **kwargs: object) -> UnifiedLog:
        config = LogConfig.from_props(overrides or {})
        log = UnifiedLog(tmp_path / "topic-0", config, clock=clock, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield factory
    for log in opened:
        close_quietly(log)


def close_quietly(log: UnifiedLog) -> None:
    """Close a log a test is done with, whatever state the test left it in (offline, files deleted)."""
    if all(segment.log.closed for segment in log.segments()):
        return  # the test closed it
    try:
        log.close()
    except (OSError, ValueError, KafkaError):
        for segment in log.segments():
            segment.close()

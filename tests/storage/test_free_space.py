"""`FreeSpaceGuard` (minikafka.log.dir.min.free.bytes): when it samples the disk and what it refuses. The sampler
is a stand-in for statvfs so the cadence can be counted; tests/integration/test_free_space_floor.py runs the
floor on a real small filesystem."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.protocol.errors import InvalidConfigError, KafkaStorageError
from minikafka.storage.free_space import LOG_DIR_CONFIG_DEF, MIN_FREE_BYTES_CONFIG, SAMPLE_INTERVAL_S, FreeSpaceGuard


class Disk:
    """Free bytes as statvfs would report them, and how often they were asked for."""

    def __init__(self, free_bytes: int) -> None:
        self.free_bytes = free_bytes
        self.samples = 0

    def __call__(self, _path: Path) -> int:
        self.samples += 1
        return self.free_bytes


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_appends_far_above_the_floor_sample_the_disk_once_per_interval(tmp_path: Path) -> None:
    disk, clock = Disk(10_000_000), Clock()
    guard = FreeSpaceGuard(tmp_path, 1_000_000, clock, disk)
    for _ in range(100):
        guard.admit(1000)
    assert disk.samples == 1
    clock.now_s += SAMPLE_INTERVAL_S
    guard.admit(1000)
    assert disk.samples == 2


def test_an_append_that_would_cross_the_floor_is_refused_on_a_fresh_sample(tmp_path: Path) -> None:
    disk, clock = Disk(1_010_000), Clock()
    guard = FreeSpaceGuard(tmp_path, 1_000_000, clock, disk)
    guard.admit(9_000)  # estimate now 1,001,000
    disk.free_bytes = 1_001_000
    with pytest.raises(KafkaStorageError, match=f"less than {MIN_FREE_BYTES_CONFIG}=1000000"):
        guard.admit(2_000)
    assert disk.samples == 2  # the refusal looked at the disk again
    guard.admit(1_000)  # exactly down to the floor is allowed


def test_writes_resume_as_soon_as_space_is_freed(tmp_path: Path) -> None:
    disk, clock = Disk(1_000_500), Clock()
    guard = FreeSpaceGuard(tmp_path, 1_000_000, clock, disk)
    with pytest.raises(KafkaStorageError):
        guard.admit(1_000)
    disk.free_bytes = 5_000_000  # another topic was deleted; no time has passed
    guard.admit(1_000)


def test_the_estimate_catches_other_writers_at_the_next_sample(tmp_path: Path) -> None:
    disk, clock = Disk(5_000_000), Clock()
    guard = FreeSpaceGuard(tmp_path, 1_000_000, clock, disk)
    guard.admit(1_000)
    disk.free_bytes = 1_000_500  # something else filled the disk
    guard.admit(1_000)  # within the interval the estimate still says 4,998,000
    clock.now_s += SAMPLE_INTERVAL_S
    with pytest.raises(KafkaStorageError):
        guard.admit(1_000)


def test_the_floor_is_validated_with_kafkas_message() -> None:
    assert LOG_DIR_CONFIG_DEF.parse({})[MIN_FREE_BYTES_CONFIG] == 0
    with pytest.raises(InvalidConfigError, match=f"Invalid value -1 for configuration {MIN_FREE_BYTES_CONFIG}"):
        LOG_DIR_CONFIG_DEF.parse({MIN_FREE_BYTES_CONFIG: "-1"})

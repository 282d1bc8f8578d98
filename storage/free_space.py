"""`FreeSpaceGuard`: the log dir's free-space floor, `minikafka.log.dir.min.free.bytes` (beyond Kafka).

Below the floor, appends of client records are refused with KAFKA_STORAGE_ERROR before the disk is actually
full, so what still needs disk to make progress — offset commits, transaction state and markers, cleaning (which
frees space), checkpoints — finds room. Writes resume by themselves as soon as free space is back above the floor.

The free space is sampled with statvfs at most every SAMPLE_INTERVAL_S and estimated in between by subtracting
the bytes admitted since the sample; an append that would bring the estimate below the floor samples again first,
so a refusal always reflects the disk as it is now. Thread-safe (one lock; IO threads append concurrently).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least

MIN_FREE_BYTES_CONFIG = "minikafka.log.dir.min.free.bytes"
SAMPLE_INTERVAL_S = 1.0

LOG_DIR_CONFIG_DEF = ConfigDef([
    ConfigKey(
        MIN_FREE_BYTES_CONFIG, ConfigType.LONG, 0, at_least(0),
        "Free bytes the log dir keeps: appends of client records are refused with KAFKA_STORAGE_ERROR when they "
        "would leave less (0: no floor; internal topics, markers, cleaning and checkpoints are not refused).",
    ),
])


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer can still use on the filesystem holding `path`."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


class FreeSpaceGuard:
    """Admits or refuses appends against the floor; owns the last statvfs sample of its log dir."""

    def __init__(self, log_dir: Path, min_free_bytes: int, monotonic: Callable[[], float] = time.monotonic,
                 sample: Callable[[Path], int] = free_bytes) -> None:
        self.log_dir = log_dir
        self.min_free_bytes = min_free_bytes
        self._monotonic = monotonic
        self._sample = sample
        self._lock = threading.Lock()
        self._sampled_at_s = -SAMPLE_INTERVAL_S
        self._estimate_bytes = 0

    def admit(self, size_bytes: int) -> None:
        """Count an append of `size_bytes`, or raise KafkaStorageError if it would leave less than the floor."""
        with self._lock:
            now_s = self._monotonic()
            stale = now_s - self._sampled_at_s >= SAMPLE_INTERVAL_S
            if stale or self._estimate_bytes - size_bytes < self.min_free_bytes:
                self._estimate_bytes = self._sample(self.log_dir)
                self._sampled_at_s = now_s
            if self._estimate_bytes - size_bytes < self.min_free_bytes:
                raise KafkaStorageError(
                    f"Log directory {self.log_dir} has {self._estimate_bytes} bytes free; an append of {size_bytes} "
                    f"bytes would leave less than {MIN_FREE_BYTES_CONFIG}={self.min_free_bytes}")
            self._estimate_bytes -= size_bytes

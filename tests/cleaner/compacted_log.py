"""What the LogCleaner-shell tests share: a compacted topic's settings, the start time, and writing and
reading records of a real `UnifiedLog` (fixtures `clock` and `log_manager` are in this folder's conftest)."""

from __future__ import annotations

from minikafka.cleaner.config import CleanerConfig
from minikafka.protocol.records import Record, iter_batches
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.unified_log import UnifiedLog

T0 = 1_700_000_000_000
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
SMALL = CleanerConfig(dedupe_buffer_size=4 * 1024 * 1024, backoff_ms=100)


def produce(log: UnifiedLog, pairs: list[tuple[bytes | None, bytes | None]], timestamp_ms: int = T0) -> None:
    """Append one batch of (key, value) records as the leader; a None value is a tombstone."""
    records = [Record(i, timestamp_ms, key, value) for i, (key, value) in enumerate(pairs)]
    log.append_as_leader(build_batch(records, base_offset=0))


def read_all(log: UnifiedLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record from the log start."""
    data = log.read(log.log_start_offset, 1 << 30).records
    return [(r.offset, r.key, r.value) for b in iter_batches(data) if not b.is_control for r in b.records()]

"""Retained-offset plans computed in pure Python, the reference the Spark job (pipeline/exact_plan.py) is held to.

`latest_offsets` is the whole rule: over the committed keyed records of `[start, end)`, each key's highest offset,
sorted. `committed_keyed_records` reads them from a partition's files the way a read_committed consumer does
(aborted transactions from the transaction index, markers and keyless records skipped), independently of the
cleaner's own transaction tracking; the integration tests read them with a real read_committed consumer instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from minikafka.cleaner.retained_offset_plan import RetainedOffsetPlanWriter
from minikafka.protocol.records.builder import CONTROL_TYPE_ABORT, parse_control_record_type
from minikafka.storage.unified_log import UnifiedLog


def latest_offsets(records: Iterable[tuple[int, bytes | None]]) -> list[int]:
    """The plan of (offset, key) records: the highest offset of each non-None key, sorted."""
    latest: dict[bytes, int] = {}
    for offset, key in records:
        if key is not None and offset > latest.get(key, -1):
            latest[key] = offset
    return sorted(latest.values())


def committed_keyed_records(log: UnifiedLog, start_offset: int, end_offset: int) -> Iterator[tuple[int, bytes]]:
    """(offset, key) of every keyed record of a committed (or non-transactional) batch in [start, end)."""
    aborted = sorted(log.collect_aborted_transactions(start_offset, end_offset), key=lambda t: t.first_offset)
    aborting: set[int] = set()
    for segment in log.segments():
        for _, batch in segment.log.batches(0):
            if batch.last_offset < start_offset:
                continue
            if batch.base_offset >= end_offset:
                return
            while aborted and aborted[0].first_offset <= batch.last_offset:
                aborting.add(aborted.pop(0).producer_id)
            if batch.is_control:
                marker = next(iter(batch.records()), None)
                if marker is not None and parse_control_record_type(marker.key) == CONTROL_TYPE_ABORT:
                    aborting.discard(batch.producer_id)
                continue
            if batch.is_transactional and batch.producer_id in aborting:
                continue
            for record in batch.records():
                if start_offset <= record.offset < end_offset and record.key is not None:
                    yield record.offset, record.key


def write_plan(path: Path, topic_id: bytes, partition: int, start_offset: int, end_offset: int,
               offsets: Iterable[int]) -> Path:
    with open(path, "wb") as file:
        writer = RetainedOffsetPlanWriter(file, topic_id, partition, start_offset, end_offset)
        writer.add_many(list(offsets))
        writer.finish()
    return path


def plan_of_log(log: UnifiedLog, topic_id: bytes, path: Path, start_offset: int, end_offset: int) -> list[int]:
    """Compute the plan of `log` for [start, end) from its files, write it to `path`; returns the offsets."""
    offsets = latest_offsets(committed_keyed_records(log, start_offset, end_offset))
    write_plan(path, topic_id, log.partition, start_offset, end_offset, offsets)
    return offsets

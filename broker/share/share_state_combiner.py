"""Kafka 4.3.1's `PersisterStateBatchCombiner`: merge the state batches held so far with newly written ones into
sorted, non-overlapping batches, dropping what lies below the start offset.

Where batches overlap, the one with the higher delivery count wins, and at equal counts the higher delivery state
(ARCHIVED 4 > ACKNOWLEDGED 2 > AVAILABLE 0): a share partition's offsets only move forward, so this is the newest
state. Adjacent batches with the same state and count are joined. Kafka gets there by repeatedly splitting
overlapping pairs in a TreeSet; a sweep over the batch boundaries gives the same result. Pure function; thread-safe.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable

from minikafka.broker.share.share_types import PersisterStateBatch

__all__ = ["combine_state_batches"]


def combine_state_batches(
    so_far: Iterable[PersisterStateBatch], new: Iterable[PersisterStateBatch], start_offset: int
) -> list[PersisterStateBatch]:
    """`start_offset` -1 prunes nothing (a ShareUpdate that does not move the start offset)."""
    batches = []
    for batch in (*so_far, *new):
        if start_offset != -1:
            if batch.last_offset < start_offset:
                continue
            if batch.first_offset < start_offset:
                batch = PersisterStateBatch(start_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        batches.append(batch)
    events: dict[int, list[tuple[int, tuple[int, int]]]] = {}
    for batch in batches:
        priority = (batch.delivery_count, batch.delivery_state)
        events.setdefault(batch.first_offset, []).append((1, priority))
        events.setdefault(batch.last_offset + 1, []).append((-1, priority))
    active: Counter[tuple[int, int]] = Counter()
    result: list[PersisterStateBatch] = []
    points = sorted(events)
    for point, next_point in itertools.pairwise(points):
        for delta, priority in events[point]:
            active[priority] += delta
            if not active[priority]:
                del active[priority]
        if not active:
            continue
        count, state = max(active)
        last = result[-1] if result else None
        if last and last.last_offset + 1 == point and (last.delivery_count, last.delivery_state) == (count, state):
            result[-1] = PersisterStateBatch(last.first_offset, next_point - 1, state, count)
        else:
            result.append(PersisterStateBatch(point, next_point - 1, state, count))
    return result

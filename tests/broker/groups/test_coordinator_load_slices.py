"""A coordinator load gives the event loop back in short slices (issue 28, item 2).

Loading a `__consumer_offsets` partition replays every record; done in one go it held the event loop for the whole
partition (Produce and Metadata waited behind it). `CoordinatorPartitions.load_all` now runs `load_partition`'s
steps for at most `LOAD_SLICE_MS` at a time. A ticker on the same loop measures the longest it waited while one
partition of 60,000 commits loads, in CPU time (the work done between two of its turns): wall time would also count
the moments the shared CPUs ran other processes. bench/coordinator_load.py measures Produce latency on a real
broker.
"""

from __future__ import annotations

import asyncio
import gc
import time

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.coordinator_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.offsets_topic import MemoryOffsetsTopic
from minikafka.storage.clock import FakeClock

GROUPS = 200
PARTITIONS = 5
COMMITS = 60_000
PER_BATCH = 500


def test_loading_one_large_partition_never_holds_the_loop_for_long() -> None:
    clock = FakeClock()
    topic = MemoryOffsetsTopic()
    topic.create_now(1)
    keys = [encode_offset_commit_key(OffsetCommitKey(f"group-{g}", "orders", p))
            for g in range(GROUPS) for p in range(PARTITIONS)]
    for first in range(0, COMMITS, PER_BATCH):
        topic.append(0, [(keys[i % len(keys)], encode_offset_commit_value(OffsetCommitValue(i, -1, "", 0)))
                         for i in range(first, first + PER_BATCH)], 0)
    manager = GroupMetadataManager(GroupConfig(), topic, clock)

    async def load_while_ticking() -> tuple[float, list[float]]:
        gaps: list[float] = []
        load = asyncio.create_task(manager.load_all())
        started = time.process_time()
        while not load.done():
            before = time.process_time()
            await asyncio.sleep(0)
            gaps.append(time.process_time() - before)
        await load
        return time.process_time() - started, gaps

    # What earlier tests in this worker left on the heap is not the loader's: frozen, a full collection during the
    # load does not walk it (one such collection held a clean-clone run's loop for 191 ms).
    gc.collect()
    gc.freeze()
    try:
        load_s, gaps = asyncio.run(load_while_ticking())
    finally:
        gc.unfreeze()
    assert not manager.loading
    assert load_s > 0.1, "the load was too short to show anything"
    assert max(gaps) < 0.05, \
        f"the loop waited for {max(gaps) * 1000:.0f} ms of load work ({load_s:.2f} CPU-s in all)"
    assert len(manager.groups) == GROUPS
    last = COMMITS - len(keys)  # the first commit of the last round, for group-0 orders-0
    assert manager.groups["group-0"].offsets[("orders", 0)].offset == last

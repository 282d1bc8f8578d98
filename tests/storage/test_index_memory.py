"""Indexes held compactly and read lazily (issue 28, item 4).

A log of many segments reopened after a clean shutdown reads none of the indexes of the segments below the
recovery point; once every index is in memory, the entries take at most 1.2 times the index files' size (arrays of
machine integers; lists of Python ints took about ten times as much), and every lookup agrees with the files.
"""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.unified_log import UnifiedLog
from tests.storage.conftest import T0, batch

SEGMENTS = 20
ENTRIES_PER_SEGMENT = 400
PROPS = {"index.interval.bytes": "0", "segment.bytes": str(1 << 30)}


def build_log(directory: Path, clock: FakeClock) -> int:
    """SEGMENTS segments with one index entry per batch; returns the log end offset."""
    log = UnifiedLog(directory, LogConfig.from_props(PROPS), clock=clock)
    for segment in range(SEGMENTS):
        for n in range(ENTRIES_PER_SEGMENT):
            log.append_as_leader(batch(b"v", timestamp_ms=T0 + segment * ENTRIES_PER_SEGMENT + n))
        log.roll()
    end = log.log_end_offset
    log.close()
    return end


def test_indexes_below_the_recovery_point_are_read_lazily_and_held_compactly(tmp_path: Path,
                                                                             clock: FakeClock) -> None:
    directory = tmp_path / "t-0"
    end = build_log(directory, clock)
    log = UnifiedLog(directory, LogConfig.from_props(PROPS), clock=clock, recovery_point=end, clean_shutdown=True)
    segments = log.segments()
    assert len(segments) == SEGMENTS + 1
    assert not any(s.offset_index.is_loaded or s.time_index.is_loaded for s in segments[:-1])
    assert log.log_end_offset == end and segments[0].max_timestamp_so_far == T0 + ENTRIES_PER_SEGMENT - 1
    file_bytes = sum(s.offset_index.path.stat().st_size + s.time_index.path.stat().st_size for s in segments)
    assert file_bytes >= SEGMENTS * (ENTRIES_PER_SEGMENT - 1) * 20  # every batch but the first has an entry

    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for segment in segments:  # a fetch by offset and one by time read both indexes of every segment
            segment.offset_index.lookup(segment.base_offset)
            segment.time_index.lookup(T0)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(s.offset_index.is_loaded and s.time_index.is_loaded for s in segments)
    held = after - before
    print(f"index memory {held:,} B for {file_bytes:,} B of index files ({held / file_bytes:.3f}x)")
    assert held <= 1.2 * file_bytes

    for segment in segments[:-1]:
        offsets = list(struct.iter_unpack(">ii", segment.offset_index.path.read_bytes()))
        times = list(struct.iter_unpack(">qi", segment.time_index.path.read_bytes()))
        assert [segment.offset_index.entry(n) for n in range(len(offsets))] == \
            [(segment.base_offset + relative, position) for relative, position in offsets]
        assert [segment.time_index.entry(n) for n in range(len(times))] == \
            [(timestamp, segment.base_offset + relative) for timestamp, relative in times]
    middle = segments[SEGMENTS // 2]
    assert log.fetch_offset_by_timestamp(T0 + middle.base_offset + 7) == (middle.base_offset + 7,
                                                                         T0 + middle.base_offset + 7)
    log.close()

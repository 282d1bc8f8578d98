"""Index memory and open time of a log with many segments (issue 28, item 4).

    .venv/bin/python -m bench.index_memory [--segments 100] [--entries 4000] [--no-record]

Builds one partition of `--segments` segments with an index entry per batch (`index.interval.bytes=0`, so each
segment has `--entries` offset-index and time-index entries), closes it cleanly and reopens it. Reports the time to
open, how many indexes the open read, and the memory (tracemalloc) of every index once all are in memory, against
the index files' size and against the representation before issue 28 (two lists of Python ints per index, built
the same way from the same files).
"""

from __future__ import annotations

import argparse
import shlex
import struct
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from bench.results_log import HISTORY_MD, RESULTS_FILE, append_history, append_results, history_header, result
from minikafka.protocol.records import Record
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.unified_log import UnifiedLog

T0 = 1_700_000_000_000
PROPS = {"index.interval.bytes": "0", "segment.bytes": str(1 << 30)}


def build(directory: Path, segments: int, entries: int) -> int:
    clock = FakeClock(T0)
    log = UnifiedLog(directory, LogConfig.from_props(PROPS), clock=clock)
    for segment in range(segments):
        for n in range(entries + 1):  # the first batch of a segment gets no entry
            timestamp = T0 + segment * (entries + 1) + n
            log.append_as_leader(build_batch([Record(0, timestamp, None, b"v", ())], base_offset=0))
        log.roll()
    end = log.log_end_offset
    log.close()
    return end


def list_representation_bytes(log: UnifiedLog) -> int:
    """Memory of the pre-issue-28 representation: per index two lists of ints from `iter_unpack`."""
    kept = []
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for segment in log.segments():
            for path, layout in ((segment.offset_index.path, ">ii"), (segment.time_index.path, ">qi")):
                first: list[int] = []
                second: list[int] = []
                for a, b in struct.iter_unpack(layout, path.read_bytes()):
                    first.append(a)
                    second.append(b)
                kept.append((first, second))
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before


def measure(segments: int, entries: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="index-memory-") as work:
        directory = Path(work) / "t-0"
        end = build(directory, segments, entries)
        started = time.perf_counter()
        log = UnifiedLog(directory, LogConfig.from_props(PROPS), clock=FakeClock(T0), recovery_point=end,
                         clean_shutdown=True)
        open_s = time.perf_counter() - started
        all_segments = log.segments()
        read_at_open = sum(s.offset_index.is_loaded + s.time_index.is_loaded for s in all_segments)
        file_bytes = sum(s.offset_index.path.stat().st_size + s.time_index.path.stat().st_size
                         for s in all_segments)
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        started = time.perf_counter()
        for segment in all_segments:
            segment.offset_index.lookup(segment.base_offset)
            segment.time_index.lookup(T0)
        load_s = time.perf_counter() - started
        after, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        lists = list_representation_bytes(log)
        log.close()
        return {"segments": len(all_segments), "file_bytes": file_bytes, "open_s": open_s,
                "read_at_open": read_at_open, "array_bytes": after - before, "load_s": load_s, "list_bytes": lists}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--segments", type=int, default=100)
    parser.add_argument("--entries", type=int, default=4000, help="index entries per segment")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    r = measure(args.segments, args.entries)
    rows = [
        "| segments | index files | opened in | indexes read at open | arrays (all loaded) | ratio | loading all "
        "| lists (before) | ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {r['segments']:,} | {r['file_bytes'] / 2**20:.2f} MiB | {r['open_s'] * 1000:.0f} ms | "
        f"{r['read_at_open']:.0f} of {2 * r['segments']:.0f} | {r['array_bytes'] / 2**20:.2f} MiB | "
        f"{r['array_bytes'] / r['file_bytes']:.3f}x | {r['load_s'] * 1000:.0f} ms | "
        f"{r['list_bytes'] / 2**20:.2f} MiB | {r['list_bytes'] / r['file_bytes']:.1f}x |",
    ]
    table = "\n".join(rows)
    print(table)
    if not args.no_record:
        command = "python -m bench.index_memory " + shlex.join(argv if argv is not None else sys.argv[1:])
        section = [
            *history_header("Index memory of a log with many segments (issue 28)", command.strip()),
            f"- one partition, {args.entries:,} offset- and time-index entries per segment, reopened after a clean "
            "shutdown; memory by tracemalloc once every index is loaded (a lookup in each); `lists (before)` = the "
            "pre-issue-28 representation (two lists of ints per index) built from the same files",
            "",
            table,
            "",
        ]
        append_history("\n".join(section))
        append_results([result("index-memory", "index memory / index file bytes, all loaded",
                               r["array_bytes"] / r["file_bytes"], "x", command=command.strip())])
        print(f"appended to {HISTORY_MD} and {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

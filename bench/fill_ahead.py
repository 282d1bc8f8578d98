"""What filling a segment file ahead with zeros saves (issue 36): appends and reads of 16 KB batches, by fill size.

    .venv/bin/python -m bench.fill_ahead [--mib 2048] [--fill-kib 0,64,256,1024] [--dir DIR]

Per fill size, writes `--mib` MiB of 16 KB batches (plus 61 bytes, so they are not page-aligned, as a producer's
batches are not) to a fresh file in `--dir` (default: a temporary directory under bench/results, on the disk the
project lives on) the way storage/file_records.py appends to an active segment: with a fill size, zeros are first
written up to the next multiple of it whenever a batch would pass the filled end. Then it reads the file back in
1 MiB `pread`s (a Fetch of one partition), from the page cache. Prints the writing thread's CPU per MiB (the zeros,
the batches, the sum) and the best of two read passes. 0 is the plain append that extends the file each time.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

BATCH_BYTES = 16 << 10
READ_BYTES = 1 << 20


def measure(path: Path, total_bytes: int, fill_bytes: int) -> tuple[float, float, float]:
    """(CPU-s of the zeros, CPU-s of the batches, CPU-s per 1 MiB pread) for one file."""
    batch = os.urandom(BATCH_BYTES)
    zeros = memoryview(bytes(max(fill_bytes, 1)))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        zeros_s = batches_s = 0.0
        position = filled = 0
        while position + BATCH_BYTES <= total_bytes:
            end = position + BATCH_BYTES
            if fill_bytes and end > filled:
                started = time.thread_time()
                fill_end = -(-end // fill_bytes) * fill_bytes
                os.pwrite(fd, zeros[:fill_end - filled], filled)
                filled = fill_end
                zeros_s += time.thread_time() - started
            started = time.thread_time()
            os.pwrite(fd, batch, position)
            batches_s += time.thread_time() - started
            position += BATCH_BYTES + 61
        reads = total_bytes // READ_BYTES - 1
        passes = []
        for _ in range(2):
            started = time.thread_time()
            for index in range(reads):
                os.pread(fd, READ_BYTES, index * READ_BYTES)
            passes.append((time.thread_time() - started) / reads)
        return zeros_s, batches_s, min(passes)
    finally:
        os.close(fd)
        path.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fill_ahead", description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=2048)
    parser.add_argument("--fill-kib", default="0,64,256,1024")
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    mib = args.mib
    with tempfile.TemporaryDirectory(prefix="fill-ahead-", dir=args.dir) as work:
        for fill_kib in (int(item) for item in args.fill_kib.split(",")):
            zeros_s, batches_s, read_s = measure(Path(work) / "segment.log", mib << 20, fill_kib << 10)
            print(f"fill {fill_kib:>5} KiB: zeros {zeros_s / mib * 1e6:5.0f} + batches {batches_s / mib * 1e6:5.0f} = "
                  f"{(zeros_s + batches_s) / mib * 1e6:5.0f} us/MiB written; pread {read_s * 1e6:4.0f} us/MiB",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

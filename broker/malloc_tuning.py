"""glibc malloc settings for the broker process: keep freed request and response buffers instead of returning
them to the kernel after every request.

A Fetch response holds each partition's records as a `bytes` of up to `max.partition.fetch.bytes` (1 MiB by
default), so one response of eight partitions allocates and frees ~8 MiB. With glibc's defaults the freed top of
the heap above M_TRIM_THRESHOLD (dynamic: twice the mmap threshold, ~2 MiB once 1 MiB buffers have been seen) is
handed back to the kernel, and the next response faults every page in again: on this project's machine that was
~0.25 of the broker's ~0.7 CPU-s per GiB consumed from eight partitions (`bench.fetch_cpu --partitions 8`,
BENCHMARKS.md). The JVM keeps its heap for the same reason. Raising the thresholds keeps up to TRIM_THRESHOLD_BYTES
of freed memory for reuse, which bounds what it costs in resident memory.

An explicit MALLOC_TRIM_THRESHOLD_ / MALLOC_MMAP_THRESHOLD_ in the environment wins; without glibc (musl, macOS)
this does nothing. Called once at start-up, before the event loop runs. `mallopt` is looked up among the symbols the
process already has (`CDLL(None)`: glibc is loaded with the interpreter), not through `ctypes.util.find_library`,
which runs `ldconfig -p` in a child process (~10 ms of the broker's start, bench/startup.py).
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger(__name__)

#: mallopt parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: freed memory at the top of the heap kept for reuse: a few eight-partition Fetch responses' worth
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024
#: allocations below this come from the heap (glibc's maximum, 32 MiB on 64-bit): record buffers are reused
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Apply the thresholds; True when glibc took them."""
    if os.environ.get("MALLOC_TRIM_THRESHOLD_") or os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    if not applied:
        log.debug("mallopt refused the trim/mmap thresholds; glibc defaults stay")
    return applied

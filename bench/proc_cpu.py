"""CPU seconds of a process tree from /proc (Linux): a broker and every process it started.

    with ProcessTreeCpu(pid) as cpu:   # or: before = tree_cpu_seconds(pid); ...; tree_cpu_seconds(pid) - before
        ...
    cpu.seconds

For each process of the tree (`pid` and its live descendants, found through the parent pid field of
`/proc/<pid>/stat`) this sums utime + stime (all its threads) and cutime + cstime (the children it has already
waited for, so a cleaner worker that exited between two readings is still counted), in clock ticks of
`os.sysconf("SC_CLK_TCK")` (usually 100 per second: readings are good to about 10 ms per process). A process that
exited without being waited for between the two readings is missed; brokers wait for their workers.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

PROC = Path("/proc")
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the `(comm)` field (which may hold spaces), or None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rindex(")") + 2 :].split()


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None:  # fields[1] is field 4 of proc(5), the parent pid
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants (children, grandchildren, ...)."""
    children = _children_by_parent()
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending.extend(children.get(current, ()))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by `pid`, its live descendants and the children they waited for."""
    ticks = 0
    for member in process_tree(pid):
        fields = _stat_fields(member)
        if fields is not None:  # proc(5) fields 14-17: utime, stime, cutime, cstime
            ticks += sum(int(value) for value in fields[11:15])
    return ticks / CLOCK_TICKS_PER_S


class ProcessTreeCpu:
    """CPU seconds a process tree used between `__enter__` and `__exit__` (`seconds`, NaN before the exit).

    Owns nothing but the two readings; not thread-safe (one measurement per instance, from one thread).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.seconds = float("nan")
        self._start = 0.0

    def __enter__(self) -> ProcessTreeCpu:
        self._start = tree_cpu_seconds(self.pid)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.seconds = tree_cpu_seconds(self.pid) - self._start


def cpu_seconds_per_gb(cpu_seconds: float, payload_bytes: int) -> float:
    """CPU seconds per 10^9 bytes moved; NaN if nothing moved."""
    return cpu_seconds / (payload_bytes / 1e9) if payload_bytes > 0 else float("nan")

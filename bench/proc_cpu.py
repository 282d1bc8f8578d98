"""CPU seconds of a process tree from /proc (Linux): a broker and every process it started.

    with ProcessTreeCpu(pid) as cpu:   # or: before = tree_cpu_seconds(pid); ...; tree_cpu_seconds(pid) - before
        ...
    cpu.seconds

For each process of the tree (`pid` and its live descendants, found through the parent pid field of
`/proc/<pid>/stat`) this sums utime + stime (all its threads) and cutime + cstime (the children it has already
waited for, so a cleaner worker that exited between two readings is still counted), in clock ticks of
`os.sysconf("SC_CLK_TCK")` (usually 100 per second: readings are good to about 10 ms per process). A process that
exited without being waited for between the two readings is missed; brokers wait for their workers.

`ProcessTreeCpu` measures a window in nanoseconds instead where the kernel gives them: each live thread's run time
(`/proc/<pid>/task/<tid>/schedstat`, first field) is read at both ends and the per-thread differences are added up
(a thread started in the window counts from zero), plus the difference of cutime + cstime in ticks for the children
waited for. A thread that exited inside the window would take its time with it, so when the ticks differ from that
by more than their truncation, the window is measured in ticks after all (a broker's threads live as long as it
does). At 10 ms a tick, a 1 KiB consume of 0.2 GB at 0.4 CPU-s/GB was eight ticks, each 12% of the figure. Where
schedstat is missing, it falls back to the ticks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
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


def _thread_run_ns(pid: int) -> dict[int, int] | None:
    """Run time in ns of each live thread of `pid` (schedstat), or None where the kernel does not give it."""
    runs: dict[int, int] = {}
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    for task in tasks:
        try:
            runs[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile
        except (PermissionError, ValueError, IndexError):
            return None
    return runs


@dataclass(frozen=True)
class TreeSnapshot:
    """One reading of a process tree: per (pid, tid) run time in ns (None: no schedstat), the waited-for children's
    cutime + cstime ticks per pid, and the tick total of `tree_cpu_seconds` for the fallback."""

    thread_ns: dict[tuple[int, int], int] | None
    children_ticks: dict[int, int]
    ticks: int


def tree_snapshot(pid: int) -> TreeSnapshot:
    thread_ns: dict[tuple[int, int], int] | None = {}
    children_ticks: dict[int, int] = {}
    ticks = 0
    for member in process_tree(pid):
        fields = _stat_fields(member)
        if fields is None:
            continue
        ticks += sum(int(value) for value in fields[11:15])
        children_ticks[member] = int(fields[13]) + int(fields[14])
        runs = _thread_run_ns(member) if thread_ns is not None else None
        if runs is None:
            thread_ns = None
        elif thread_ns is not None:
            thread_ns.update({(member, tid): ns for tid, ns in runs.items()})
    return TreeSnapshot(thread_ns, children_ticks, ticks)


def cpu_seconds_between(start: TreeSnapshot, end: TreeSnapshot) -> float:
    """CPU seconds the tree used from `start` to `end`: per-thread ns differences plus the waited-for children's
    ticks, or the tick totals' difference when either reading has no schedstat or a thread of `start` is gone."""
    if start.thread_ns is None or end.thread_ns is None or not start.thread_ns.keys() <= end.thread_ns.keys():
        return (end.ticks - start.ticks) / CLOCK_TICKS_PER_S  # no schedstat, or a thread's time went with it
    threads_ns = sum(ns - start.thread_ns.get(key, 0) for key, ns in end.thread_ns.items())
    children = sum(ticks - start.children_ticks.get(member, 0) for member, ticks in end.children_ticks.items())
    precise = threads_ns / 1e9 + children / CLOCK_TICKS_PER_S
    ticks = (end.ticks - start.ticks) / CLOCK_TICKS_PER_S
    # Each reading of a process truncates to a tick (utime + stime, cutime + cstime): beyond that, the ticks saw
    # time the thread readings did not (a thread started and gone inside the window), so they are the measure.
    if abs(ticks - precise) > 2 * (len(end.children_ticks) + 1) / CLOCK_TICKS_PER_S:
        return ticks
    return precise


class ProcessTreeCpu:
    """CPU seconds a process tree used between `__enter__` and `__exit__` (`seconds`, NaN before the exit), from
    per-thread run times in ns where the kernel gives them (module docstring).

    Owns nothing but the two readings; not thread-safe (one measurement per instance, from one thread).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.seconds = float("nan")
        self._start: TreeSnapshot | None = None

    def __enter__(self) -> ProcessTreeCpu:
        self._start = tree_snapshot(self.pid)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._start is not None
        self.seconds = cpu_seconds_between(self._start, tree_snapshot(self.pid))


def cpu_seconds_per_gb(cpu_seconds: float, payload_bytes: int) -> float:
    """CPU seconds per 10^9 bytes moved; NaN if nothing moved."""
    return cpu_seconds / (payload_bytes / 1e9) if payload_bytes > 0 else float("nan")

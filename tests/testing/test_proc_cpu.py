"""bench/proc_cpu.py's window measurement against real processes: a child that burns known thread CPU time."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.proc_cpu import ProcessTreeCpu, tree_cpu_seconds

_BURNER = """
import sys, threading, time
release = threading.Event()
def burn(seconds, stay=False):
    started = time.thread_time()
    while time.thread_time() - started < seconds:
        pass
    if stay:
        release.wait()
sys.stdin.readline()
worker = threading.Thread(target=burn, args=(0.2, sys.argv[1] == "keep"))
worker.start()
burn(0.3)
time.sleep(0.3)
if sys.argv[1] == "join":
    worker.join()
print("done", flush=True)
sys.stdin.readline()
release.set()
"""


def _measure(mode: str) -> tuple[float, float]:
    """(ProcessTreeCpu seconds, tick-based seconds) over a window in which the child burns 0.5 s in two threads;
    with `join` the second thread has exited by the end of the window, with `keep` it waits, alive."""
    child = subprocess.Popen([sys.executable, "-c", _BURNER, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        time.sleep(0.3)  # interpreter start-up happens before the window
        ticks_before = tree_cpu_seconds(child.pid)
        with ProcessTreeCpu(child.pid) as cpu:
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline() == "done\n"
        ticks = tree_cpu_seconds(child.pid) - ticks_before
        child.stdin.write("end\n")
        child.stdin.flush()
    finally:
        child.wait(10)
    return cpu.seconds, ticks


def test_window_is_measured_to_the_millisecond_and_an_exited_thread_falls_back_to_ticks() -> None:
    measured, ticks = _measure("join")
    # the worker thread is gone at the end: the ticks are used, and they hold its 0.2 s
    assert measured == ticks
    assert 0.45 <= measured <= 0.75
    measured, ticks = _measure("keep")
    assert 0.45 <= measured <= 0.75
    assert abs(measured - ticks) <= 0.05  # ticks are good to 10 ms per thread
    assert measured != round(measured, 2)  # not a whole number of ticks: the ns reading was used

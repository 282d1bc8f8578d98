"""CPU of one cleaner worker process from its spawn to its exit on "stop": `worker_entry` (what `CleanWorker` spawns,
package `__init__`s deferred) against `worker_main` spawned directly (the worker's imports as they are), in turn.

    PYTHONPYCACHEPREFIX=.cache/startup-pycache PYTHONDONTWRITEBYTECODE= .venv/bin/python -m bench.cleaner_worker_start

(`--starts N`, 9 by default. The variables give the workers cached bytecode, as an installed broker has; without
them, where PYTHONDONTWRITEBYTECODE is set, every worker compiles what it imports.)

Each start spawns the target with the "spawn" context as CleanWorker does, sends "stop" at once (the worker reads
it once it has imported and built its offset map of 1 MiB) and reads the finished child's user + system time from
`RUSAGE_CHILDREN`. Prints the medians and their ratio. Results: DESIGN.md, "Package `__init__`s we do not use".
A spawned child imports this module too (as `__mp_main__`), so it imports the two targets only in `main()`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
from collections.abc import Callable
from typing import Any

MAP_MEMORY_BYTES = 1 << 20


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def start_and_stop(target: Callable[..., Any]) -> float:
    """CPU seconds of one worker process running `target` until it has read "stop"."""
    context = multiprocessing.get_context("spawn")
    parent_conn, child_conn = context.Pipe(duplex=True)
    before = _children_cpu_s()
    process = context.Process(target=target, args=(child_conn, MAP_MEMORY_BYTES, 0.9), daemon=True)
    process.start()
    child_conn.close()
    parent_conn.send(("stop",))
    process.join()
    parent_conn.close()
    return _children_cpu_s() - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=9, help="starts of each target")
    args = parser.parse_args(argv)
    from minikafka.cleaner.clean_worker import worker_main
    from minikafka.cleaner.worker_entry import worker_entry

    targets = {"worker_entry": worker_entry, "worker_main": worker_main}
    start_and_stop(worker_entry)  # the first spawn also starts multiprocessing's resource tracker
    cpu_s: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(args.starts):
        for name, target in targets.items():
            cpu_s[name].append(start_and_stop(target))
    for name, samples in cpu_s.items():
        print(f"{name:13} median {statistics.median(samples) * 1000:.0f} ms CPU per start "
              f"(min {min(samples) * 1000:.0f}, max {max(samples) * 1000:.0f}, n={len(samples)})")
    ratio = statistics.median(cpu_s["worker_entry"]) / statistics.median(cpu_s["worker_main"])
    print(f"worker_entry / worker_main: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

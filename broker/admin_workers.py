"""`AdminWorkers`: the admin HTTP port's own bounded thread pool, so that admin requests (console pages reading
segments, key lookups, PBKDF2 for Basic credentials, compaction requests, plan uploads) never take the default
executor's threads from the broker's flush, roll, retention and InitProducerId work.

`AdminHttpServer` owns one and makes it the current pool of each request it serves (a context variable, so routes
registered by other modules keep their `(query)` signature); routes call `admin_thread(fn, *args)` where they would
call `asyncio.to_thread` (outside a request it is `asyncio.to_thread`). Waiting for a cleaner round
(`wait_for_event`) polls on the loop instead of parking a thread for up to `timeout_ms`. `shutdown` waits for the
threads it started. Stdlib only; `admin_thread` and `wait_for_event` on the event loop, `shutdown` in a thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

#: threads of the admin pool: admin requests beyond this many wait for a thread, the broker's work never does
ADMIN_THREADS = 4
_POLL_MIN_S = 0.005
_POLL_MAX_S = 0.1

P = ParamSpec("P")
T = TypeVar("T")


class AdminWorkers:
    """`pool`, ADMIN_THREADS threads named `minikafka-admin_N` for the admin requests, and `scrape_pool`, one thread
    of its own for rendering `/metrics`, so that console pages stuck on slow disks never delay a Prometheus scrape."""

    def __init__(self, threads: int = ADMIN_THREADS) -> None:
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="minikafka-admin")
        self.scrape_pool = ThreadPoolExecutor(1, thread_name_prefix="minikafka-metrics")

    def shutdown(self) -> None:
        """Drop the queued calls and wait for the running ones (blocking: call it in a thread)."""
        self.scrape_pool.shutdown(wait=True, cancel_futures=True)
        self.pool.shutdown(wait=True, cancel_futures=True)


_CURRENT: contextvars.ContextVar[AdminWorkers | None] = contextvars.ContextVar("minikafka_admin_workers",
                                                                              default=None)


def serve_with(workers: AdminWorkers) -> None:
    """Make `workers` the pool of the admin request this task serves."""
    _CURRENT.set(workers)


async def admin_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in the current admin request's pool (the default executor outside a request)."""
    workers = _CURRENT.get()
    if workers is None:
        return await asyncio.to_thread(fn, *args, **kwargs)
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(workers.pool, call)


async def wait_for_event(event: threading.Event, timeout_s: float) -> bool:
    """Wait until `event` is set (True) or `timeout_s` passed (False), polling on the loop: no thread waits."""
    deadline = time.monotonic() + max(timeout_s, 0.0)
    delay = _POLL_MIN_S
    while not event.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, _POLL_MAX_S)
    return True

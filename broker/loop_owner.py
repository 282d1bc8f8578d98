"""`assert_on_loop`: the check that state documented "event-loop thread only" is touched only from the event loop.

With `MINIKAFKA_CHECK_LOOP_THREAD=1` in the environment (the test suite sets it, and a broker subprocess inherits it)
or Python's development mode (`python -X dev`), a call from a thread that runs no event loop raises
`LoopOwnershipError` naming the state and the thread; otherwise the check costs one environment read at import. The
broker's loop-owned objects call it where a wrong thread does harm that shows only later: resolving a purgatory
future (a long poll that misses its wake-up), building a metric snapshot of coordinator maps the loop mutates (a
scrape that fails with "dictionary changed size during iteration"). Stdlib only; any thread.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading

CHECK_ENV = "MINIKAFKA_CHECK_LOOP_THREAD"
CHECKING = os.environ.get(CHECK_ENV, "") not in ("", "0") or sys.flags.dev_mode


class LoopOwnershipError(AssertionError):
    """Loop-owned state was touched from a thread without a running event loop."""


def assert_on_loop(owner: str, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Raise LoopOwnershipError when checking is on and the calling thread does not run `loop` (with None: runs no
    event loop at all)."""
    if not CHECKING:
        return
    running = asyncio._get_running_loop()
    if running is None or (loop is not None and running is not loop):
        raise LoopOwnershipError(f"{owner} is event-loop-thread only, but thread "
                                 f"{threading.current_thread().name!r} touched it")

"""What a cleaner worker process runs first: `CleanWorker` spawns `worker_entry`, not `worker_main` itself.

A spawned interpreter imports the module of its target before it calls it, and `clean_worker`'s imports reach
aiokafka's record code and crc32c, whose package `__init__`s import aiokafka's whole client and crc32c's version
lookup (importlib.metadata): a worker took 132-141 ms of CPU from its spawn to its exit on "stop", 84-87 ms with this
entry (`python -m bench.cleaner_worker_start`, twice), in every broker that lives past the cleaner's prestart delay.
This module imports nothing heavy, so `worker_entry` can defer those `__init__`s (protocol/package_init.py, as
`minikafka serve` does) before it imports the worker. Runs in the worker process's main thread;
tests/cleaner/test_worker_imports.py checks what the worker imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minikafka.protocol.package_init import defer_package_init

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

#: the third-party packages whose `__init__` the worker never needs (their submodules import as usual)
WORKER_DEFERRED_PACKAGES = ("aiokafka", "aiokafka.record", "crc32c")


def worker_entry(conn: Connection, map_memory_bytes: int, load_factor: float) -> None:
    """The worker process: `clean_worker.worker_main`, imported once the package `__init__`s are deferred."""
    defer_package_init(*WORKER_DEFERRED_PACKAGES)
    from minikafka.cleaner.clean_worker import worker_main

    worker_main(conn, map_memory_bytes, load_factor)

"""`defer_package_init`: import a third-party package's submodules without running the package's `__init__` until
a name defined there is used.

kafka-python's and aiokafka's `__init__` import their whole clients (admin, consumer, producer, connection code:
about 0.2 s, most of the broker's import time), while the broker needs only `kafka.protocol`, `kafka.partitioner`
and `aiokafka.record._crecords` (aiokafka.record's own `__init__` imports the pure-Python codecs and their
helpers); prometheus_client's imports its HTTP exposition (http.server, wsgiref), which the broker
loads only with its admin HTTP server; crc32c's reads its own version with importlib.metadata (which imports email,
zipfile, csv... and scans the installed distributions: ~10 ms), while the broker calls only the extension
`crc32c._crc32c`. `minikafka serve` calls this before its first import reaches them (bench/startup.py,
tests/broker/test_startup_imports.py), and so does the cleaner's worker process (cleaner/worker_entry.py); it sits
in the bottom layer because the imports it shortens are the protocol and record modules'. The deferred `__init__`
still runs, once, on the first use of a name it defines (`from kafka import KafkaProducer`, `kafka.__version__`): a
module-level `__getattr__` (PEP 562) runs it then. Any thread may call it; the package's `__init__` runs under a lock.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
from types import ModuleType

_init_lock = threading.RLock()


def defer_package_init(*packages: str) -> None:
    """For each package not imported yet: put an empty module for it in sys.modules (its submodules import as
    usual); its `__init__` runs on the first lookup of a name that is not a submodule."""
    for name in packages:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            continue  # not installed, or not a package: nothing to defer
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__getattr__"] = _run_init_on_first_use(module)
        sys.modules[name] = module
        # What a library's __init__ does first (kafka-python's does): without it, the package's warnings reach
        # stderr through logging's last-resort handler in commands that configure no logging (`minikafka snapshot`).
        logging.getLogger(name).addHandler(logging.NullHandler())


def _run_init_on_first_use(module: ModuleType) -> object:
    name = module.__name__

    def __getattr__(attribute: str) -> object:
        # `from kafka import errors` and `from . import x` inside the package look submodules up here first
        if not attribute.startswith("__") and importlib.util.find_spec(f"{name}.{attribute}") is not None:
            return importlib.import_module(f"{name}.{attribute}")
        with _init_lock:
            if module.__dict__.pop("__getattr__", None) is not None:
                spec = module.__spec__
                assert spec is not None and spec.loader is not None
                spec.loader.exec_module(module)
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    return __getattr__

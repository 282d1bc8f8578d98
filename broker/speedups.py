"""The optional compiled speed-ups the broker runs faster with, and a start-up warning naming the cost of each one
that is missing (the broker works without them, in pure Python): aiokafka's Cython record code, which decodes and
builds record batches, and uvloop, the libuv event loop. A wheel missing for a new Python falls back silently
otherwise. Stateless; thread-safe."""

from __future__ import annotations

import importlib
import logging
import sys

log = logging.getLogger(__name__)

#: module -> (what it is, what running without it costs)
SPEEDUPS: dict[str, tuple[str, str]] = {
    "aiokafka.record._crecords.default_records": (
        "aiokafka's compiled record code",
        "record batches are decoded and built in pure Python, at about half the produce throughput"),
    "uvloop": ("uvloop", "the standard asyncio event loop runs the network, at more CPU per request "
                         "(every benchmark here uses uvloop)"),
}


def missing_speedups() -> dict[str, tuple[str, str]]:
    """Module -> (name, cost), for each speed-up that does not import on this interpreter."""
    missing: dict[str, tuple[str, str]] = {}
    for module, described in SPEEDUPS.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing[module] = described
    return missing


def warn_missing_speedups() -> None:
    python = ".".join(map(str, sys.version_info[:3]))
    for module, (name, cost) in missing_speedups().items():
        log.warning("%s is unavailable on Python %s (%s does not import): %s; install a build of it for this "
                    "Python to get it back", name, python, module, cost)

"""`machine_description()`: the one-line machine summary every benchmark records beside its numbers."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine_description() -> str:
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        models = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                  if line.startswith("model name")]
        cpu = models[0] if models else cpu
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"nproc {os.cpu_count()} ({cpu}), {mem_gib:.1f} GiB RAM, {platform.system()} {platform.release()}, "
            f"CPython {platform.python_version()}")

"""Full-disk test helpers: a ballast file that fills a filesystem, its free space, leftover temporary files.
The small filesystem itself is the `small_log_dir` fixture (tests/integration/conftest.py)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

FILESYSTEM_BYTES = 40 * 1024 * 1024
LEFTOVER_SUFFIXES = (".tmp", ".cleaned", ".swap")


def fill_up(path: Path, leave_bytes: int = 0) -> int:
    """Write `path` until the filesystem has no more than `leave_bytes` free (0: until ENOSPC); its size."""
    chunk = b"\0" * (1024 * 1024)
    written = 0
    with open(path, "wb", buffering=0) as ballast:
        while True:
            free = free_bytes(path.parent)
            if leave_bytes and free <= leave_bytes:
                return written
            size = len(chunk) if not leave_bytes else min(len(chunk), max(free - leave_bytes, 4096))
            try:
                written += ballast.write(chunk[:size])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if size <= 4096:
                    return written
                chunk = chunk[: len(chunk) // 2]


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def leftovers(log_dir: Path) -> list[Path]:
    """Temporary files that must never outlive the operation that made them."""
    return [path for path in log_dir.rglob("*") if path.name.endswith(LEFTOVER_SUFFIXES)]

"""Fixtures of the integration tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.small_filesystem import FILESYSTEM_BYTES


@pytest.fixture
def small_log_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh 40 MiB tmpfs (FILESYSTEM_BYTES) as the log dir, unmounted afterwards; needs root, skipped (with the
    reason) elsewhere."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 40 MiB tmpfs needs root")
    mount_point = tmp_path / "data"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FILESYSTEM_BYTES}", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)

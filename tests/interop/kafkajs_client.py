"""Install (once) and run the kafkajs interop script in tests/interop/kafkajs (kafkajs 2.2.4 from npm)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.interop.java_client import ClientUnavailableError, client_args, parse_summary

PROJECT_DIR = Path(__file__).resolve().parent / "kafkajs"
SCRIPT = PROJECT_DIR / "client.js"
LOCK_DIR = PROJECT_DIR.parents[2] / ".cache"  # git-ignored


def ensure_installed() -> Path:
    """Run `npm install` once (node_modules is git-ignored); returns the script path."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise ClientUnavailableError(f"{tool} not found on PATH")
    marker = PROJECT_DIR / "node_modules" / "kafkajs" / "package.json"
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    with open(LOCK_DIR / "kafkajs-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund"],
                cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600,
            )
            if done.returncode != 0 or not marker.exists():
                raise ClientUnavailableError("npm install failed:\n" + (done.stdout + done.stderr)[-3000:])
    return SCRIPT


def run_kafkajs_client(
    bootstrap: str,
    topic: str,
    count: int,
    mode: str = "produce-consume",
    *,
    group: str | None = None,
    partitions: int = 3,
    timeout_ms: int = 30_000,
) -> dict[str, Any]:
    """Run client.js and return its JSON summary (same schema as the Java client's)."""
    script = ensure_installed()
    args = client_args(bootstrap, topic, count, mode, group=group, partitions=partitions, timeout_ms=timeout_ms)
    done = subprocess.run(
        ["node", str(script), *args], cwd=PROJECT_DIR, capture_output=True, text=True,
        timeout=timeout_ms / 1000 + 60,
    )
    return parse_summary(done, "kafkajs client")

"""Build (once) and run the franz-go interop client in tests/interop/franzgo (versions pinned in its go.mod and
go.sum; the first build fetches the modules into Go's module cache)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.interop.java_client import ClientUnavailableError, client_args, parse_summary

PROJECT_DIR = Path(__file__).resolve().parent / "franzgo"
BINARY = PROJECT_DIR / "target" / "franzgo-interop"  # git-ignored


def _sources() -> list[Path]:
    return [PROJECT_DIR / "go.mod", PROJECT_DIR / "go.sum", *PROJECT_DIR.glob("*.go")]


def ensure_built() -> Path:
    """`go build` target/franzgo-interop unless it is newer than every source; returns the binary's path."""
    go = shutil.which("go")
    if go is None:
        raise ClientUnavailableError("go not found on PATH")
    BINARY.parent.mkdir(exist_ok=True)
    with open(BINARY.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        newest_source = max(path.stat().st_mtime for path in _sources())
        if BINARY.exists() and BINARY.stat().st_mtime >= newest_source:
            return BINARY
        # -mod=mod: fetch what go.mod pins when the module cache is empty (a fresh machine)
        env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=mod".strip()}
        done = subprocess.run(
            [go, "build", "-buildvcs=false", "-o", str(BINARY), "."],
            cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=900,
        )
        if done.returncode != 0 or not BINARY.exists():
            raise ClientUnavailableError("go build failed:\n" + (done.stdout + done.stderr)[-3000:])
        BINARY.touch()
    return BINARY


def run_franzgo_client(
    bootstrap: str,
    topic: str,
    count: int,
    mode: str = "produce-consume",
    *,
    group: str | None = None,
    partitions: int = 3,
    timeout_ms: int = 30_000,
    producer_config: dict[str, str] | None = None,
    records_per_second: int | None = None,
) -> dict[str, Any]:
    """Run the franz-go client and return its JSON summary (same schema as client.js's).

    `producer_config` takes Kafka's `linger.ms` and `batch.size` (main.go maps them to franz-go's options);
    `records_per_second` paces the produce so that it lasts count / records_per_second seconds at least."""
    binary = ensure_built()
    args = client_args(bootstrap, topic, count, mode, group=group, partitions=partitions, timeout_ms=timeout_ms,
                       producer_config=producer_config)
    if records_per_second is not None:
        args += ["--records-per-second", str(records_per_second)]
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout_ms / 1000 + 60)
    return parse_summary(done, "franz-go client")

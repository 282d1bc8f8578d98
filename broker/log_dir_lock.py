"""`LogDirLock`: Kafka's exclusive lock on `<log.dir>/.lock`, so that two brokers never share a log dir.

Kafka's LogManager creates the log dir, then takes a non-blocking exclusive lock on its `.lock` file before
reading or writing anything else in it, and holds it for the broker's life; a second broker on the same dir fails
with "Failed to acquire lock on file .lock in DIR". The lock is `flock(2)` on an open file description: the
kernel drops it when the process exits, however it exits, so a killed broker never leaves a stale lock (the
`.lock` file itself stays, as in Kafka). Not thread-safe; owned by the process that serves the dir.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from minikafka.broker.startup_error import StartupError

LOCK_FILE_NAME = ".lock"


class LogDirLock:
    """The held lock of one log dir; `release()` (or process exit) frees it."""

    def __init__(self, log_dir: Path, fd: int) -> None:
        self.log_dir = log_dir
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, log_dir: Path, key: str = "log.dirs") -> LogDirLock:
        """Create `log_dir` if needed and lock it; StartupError (naming `key`) when it cannot be created,
        is not writable, or another process holds the lock."""
        fix = f"set {key} to a directory this user can create and write"
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise StartupError(key, log_dir, "exists and is not a directory", fix) from None
        except OSError as error:
            raise StartupError(key, log_dir, f"cannot create the log dir ({error.strerror})", fix) from None
        if not os.access(log_dir, os.W_OK | os.X_OK):
            raise StartupError(key, log_dir, "the log dir is not writable", fix)
        try:
            fd = os.open(log_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise StartupError(key, log_dir, f"cannot write {LOCK_FILE_NAME} in the log dir ({error.strerror})",
                               fix) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StartupError(
                key, log_dir.absolute(),
                f"Failed to acquire lock on file {LOCK_FILE_NAME} in {log_dir.absolute()}. A Kafka instance in "
                "another process or thread is using this directory",
                f"stop that broker or give this one another {key}") from None
        return cls(log_dir, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock and close; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

"""`JvmProcess`: the stop and context-manager half shared by the harnesses that run a JVM tool (Apache Kafka,
MirrorMaker 2) as a subprocess in its own process group.

A subclass's `start()` sets `self.process` (started with `start_new_session=True`) and returns self; `stop()`
sends the group SIGTERM (the JVM's shutdown hooks run) and SIGKILL after `timeout_s`. Not thread-safe.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Self

STOP_TIMEOUT_S = 30.0
#: Log4j2 configuration head: INFO and up to `{log_file}`; a harness appends its own `logger.*` levels.
FILE_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
"""


class JvmProcess:
    """Owns one JVM subprocess (its process group) between `start()` and `stop()`."""

    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM the JVM's process group; SIGKILL after `timeout_s`. Safe to call twice."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the JVM's process group, for a throwaway JVM whose shutdown would only wait. Safe to call twice."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            _signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def log_tail(paths: tuple[Path, ...], lines: int) -> str:
    """The last `lines` lines of each of `paths` that exists, in order."""
    texts: list[str] = []
    for path in paths:
        if path.exists():
            texts.extend(path.read_text(errors="replace").splitlines()[-lines:])
    return "\n".join(texts)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass

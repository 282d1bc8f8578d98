"""`ToolBatch`: one JVM that runs a Kafka command-line tool (kafka-configs, kafka-client-metrics, ...) again and
again, each run as its own process would see it (tests/interop/java ToolBatch.java: own stdout/stderr, Kafka's
Exit.exit ends the run with its status). A JVM start costs seconds on this machine; a run in a warm JVM a few
hundred milliseconds, so tests with dozens of tool runs keep one of these open (the `kafka_tools` fixture).

Not thread-safe: one run at a time.
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tests.interop.java_client import JAR, ensure_built
from tests.kafka_jars import find_main_class

MAIN_CLASS = "minikafka.interop.ToolBatch"
#: kafka-configs' main class (it moved from kafka.admin to org.apache.kafka.tools in some versions)
CONFIG_COMMAND = ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand")
CLIENT_METRICS_COMMAND = ("org.apache.kafka.tools.ClientMetricsCommand",)


@dataclass(frozen=True)
class ToolRun:
    """One tool run: its exit status and what it printed."""

    status: int
    stdout: str
    stderr: str


class ToolBatch:
    """A running ToolBatch JVM for one tool's main class (the first of `main_classes` Kafka's jars have)."""

    def __init__(self, lib_dir: Path, main_classes: tuple[str, ...], heap: str = "384m") -> None:
        ensure_built()
        main_class = find_main_class(lib_dir, *main_classes)
        command = ["java", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                   f"-Dlog4j2.configurationFile={lib_dir / 'log4j2-tools.properties'}",
                   "-cp", f"{JAR}:{lib_dir}/*", MAIN_CLASS, main_class]
        self.main_class = main_class
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL)

    def run(self, args: list[str], timeout_s: float = 120) -> ToolRun:
        """Run the tool with `args`; its status, stdout and stderr. The JVM is killed if it takes longer."""
        if any("\t" in arg or "\n" in arg for arg in args):
            raise ValueError(f"tabs and newlines cannot be passed to ToolBatch: {args}")
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        timer = threading.Timer(timeout_s, process.kill)
        timer.start()
        try:
            process.stdin.write(("\t".join(args) + "\n").encode())
            process.stdin.flush()
            header = process.stdout.readline().decode()
            if not header.startswith("#"):
                raise RuntimeError(f"{self.main_class} {args}: ToolBatch ended (killed after {timeout_s} s?)")
            status, out_bytes, err_bytes = (int(field) for field in header[1:].split())
            stdout = process.stdout.read(out_bytes).decode()
            stderr = process.stdout.read(err_bytes).decode()
        finally:
            timer.cancel()
        return ToolRun(status, stdout, stderr)

    def close(self) -> None:
        process = self._process
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> ToolBatch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

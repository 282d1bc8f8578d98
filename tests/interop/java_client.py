"""Build (once) and run the Java interop client in tests/interop/java (kafka-clients from Maven Central)."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parent / "java"
JAR = PROJECT_DIR / "target" / "interop-client.jar"
LIB_DIR = PROJECT_DIR / "target" / "lib"
MAIN_CLASS = "minikafka.interop.InteropClient"


class ClientUnavailableError(RuntimeError):
    """The client program cannot be built on this machine (tool missing, dependencies not fetchable)."""


def _sources() -> list[Path]:
    return [PROJECT_DIR / "pom.xml", *PROJECT_DIR.glob("src/**/*.java")]


def ensure_built() -> Path:
    """Build target/interop-client.jar and copy its dependencies to target/lib unless they are up to date."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise ClientUnavailableError(f"{tool} not found on PATH")
    PROJECT_DIR.joinpath("target").mkdir(exist_ok=True)
    with open(PROJECT_DIR / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        newest_source = max(path.stat().st_mtime for path in _sources())
        if JAR.exists() and LIB_DIR.is_dir() and JAR.stat().st_mtime >= newest_source:
            return JAR
        goals = ["package", "dependency:copy-dependencies", f"-DoutputDirectory={LIB_DIR}",
                 "-DincludeScope=runtime"]
        output = ""
        for offline in (["-o"], []):  # offline first: fast when ~/.m2 already has everything
            done = subprocess.run(
                ["mvn", "-q", "-B", *offline, "-f", str(PROJECT_DIR / "pom.xml"), *goals],
                capture_output=True, text=True, timeout=900,
            )
            if done.returncode == 0 and JAR.exists():
                JAR.touch()
                return JAR
            output = done.stdout + done.stderr
        raise ClientUnavailableError("mvn could not build the Java interop client:\n" + output[-3000:])


def run_java_client(
    bootstrap: str,
    topic: str,
    count: int,
    mode: str = "produce-consume",
    *,
    group: str | None = None,
    partitions: int = 3,
    timeout_ms: int = 30_000,
    max_per_partition: int | None = None,
    producer_config: dict[str, str] | None = None,
    consumer_config: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run InteropClient and return its JSON summary (see the class comment for the schema).

    `max_per_partition` applies to mode "consume-commit" only: process at most that many records per partition.
    `producer_config`/`consumer_config` add client properties (modes produce/consume/produce-consume).
    """
    jar = ensure_built()
    args = client_args(bootstrap, topic, count, mode, group=group, partitions=partitions, timeout_ms=timeout_ms,
                       producer_config=producer_config, consumer_config=consumer_config)
    if max_per_partition is not None:
        args += ["--max-per-partition", str(max_per_partition)]
    command = ["java", "-Xmx256m", "-cp", f"{jar}:{LIB_DIR}/*", MAIN_CLASS, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_ms / 1000 + 60)
    return parse_summary(done, "Java client")


def client_args(bootstrap: str, topic: str, count: int, mode: str, *, group: str | None, partitions: int,
                timeout_ms: int, producer_config: dict[str, str] | None = None,
                consumer_config: dict[str, str] | None = None) -> list[str]:
    """The command line the interop client programs (Java, kafkajs, franz-go) share."""
    args = ["--bootstrap", bootstrap, "--topic", topic, "--count", str(count), "--mode", mode,
            "--partitions", str(partitions), "--timeout-ms", str(timeout_ms)]
    if group is not None:
        args += ["--group", group]
    for option, config in (("--producer-config", producer_config), ("--consumer-config", consumer_config)):
        if config:
            args += [option, ",".join(f"{key}={value}" for key, value in config.items())]
    return args


def parse_summary(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    """The last JSON object line a client program printed; raises AssertionError with its output otherwise."""
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            summary: dict[str, Any] = json.loads(line)
            if done.returncode == 0:
                return summary
    raise AssertionError(
        f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )

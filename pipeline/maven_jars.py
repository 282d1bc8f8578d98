"""Runtime jars from Maven Central, fetched once with Maven (`mvn dependency:copy-dependencies`) into a cache dir.

`ensure_maven_jars` is the one fetcher of the project: the pipeline's Spark connector and Delta Lake jars come
through it, and so do Apache Kafka's own jars for the benchmarks and interop tests (bench/kafka_jars.py).
Safe to call from several processes at once (an flock serialises the fetch); returns at once when cached.
A fetch reports its progress (Maven's own "Downloaded from" lines, shortened, and a summary) through `progress`,
by default on stderr: the first Spark run otherwise waits silently while tens of megabytes come in.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

MVN_TIMEOUT_S = 900
COMPLETE_MARKER = ".complete"
#: Maven's transfer line in batch mode: `[INFO] Downloaded from central: https://.../name-1.0.jar (12 kB at 3 MB/s)`
_DOWNLOADED_JAR = re.compile(r"Downloaded from [^:]+: \S*/([^/\s]+\.jar) \(([^)]*)\)")


def print_to_stderr(line: str) -> None:
    print(f"minikafka: {line}", file=sys.stderr, flush=True)

_POM_TEMPLATE = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>minikafka.jars</groupId>
  <artifactId>{name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""


class JarFetchError(RuntimeError):
    """Java or Maven is missing, or Maven could not resolve the artifacts."""


@dataclass(frozen=True)
class MavenArtifact:
    group_id: str
    artifact_id: str
    version: str

    def pom_dependency(self) -> str:
        return (f"    <dependency><groupId>{self.group_id}</groupId><artifactId>{self.artifact_id}</artifactId>"
                f"<version>{self.version}</version></dependency>")


def require_tools(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise JarFetchError(f"{', '.join(missing)} not found on PATH (needed to fetch jars from Maven Central)")


def ensure_maven_jars(
    project_dir: Path,
    artifacts: Sequence[MavenArtifact],
    *,
    finish: Callable[[Path], None] | None = None,
    progress: Callable[[str], None] | None = print_to_stderr,
) -> Path:
    """Return `project_dir/lib`, holding `artifacts` and their runtime dependencies, fetching them on first use.

    `finish(staging_dir)` may prune or add files before the directory is published; the fetch is published
    atomically (rename) and marked complete, so an interrupted fetch is redone, never half-used. `progress` gets
    one line as the fetch starts, one per jar Maven downloads (none for jars already in ~/.m2) and a summary.
    """
    project_dir = project_dir.resolve()  # mvn resolves a relative outputDirectory against the pom's folder
    lib_dir = project_dir / "lib"
    marker = lib_dir / COMPLETE_MARKER
    if marker.exists():
        return lib_dir
    require_tools("java", "mvn")
    project_dir.mkdir(parents=True, exist_ok=True)
    with open(project_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return lib_dir
        pom = _POM_TEMPLATE.format(
            name=project_dir.name, dependencies="\n".join(a.pom_dependency() for a in artifacts)
        )
        (project_dir / "pom.xml").write_text(pom)
        staging = project_dir / "lib.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        command = [
            "mvn", "-B", "-f", str(project_dir / "pom.xml"), "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
        ]
        report = progress or (lambda _line: None)
        report(f"fetching {', '.join(a.artifact_id for a in artifacts)} and their dependencies with Maven into "
               f"{lib_dir} (once)")
        started = time.monotonic()
        returncode, output = _run_maven(command, report)
        if returncode != 0:
            tail = "\n".join(output[-15:])
            raise JarFetchError(f"mvn could not fetch {project_dir.name}:\n{tail}")
        jars = list(staging.glob("*.jar"))
        report(f"fetched {len(jars)} jars ({sum(j.stat().st_size for j in jars) / 1e6:.1f} MB) in "
               f"{time.monotonic() - started:.0f} s")
        if finish is not None:
            finish(staging)
        shutil.rmtree(lib_dir, ignore_errors=True)
        staging.rename(lib_dir)
        marker.write_text("\n".join(f"{a.group_id}:{a.artifact_id}:{a.version}" for a in artifacts) + "\n")
    return lib_dir


def _run_maven(command: list[str], report: Callable[[str], None]) -> tuple[int, list[str]]:
    """Run Maven, passing each download on to `report` as it happens; its exit code and output lines."""
    output: list[str] = []
    downloads = 0
    deadline = time.monotonic() + MVN_TIMEOUT_S
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as mvn:
        assert mvn.stdout is not None
        for line in mvn.stdout:
            output.append(line.rstrip("\n"))
            if (match := _DOWNLOADED_JAR.search(line)) is not None:
                downloads += 1
                report(f"downloaded {match.group(1)} ({match.group(2)}), jar {downloads}")
            if time.monotonic() > deadline:
                mvn.kill()
                raise JarFetchError(f"mvn did not fetch in {MVN_TIMEOUT_S}s")
        try:
            returncode = mvn.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired as exc:
            mvn.kill()
            raise JarFetchError(f"mvn did not fetch in {MVN_TIMEOUT_S}s") from exc
    return returncode, output

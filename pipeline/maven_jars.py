"""Runtime jars from Maven Central, fetched once with Maven (`mvn dependency:copy-dependencies`) into a cache dir.

`ensure_maven_jars` is the one fetcher of the project: the pipeline's Spark connector and Delta Lake jars come
through it, and so do Apache Kafka's own jars for the benchmarks and interop tests (bench/kafka_jars.py).
Safe to call from several processes at once (an flock serialises the fetch); returns at once when cached.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

MVN_TIMEOUT_S = 900
COMPLETE_MARKER = ".complete"

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
) -> Path:
    """Return `project_dir/lib`, holding `artifacts` and their runtime dependencies, fetching them on first use.

    `finish(staging_dir)` may prune or add files before the directory is published; the fetch is published
    atomically (rename) and marked complete, so an interrupted fetch is redone, never half-used.
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
            "mvn", "-q", "-B", "-f", str(project_dir / "pom.xml"), "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=MVN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise JarFetchError(f"mvn did not fetch {project_dir.name} in {MVN_TIMEOUT_S}s") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise JarFetchError(f"mvn could not fetch {project_dir.name}:\n{tail}")
        if finish is not None:
            finish(staging)
        shutil.rmtree(lib_dir, ignore_errors=True)
        staging.rename(lib_dir)
        marker.write_text("\n".join(f"{a.group_id}:{a.artifact_id}:{a.version}" for a in artifacts) + "\n")
    return lib_dir

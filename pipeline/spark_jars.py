"""The jars a PySpark job needs beyond PySpark itself: Spark's Kafka connector and Delta Lake.

The pinned trio (see DESIGN.md, "Spark stack") resolves together: PySpark 4.1.1 from the `[spark]` extra, its own
connector `spark-sql-kafka-0-10_2.13:4.1.1` (with kafka-clients 3.9.1 and commons-pool2) and Delta Lake 4.3.1, the
newest Delta whose jars are on Maven Central and whose Spark line is 4.1.

Jars come into a cache directory on first use (`MINIKAFKA_SPARK_JARS_CACHE`, default ~/.cache/minikafka); a user
whose cluster already has them points at their own (`MINIKAFKA_SPARK_JARS`, a directory or a comma-separated
list of jar paths, or `jars=` to `build_spark_session`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from minikafka.pipeline.maven_jars import MavenArtifact, ensure_maven_jars

SPARK_VERSION = "4.1.1"
SCALA_BINARY_VERSION = "2.13"
DELTA_VERSION = "4.3.1"

ARTIFACTS = (
    MavenArtifact("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}", SPARK_VERSION),
    MavenArtifact("io.delta", f"delta-spark_{SCALA_BINARY_VERSION}", DELTA_VERSION),
)

JARS_ENV = "MINIKAFKA_SPARK_JARS"
CACHE_ENV = "MINIKAFKA_SPARK_JARS_CACHE"
_VERSION_SUFFIX = re.compile(r"-\d[^-]*(?:-[A-Za-z0-9.]+)*\.jar$")


def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "minikafka"


def artifact_name(jar_file_name: str) -> str:
    """`kafka-clients-3.9.1.jar` -> `kafka-clients` (the name Maven copies a jar under, without its version)."""
    return _VERSION_SUFFIX.sub("", jar_file_name)


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _drop_jars_pyspark_ships(staging: Path) -> None:
    """Two versions of one library on a class path is a classic source of NoSuchMethodError: keep PySpark's."""
    shipped = {artifact_name(jar.name) for jar in pyspark_jars_dir().glob("*.jar")}
    for jar in staging.glob("*.jar"):
        if artifact_name(jar.name) in shipped:
            jar.unlink()


def ensure_spark_jars(cache_dir: Path | None = None) -> list[Path]:
    """The connector and Delta jars (fetched with Maven on first use), minus what PySpark already ships."""
    root = cache_dir if cache_dir is not None else default_cache_dir()
    project_dir = root / f"spark-{SPARK_VERSION}-delta-{DELTA_VERSION}"
    lib_dir = ensure_maven_jars(project_dir, ARTIFACTS, finish=_drop_jars_pyspark_ships)
    return sorted(lib_dir.glob("*.jar"))


def configured_jars(jars: str | Path | list[Path] | None = None, cache_dir: Path | None = None) -> list[Path]:
    """The jars to put on `spark.jars`: the ones given (or named by MINIKAFKA_SPARK_JARS), else the fetched set."""
    chosen: str | Path | list[Path] | None = jars if jars is not None else os.environ.get(JARS_ENV) or None
    if chosen is None:
        return ensure_spark_jars(cache_dir)
    if isinstance(chosen, list):
        return chosen
    if isinstance(chosen, Path) or "," not in chosen:
        path = Path(chosen)
        return sorted(path.glob("*.jar")) if path.is_dir() else [path]
    return [Path(part.strip()) for part in chosen.split(",") if part.strip()]

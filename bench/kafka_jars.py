"""Apache Kafka's official jars, fetched once from Maven Central with Maven and cached on disk.

Nothing here starts a broker: this module only knows where the jars are, which main classes the fetched
version has, and how to build a `java -cp 'lib/*' <main>` command line.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import zipfile
from functools import lru_cache
from pathlib import Path

# 4.4.0 is listed for some artifacts but kafka-tools 4.4.0 does not resolve; 4.3.1 is the newest full set.
KAFKA_VERSION = os.environ.get("MINIKAFKA_APACHE_KAFKA_VERSION", "4.3.1")
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "apache-kafka"
LOG4J_VERSION = "2.25.4"  # the log4j2 version Kafka 4.3 itself depends on
MVN_TIMEOUT_S = 900

_POM_TEMPLATE = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>minikafka.bench</groupId>
  <artifactId>apache-kafka-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-server</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-storage</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

# Log4j2 configuration for the command-line tools: warnings only, on stderr, so stdout stays parseable.
TOOLS_LOG4J2 = """status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
"""


class KafkaHarnessError(RuntimeError):
    """Java or Maven is missing, the jars cannot be fetched, or Apache Kafka failed to start."""


def require_tools(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise KafkaHarnessError(f"{', '.join(missing)} not found on PATH (needed to run Apache Kafka)")


def ensure_kafka_jars(cache_dir: Path = DEFAULT_CACHE_DIR, version: str = KAFKA_VERSION) -> Path:
    """Return the directory holding every runtime jar of Apache Kafka `version`, fetching it on first use.

    Safe to call from several processes at once (an flock serialises the fetch); returns at once when cached.
    """
    lib_dir = cache_dir / f"kafka-{version}" / "lib"
    marker = lib_dir / ".complete"
    if marker.exists():
        return lib_dir
    require_tools("java", "mvn")
    project_dir = cache_dir / f"kafka-{version}"
    project_dir.mkdir(parents=True, exist_ok=True)
    with open(project_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return lib_dir
        (project_dir / "pom.xml").write_text(_POM_TEMPLATE.format(kafka=version, log4j=LOG4J_VERSION))
        staging = project_dir / "lib.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        command = [
            "mvn", "-q", "-B", "-f", str(project_dir / "pom.xml"), "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=MVN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise KafkaHarnessError(f"mvn did not fetch Apache Kafka {version} in {MVN_TIMEOUT_S}s") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise KafkaHarnessError(f"mvn could not fetch Apache Kafka {version} jars:\n{tail}")
        shutil.rmtree(lib_dir, ignore_errors=True)
        staging.rename(lib_dir)
        (lib_dir / "log4j2-tools.properties").write_text(TOOLS_LOG4J2)
        marker.write_text(version + "\n")
    return lib_dir


@lru_cache(maxsize=64)
def find_main_class(lib_dir: Path, *candidates: str) -> str:
    """The first of `candidates` (fully qualified class names) present in one of the jars of `lib_dir`.

    Classes move between versions (DumpLogSegments went from kafka.tools to org.apache.kafka.tools).
    """
    wanted = {name.replace(".", "/") + ".class": name for name in candidates}
    found: set[str] = set()
    for jar in sorted(lib_dir.glob("*.jar")):
        with zipfile.ZipFile(jar) as archive:
            found.update(wanted[entry] for entry in archive.namelist() if entry in wanted)
    for name in candidates:
        if name in found:
            return name
    raise KafkaHarnessError(f"none of {candidates} in the jars under {lib_dir}")


def java_command(
    lib_dir: Path, main_class: str, args: list[str], heap: str = "512m", log4j_config: Path | None = None
) -> list[str]:
    """A `java` command line running `main_class` with every jar of `lib_dir` on the class path."""
    log4j = log4j_config if log4j_config is not None else lib_dir / "log4j2-tools.properties"
    return [
        "java", f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{lib_dir}/*", main_class, *args,
    ]

"""Apache Kafka's official jars, fetched once from Maven Central with Maven and cached on disk.

Nothing here starts a broker: this module only knows where the jars are, which main classes the fetched
version has, and how to build a `java -cp 'lib/*' <main>` command line.
"""

from __future__ import annotations

import os
import zipfile
from functools import lru_cache
from pathlib import Path

from minikafka.pipeline.maven_jars import JarFetchError, MavenArtifact, ensure_maven_jars

# 4.4.0 is listed for some artifacts but kafka-tools 4.4.0 does not resolve; 4.3.1 is the newest full set.
KAFKA_VERSION = os.environ.get("MINIKAFKA_APACHE_KAFKA_VERSION", "4.3.1")
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "apache-kafka"
LOG4J_VERSION = "2.25.4"  # the log4j2 version Kafka 4.3 itself depends on
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


KAFKA_ARTIFACTS = ("kafka_2.13", "kafka-server", "kafka-storage", "kafka-tools")


def ensure_kafka_jars(cache_dir: Path = DEFAULT_CACHE_DIR, version: str = KAFKA_VERSION) -> Path:
    """Return the directory holding every runtime jar of Apache Kafka `version`, fetching it on first use.

    Safe to call from several processes at once (an flock serialises the fetch); returns at once when cached.
    """
    artifacts = [MavenArtifact("org.apache.kafka", name, version) for name in KAFKA_ARTIFACTS] + [
        MavenArtifact("org.apache.logging.log4j", name, LOG4J_VERSION) for name in ("log4j-slf4j-impl", "log4j-core")]

    def add_tools_log4j_config(lib_dir: Path) -> None:
        (lib_dir / "log4j2-tools.properties").write_text(TOOLS_LOG4J2)

    try:
        return ensure_maven_jars(cache_dir / f"kafka-{version}", artifacts, finish=add_tools_log4j_config)
    except JarFetchError as exc:
        raise KafkaHarnessError(f"Apache Kafka {version}: {exc}") from exc


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

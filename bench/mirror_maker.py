"""Kafka's MirrorMaker 2 (the official `connect-mirror` jars) run as a subprocess, one replication flow at a time.

    python -m bench.mirror_maker fetch   # download the jars into .cache/apache-kafka only
    python -m bench.mirror_maker run     # minikafka -> Apache Kafka and back (bench/mirror_scenario), with a verdict

`MirrorMaker` writes an mm2.properties for a `source -> target` flow and runs
`org.apache.kafka.connect.mirror.MirrorMaker` on it: what `connect-mirror-maker.sh mm2.properties` runs from a
Kafka distribution. The migration test (tests/interop/test_mirror_maker.py) drives it both ways.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from minikafka.pipeline.maven_jars import JarFetchError, MavenArtifact, ensure_maven_jars
from tests import jvm_process
from tests.jvm_process import JvmProcess
from tests.kafka_jars import (
    DEFAULT_CACHE_DIR,
    KAFKA_VERSION,
    LOG4J_VERSION,
    KafkaHarnessError,
    java_command,
)

MIRROR_MAKER_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
# A migration keeps the topic names (`orders`, not `mini.orders` as in an active/active pair).
IDENTITY_REPLICATION_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
# Connect logs every client config at INFO; keep the flow's own progress and every warning.
MM2_LOG4J2 = jvm_process.FILE_LOG4J2 + """logger.configs.name = org.apache.kafka.common.config
logger.configs.level = warn
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = warn
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
logger.jetty.name = org.eclipse.jetty
logger.jetty.level = warn
logger.reflections.name = org.reflections
logger.reflections.level = error
logger.isolation.name = org.apache.kafka.connect.runtime.isolation
logger.isolation.level = warn
logger.scheduler.name = org.apache.kafka.connect.mirror.Scheduler
logger.scheduler.level = warn
logger.sourcetask.name = org.apache.kafka.connect.runtime.WorkerSourceTask
logger.sourcetask.level = warn
"""


def ensure_mirror_maker_jars(cache_dir: Path = DEFAULT_CACHE_DIR, version: str = KAFKA_VERSION) -> Path:
    """The lib dir holding `connect-mirror` `version` and its runtime dependencies (Connect's runtime included),
    fetched on first use into its own cache dir beside the broker's jars."""
    artifacts = [MavenArtifact("org.apache.kafka", "connect-mirror", version)] + [
        MavenArtifact("org.apache.logging.log4j", name, LOG4J_VERSION) for name in ("log4j-slf4j-impl", "log4j-core")]
    try:
        return ensure_maven_jars(cache_dir / f"mirror-maker-{version}", artifacts)
    except JarFetchError as exc:
        raise KafkaHarnessError(f"MirrorMaker 2 {version}: {exc}") from exc


def migration_properties(
    source_alias: str, source_bootstrap: str, target_alias: str, target_bootstrap: str,
    target_replication_factor: int = 1,
) -> dict[str, str]:
    """The mm2.properties of a one-way migration `source -> target` (the README lists it with a replication
    factor of 3 on the target).

    Topic names are kept (IdentityReplicationPolicy), topic configs and committed group offsets are copied, and the
    periodic tasks run every second. The topics MM2 creates on the target (mirrored topics, checkpoints,
    heartbeats, the Connect worker's configs/offsets/status) get `target_replication_factor` replicas; its
    offset-syncs topic lives on the source, a single node, so it has one.
    """
    replicas = str(target_replication_factor)
    flow = f"{source_alias}->{target_alias}"
    reverse = f"{target_alias}->{source_alias}"
    return {
        "clusters": f"{source_alias}, {target_alias}",
        f"{source_alias}.bootstrap.servers": source_bootstrap,
        f"{target_alias}.bootstrap.servers": target_bootstrap,
        f"{flow}.enabled": "true",
        f"{flow}.topics": ".*",
        f"{flow}.groups": ".*",
        f"{reverse}.enabled": "false",
        # Heartbeats of the reverse flow would be written into the source cluster; a migration does not need them.
        f"{reverse}.emit.heartbeats.enabled": "false",
        "replication.policy.class": IDENTITY_REPLICATION_POLICY,
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        "refresh.topics.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "sync.topic.configs.interval.seconds": "1",
        # The offset sync of a partition's last record is written when the worker commits its offsets; without
        # it a drained group's offsets are translated to an earlier sync (re-reads) for up to a minute.
        f"{target_alias}.offset.flush.interval.ms": "1000",
        "replication.factor": replicas,
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": replicas,
        "heartbeats.topic.replication.factor": replicas,
        "config.storage.replication.factor": replicas,
        "offset.storage.replication.factor": replicas,
        "status.storage.replication.factor": replicas,
    }


def harness_properties(target_alias: str) -> dict[str, str]:
    """Settings that only make a short-lived MM2 start quicker, not behave differently: Connect finds its plugins
    from their ServiceLoader manifests instead of scanning every class, twice."""
    return {
        "plugin.discovery": "service_load",
        f"{target_alias}.plugin.discovery": "service_load",
    }


def properties_text(properties: Mapping[str, str]) -> str:
    return "".join(f"{key} = {value}\n" for key, value in properties.items())


class MirrorMaker(JvmProcess):
    """One dedicated-mode MirrorMaker 2 JVM replicating `source -> target`, its mm2.properties and log under
    `work_dir`.

    Owns the subprocess (its own process group) and nothing on the clusters: the topics, groups and internal topics
    it creates stay there. Not thread-safe; use as a context manager so the JVM is always stopped.
    """

    def __init__(
        self,
        work_dir: Path,
        clusters: Mapping[str, str],
        source: str,
        target: str,
        *,
        overrides: Mapping[str, str] | None = None,
        lib_dir: Path | None = None,
        heap: str = "512m",
    ) -> None:
        """`clusters` maps each alias to its bootstrap servers; `overrides` replace or add mm2.properties keys."""
        self.work_dir = Path(work_dir)
        self.properties = migration_properties(source, clusters[source], target, clusters[target])
        self.properties.update(harness_properties(target))
        self.properties.update(overrides or {})
        self.lib_dir = lib_dir
        self.heap = heap
        self.log_file = self.work_dir / "mirror-maker.log"

    def start(self) -> MirrorMaker:
        lib_dir = self.lib_dir = self.lib_dir or ensure_mirror_maker_jars()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "mm2.properties"
        config.write_text(properties_text(self.properties))
        log4j = self.work_dir / "log4j2.properties"
        log4j.write_text(MM2_LOG4J2.format(log_file=self.log_file))
        command = java_command(lib_dir, MIRROR_MAKER_MAIN, [str(config)], heap=self.heap, log4j_config=log4j)
        with open(self.work_dir / "stdout.log", "ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        return self

    def check_running(self) -> None:
        """Raise (with the log tail) if the JVM has exited; call it while waiting for replication."""
        if self.process is not None and self.process.poll() is not None:
            raise KafkaHarnessError(f"MirrorMaker exited with {self.process.returncode}:\n{self.log_tail()}")

    def log_entries(self, level: str) -> list[str]:
        """The log entries at `level` ("ERROR", "WARN"), each with the stack trace lines that follow it."""
        if not self.log_file.exists():
            return []
        entries: list[str] = []
        current: list[str] | None = None
        for line in self.log_file.read_text(errors="replace").splitlines():
            if line.startswith("["):
                if current is not None:
                    entries.append("\n".join(current))
                current = [line] if f"] {level} " in line else None
            elif current is not None:
                current.append(line)
        if current is not None:
            entries.append("\n".join(current))
        return entries

    def log_tail(self, lines: int = 40) -> str:
        return jvm_process.log_tail((self.work_dir / "stdout.log", self.log_file), lines)


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mirror_maker", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["fetch", "run"])
    args = parser.parse_args(argv)
    lib_dir = ensure_mirror_maker_jars()
    print(f"MirrorMaker 2 {KAFKA_VERSION} jars in {lib_dir}", flush=True)
    if args.command == "fetch":
        return 0
    from bench.mirror_scenario import MigrationError, run_migration
    from minikafka.testing import MiniKafka
    from tests.apache_kafka import ApacheKafka

    failed = False
    with tempfile.TemporaryDirectory(prefix="mirror-maker-") as work, \
            MiniKafka({"group.initial.rebalance.delay.ms": "0"}) as mini, ApacheKafka(Path(work) / "kafka") as kafka:
        clusters = {"mini": mini.bootstrap_servers, "kafka": kafka.bootstrap}
        for source, target in (("mini", "kafka"), ("kafka", "mini")):
            try:
                result = run_migration(Path(work), clusters, source, target)
            except MigrationError as exc:
                failed = True
                print(f"{source} -> {target}: FAILED\n{exc}", flush=True)
                continue
            print(f"{source} -> {target}: ok in {result.mirror_maker_s:.1f} s of MirrorMaker; group offsets on "
                  f"{target} {result.target_offsets}, {result.resumed_records} records read after the cut-over",
                  flush=True)
    print("verdict:", "FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_main())

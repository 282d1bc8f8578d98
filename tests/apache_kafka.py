"""Run Apache Kafka 4.x (a single KRaft node, from its official Maven Central jars) and its kafka-dump-log.

    python -m tests.apache_kafka fetch   # download the jars into .cache/apache-kafka only
    python -m tests.apache_kafka run     # start one node and print its bootstrap until Ctrl-C

Used by the interop tests (same client scenario against Apache Kafka and minikafka) and by
bench/throughput.py. Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.testing.mini_kafka import free_port, metadata_broker_count
from tests import jvm_process
from tests.jvm_process import JvmProcess
from tests.kafka_jars import (
    DEFAULT_CACHE_DIR,
    KAFKA_VERSION,
    KafkaHarnessError,
    ensure_kafka_jars,
    find_main_class,
    java_command,
)

__all__ = [
    "SIDE_BY_SIDE_BROKER_PROPERTIES",
    "ApacheKafka",
    "DumpResult",
    "KafkaHarnessError",
    "check_dump_clean",
    "dump_log",
    "ensure_kafka_jars",
    "free_port",
]

LOOPBACK = "127.0.0.1"
#: Broker settings both sides of a side-by-side test run with (the session's Apache Kafka, and the minikafka of a
#: module that needs them): Kafka's lowest bound for a group's share.record.lock.duration.ms (1000 ms, the least
#: group.share.min.record.lock.duration.ms takes; its default is 15000), so a test sees a lock expire in seconds.
SIDE_BY_SIDE_BROKER_PROPERTIES = {"group.share.min.record.lock.duration.ms": "1000"}
START_TIMEOUT_S = 120.0
#: Starts tried when a port picked by `free_port` was taken by another process before the JVM bound it (parallel
#: test workers start several brokers at once).
BIND_ATTEMPTS = 3

SERVER_LOG4J2 = jvm_process.FILE_LOG4J2 + """logger.kafka.name = kafka
logger.kafka.level = info
logger.state.name = state.change.logger
logger.state.level = warn
"""


class ApacheKafka(JvmProcess):
    """One single-node KRaft Apache Kafka process (broker+controller) under `work_dir`.

    Owns the JVM subprocess (its own process group), its server.properties, log4j config and log.dirs.
    Not thread-safe: start and stop it from one thread. Use as a context manager so it is always stopped.
    """

    #: how often `wait_ready` asks for Metadata
    ready_poll_s = 0.25

    def __init__(
        self,
        work_dir: Path,
        port: int | None = None,
        *,
        heap: str = "512m",
        properties: dict[str, str] | None = None,
        lib_dir: Path | None = None,
        listeners: Mapping[str, str] | None = None,
        scram_credentials: Sequence[str] = (),
        node_id: int = 1,
        cluster_id: str | None = None,
    ) -> None:
        """`listeners` adds listeners beside PLAINTEXT (which the readiness check and inter-broker traffic use):
        listener name -> security protocol (`{"SASL_PLAINTEXT": "SASL_PLAINTEXT"}`), each on a free loopback port;
        their SASL/SSL settings go in `properties` by Kafka's names. `scram_credentials` are passed to
        `kafka-storage format --add-scram` (`'SCRAM-SHA-256=[name=admin,password=admin-secret]'`). `node_id` and
        `cluster_id` (formatted into the log dir; a new one if None) are for a node of `ApacheKafkaCluster`."""
        self.work_dir = Path(work_dir)
        self.node_id = node_id
        self.cluster_id = cluster_id or _kafka_uuid()
        self.fixed_port = port is not None
        self.port = port if port is not None else free_port()
        self.controller_port = free_port()
        self.heap = heap
        self.extra_properties = dict(properties or {})
        self.extra_listeners = {name.upper(): protocol.upper() for name, protocol in (listeners or {}).items()}
        if {"PLAINTEXT", "CONTROLLER"} & set(self.extra_listeners):
            raise ValueError("PLAINTEXT and CONTROLLER are always there; name the extra listeners otherwise")
        self.listener_ports = {name: free_port() for name in self.extra_listeners}
        self.scram_credentials = list(scram_credentials)
        self.lib_dir = lib_dir
        self.log_dir = self.work_dir / "kafka-logs"
        self.server_log = self.work_dir / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def bootstrap_for(self, listener_name: str) -> str:
        """`host:port` of a listener by name (`PLAINTEXT` or one given in `listeners`)."""
        name = listener_name.upper()
        return self.bootstrap if name == "PLAINTEXT" else f"{LOOPBACK}:{self.listener_ports[name]}"

    def server_properties(self) -> dict[str, str]:
        extra = [f"{name}://{LOOPBACK}:{port}" for name, port in self.listener_ports.items()]
        protocols = ",".join(f"{name}:{protocol}" for name, protocol in self.extra_listeners.items())
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"{self.node_id}@{LOOPBACK}:{self.controller_port}",
            "listeners": ",".join([f"PLAINTEXT://{LOOPBACK}:{self.port}", *extra,
                                   f"CONTROLLER://{LOOPBACK}:{self.controller_port}"]),
            "advertised.listeners": ",".join([f"PLAINTEXT://{LOOPBACK}:{self.port}", *extra]),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
            + (f",{protocols}" if protocols else ""),
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "num.network.threads": "2",
            "num.io.threads": "4",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
        }
        props.update(self.extra_properties)
        return props

    def start(self) -> ApacheKafka:
        for attempt in range(1, BIND_ATTEMPTS + 1):
            try:
                return self._start_once()
            except _PortTakenError:
                if attempt == BIND_ATTEMPTS:
                    raise
            # Nothing was served yet: new ports, and a log dir formatted anew.
            self.port = self.port if self.fixed_port else free_port()
            self.controller_port = free_port()
            self.listener_ports = {name: free_port() for name in self.extra_listeners}
            shutil.rmtree(self.log_dir, ignore_errors=True)
        raise AssertionError("unreachable")

    def _start_once(self) -> ApacheKafka:
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self) -> None:
        """Format the log dir if new and start the JVM, without waiting for it to serve (a cluster's nodes must all
        be up before any of them does)."""
        lib_dir = self.lib_dir = self.lib_dir or ensure_kafka_jars()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "server.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in self.server_properties().items()))
        log4j = self.work_dir / "log4j2.properties"
        log4j.write_text(SERVER_LOG4J2.format(log_file=self.server_log))
        if not (self.log_dir / "meta.properties").exists():
            tool = find_main_class(lib_dir, "kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool")
            fmt_args = ["format", f"--cluster-id={self.cluster_id}", "-c", str(config)]
            for credential in self.scram_credentials:
                fmt_args += ["--add-scram", credential]
            fmt = java_command(lib_dir, tool, fmt_args, heap="256m")
            done = subprocess.run(fmt, capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise KafkaHarnessError(f"kafka-storage format failed:\n{done.stdout}\n{done.stderr}")
        main = find_main_class(lib_dir, "kafka.Kafka")
        command = java_command(lib_dir, main, [str(config)], heap=self.heap, log4j_config=log4j)
        with open(self.work_dir / "stdout.log", "ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def wait_ready(self, brokers: int = 1) -> None:
        """Until this node answers Metadata listing at least `brokers` brokers (START_TIMEOUT_S at most)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                whole_log = jvm_process.log_tail((self.work_dir / "stdout.log", self.server_log), 1_000_000)
                error = _PortTakenError if "Address already in use" in whole_log else KafkaHarnessError
                raise error(f"Apache Kafka exited with {self.process.returncode} during startup:\n{self._log_tail()}")
            try:
                if metadata_broker_count(LOOPBACK, self.port) >= brokers:
                    return
            except (OSError, struct.error, ConnectionError) as exc:
                last_error = exc
            time.sleep(self.ready_poll_s)
        raise KafkaHarnessError(
            f"Apache Kafka not ready on {self.bootstrap} after {START_TIMEOUT_S}s ({last_error}):\n"
            + self._log_tail()
        )

    def _log_tail(self, lines: int = 30) -> str:
        return jvm_process.log_tail((self.work_dir / "stdout.log", self.server_log), lines)


class _PortTakenError(KafkaHarnessError):
    """Kafka could not bind a port `free_port` had found free."""


def _kafka_uuid() -> str:
    """A random Kafka Uuid in its URL-safe base64 form (what `kafka-storage random-uuid` prints). It may start
    with "-", so pass it as `--cluster-id=<id>`, never as a separate argument."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(frozen=True)
class DumpResult:
    stdout: str
    stderr: str
    rc: int


def dump_log(
    files: list[Path],
    deep: bool = True,
    index_sanity: bool = True,
    lib_dir: Path | None = None,
    offsets_decoder: bool = False,
) -> DumpResult:
    """Run Apache Kafka's kafka-dump-log (DumpLogSegments) over `files` (.log, .index, .timeindex, ...).

    With `index_sanity` indexes are only sanity-checked (what LogLoader does); without it every index entry
    is looked up in its log segment and mismatches are reported — run both for a full check.
    `offsets_decoder` decodes `__consumer_offsets` records with Kafka's own group-coordinator schemas.
    """
    if not files:
        raise ValueError("dump_log needs at least one file")
    lib = lib_dir or ensure_kafka_jars()
    main = find_main_class(lib, "org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
    args = ["--files", ",".join(str(path) for path in files)]
    if deep:
        args.append("--deep-iteration")
    if index_sanity:
        args.append("--index-sanity-check")
    if offsets_decoder:
        args.append("--offsets-decoder")
    command = java_command(lib, main, args, heap="256m")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return DumpResult(stdout=done.stdout, stderr=done.stderr, rc=done.returncode)


_PROBLEM_MARKERS = ("invalid bytes", "Mismatches", "isvalid: false", "failed sanity check")
# DumpLogSegments starts its "previous offset" at -1 for every file, so a segment whose base offset is not 0
# is always reported as "-1 is followed by <base>"; only other pairs are real gaps.
_NON_CONSECUTIVE_PAIR = re.compile(r"^\s*(-?\d+) is followed by (\d+)\s*$")


def check_dump_clean(result: DumpResult) -> list[str]:
    """Every problem kafka-dump-log reported in `result`; an empty list means the files read cleanly."""
    problems = []
    if result.rc != 0:
        problems.append(f"kafka-dump-log exited with {result.rc}")
    for stream_name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        for line in text.splitlines():
            pair = _NON_CONSECUTIVE_PAIR.match(line)
            if pair is not None and pair.group(1) != "-1":
                problems.append(f"{stream_name}: non-consecutive offsets: {line.strip()}")
            elif any(marker in line for marker in _PROBLEM_MARKERS) or (
                stream_name == "stderr" and ("Exception" in line or " ERROR " in line or "Error:" in line)
            ):
                problems.append(f"{stream_name}: {line.strip()}")
    return problems


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.apache_kafka", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["fetch", "run"])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    args = parser.parse_args(argv)
    lib_dir = ensure_kafka_jars(args.cache_dir)
    print(f"Apache Kafka {KAFKA_VERSION} jars in {lib_dir}", flush=True)
    if args.command == "fetch":
        return 0
    with tempfile.TemporaryDirectory(prefix="apache-kafka-") as work, ApacheKafka(
        Path(work), args.port, lib_dir=lib_dir
    ) as kafka:
        print(kafka.bootstrap, flush=True)
        try:
            while kafka.process is not None and kafka.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(_main())

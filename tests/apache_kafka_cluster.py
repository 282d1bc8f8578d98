"""Several Apache Kafka 4.x nodes as one KRaft cluster (each node broker and controller, all of them voters), for
side-by-side tests of fail-over behaviour against `MiniKafka(brokers=N)`.

    python -m tests.apache_kafka_cluster 3   # start three nodes, print the bootstrap and the start time until Ctrl-C

With three voters the quorum outlives any one stopped node, so `stop_node` / `start_node` model a broker lost and
back. Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.apache_kafka import LOOPBACK, ApacheKafka, _kafka_uuid, ensure_kafka_jars

#: Internal topics replicated on every node, as a production cluster of three has them.
CLUSTER_PROPERTIES = {
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3",
    "auto.create.topics.enable": "false",
}


class ApacheKafkaCluster:
    """`size` ApacheKafka nodes, ids 1..size, sharing one cluster id and one static voter set under `work_dir`.

    Owns the nodes' JVMs. Not thread-safe: drive it from one thread; use it as a context manager so every JVM
    is stopped.
    """

    def __init__(self, work_dir: Path, size: int = 3, *, heap: str = "384m",
                 properties: dict[str, str] | None = None, lib_dir: Path | None = None) -> None:
        if size < 1:
            raise ValueError(f"a cluster needs at least one node, got {size}")
        lib_dir = lib_dir or ensure_kafka_jars()
        cluster_id = _kafka_uuid()
        settings = {**CLUSTER_PROPERTIES, **(properties or {})}
        if size < 3:
            settings = {key: ("1" if key.endswith((".replication.factor", ".min.isr")) else value)
                        for key, value in settings.items()}
        self.nodes = {node_id: ApacheKafka(Path(work_dir) / f"node-{node_id}", heap=heap, properties=dict(settings),
                                           lib_dir=lib_dir, node_id=node_id, cluster_id=cluster_id)
                      for node_id in range(1, size + 1)}
        voters = ",".join(f"{node_id}@{LOOPBACK}:{node.controller_port}" for node_id, node in self.nodes.items())
        for node in self.nodes.values():
            node.extra_properties["controller.quorum.voters"] = voters
        self.start_s: float | None = None  # launch -> every node's Metadata lists every broker

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    def start(self) -> Self:
        """Launch every node, then wait until each answers Metadata listing all of them."""
        started = time.monotonic()
        try:
            for node in self.nodes.values():
                node.launch()
            for node in self.nodes.values():
                node.wait_ready(brokers=len(self.nodes))
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - started
        return self

    def stop_node(self, node_id: int) -> None:
        """A controlled shutdown of one node (SIGTERM, as `kafka-server-stop`): its partitions' leadership moves."""
        self.nodes[node_id].stop()

    def start_node(self, node_id: int) -> None:
        """Start a stopped node again and wait until it serves."""
        node = self.nodes[node_id]
        node.launch()
        node.wait_ready(brokers=1)

    def running(self) -> list[int]:
        return [node_id for node_id, node in self.nodes.items()
                if node.process is not None and node.process.poll() is None]

    def any_running(self) -> ApacheKafka:
        return self.nodes[self.running()[0]]

    def stop(self) -> None:
        """Kill every node: the cluster is thrown away, and once two of three voters are gone the last node's
        controlled shutdown waits its full timeout for a quorum."""
        for node in self.nodes.values():
            node.kill()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafka-cluster-") as work_dir, \
            ApacheKafkaCluster(Path(work_dir), args.size) as cluster:
        print(f"{args.size} nodes up in {cluster.start_s:.2f} s: {cluster.bootstrap}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(_main())

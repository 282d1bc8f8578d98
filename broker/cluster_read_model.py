"""`ClusterReadModel`: what the brokers of this process (`minikafka.brokers`) publish for readers outside them (the
console): each broker with its advertised listeners and whether it runs, each partition's leader, leader epoch,
replicas, ISR and KIP-966 ELR, and which broker coordinates each known group id and transactional id. Immutable
values, built by `ClusterReader.read_model()` (broker/cluster_reader.py) on the event loop; readers never touch the
`Cluster`, the `PartitionStates` or the coordinators themselves. Stdlib only; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NO_LEADER", "BrokerSummary", "ClusterReadModel", "CoordinatorSummary", "PartitionLeadership"]

#: a partition's leader while it has none (Kafka's -1)
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class BrokerSummary:
    node_id: int
    listeners: tuple[str, ...]  # advertised, one per listener: "PLAINTEXT://127.0.0.1:9092"
    running: bool
    controller: bool  # the broker Metadata and DescribeCluster name as the controller
    leader_of: int  # partitions it leads
    replica_of: int  # partitions it is a replica of


@dataclass(frozen=True, slots=True)
class PartitionLeadership:
    topic: str
    partition: int
    leader: int  # NO_LEADER while leaderless
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]  # KIP-966 eligible leader replicas (empty unless the ISR fell below min.insync.replicas)
    last_known_elr: tuple[int, ...]  # the last leader, while the ISR is empty
    offline: tuple[int, ...]  # replicas on stopped brokers

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True, slots=True)
class CoordinatorSummary:
    kind: str  # "group" or "transaction" (broker/coordinator_routing.py's kinds)
    key: str  # the group id or transactional id
    topic: str  # the internal topic whose partition's leader coordinates the key
    partition: int | None  # None while that topic does not exist yet (the first broker coordinates)
    coordinator: int  # NO_LEADER while the partition has no leader


@dataclass(frozen=True, slots=True)
class ClusterReadModel:
    brokers: tuple[BrokerSummary, ...]  # by id
    partitions: tuple[PartitionLeadership, ...]  # by topic, partition
    coordinators: tuple[CoordinatorSummary, ...]  # by kind, key

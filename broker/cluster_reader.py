"""`ClusterReader`: builds the `ClusterReadModel` (broker/cluster_read_model.py) the console shows, from the `Cluster`
(brokers, running or stopped), the `PartitionStates` (leader, epoch, replicas, ISR, ELR of every partition with a
recorded state) and `CoordinatorRouting` (who coordinates each group id and transactional id the coordinators
know; the coordinator is the broker FindCoordinator names). It elects and stops nothing; a partition without a
recorded state yet is left out. Event-loop thread only (everything it reads is loop-owned; `assert_on_loop` checks
it when the suite's check is on).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from minikafka.broker.cluster import Cluster
from minikafka.broker.cluster_read_model import (
    BrokerSummary,
    ClusterReadModel,
    CoordinatorSummary,
    PartitionLeadership,
)
from minikafka.broker.coordinator_routing import GROUP, TOPICS, TRANSACTION, CoordinatorRouting
from minikafka.broker.loop_owner import assert_on_loop
from minikafka.broker.partition_states import PartitionStates


class ClusterReader:
    """Reads the cluster's state into immutable values; `group_ids` and `transactional_ids` name the keys the group
    and transaction coordinators hold (called on the loop too)."""

    def __init__(self, cluster: Cluster, partitions: PartitionStates, routing: CoordinatorRouting,
                 group_ids: Callable[[], Iterable[str]] = tuple,
                 transactional_ids: Callable[[], Iterable[str]] = tuple) -> None:
        self.cluster = cluster
        self.partitions = partitions
        self.routing = routing
        self.group_ids = group_ids
        self.transactional_ids = transactional_ids

    def read_model(self) -> ClusterReadModel:
        assert_on_loop("ClusterReader")  # the partition states and the coordinators' maps change on the loop
        partitions = []
        for topic, states in self.partitions.items():
            for index, state in enumerate(states):
                partitions.append(PartitionLeadership(
                    topic, index, state.leader, state.leader_epoch, tuple(state.replicas), tuple(state.isr),
                    tuple(state.elr), tuple(state.last_known_elr) if not state.isr else (),
                    tuple(self.partitions.offline_replicas(state))))
        leads = Counter(p.leader for p in partitions)
        replica_of = Counter(replica for p in partitions for replica in p.replicas)
        controller = self.cluster.controller_id()
        brokers = []
        for node_id in self.cluster.broker_ids:
            node = self.cluster.nodes[node_id]
            listeners = tuple(self.cluster.endpoint(node_id, endpoint.listener_name).connection_string
                              for endpoint in node.config.listeners)
            brokers.append(BrokerSummary(node_id, listeners, node.running, node_id == controller, leads[node_id],
                                         replica_of[node_id]))
        coordinators = [self._coordinator(kind, key) for kind, keys in ((GROUP, self.group_ids()),
                                                                         (TRANSACTION, self.transactional_ids()))
                        for key in sorted(set(keys))]
        return ClusterReadModel(tuple(brokers), tuple(partitions), tuple(coordinators))

    def _coordinator(self, kind: str, key: str) -> CoordinatorSummary:
        return CoordinatorSummary(kind, key, TOPICS[kind], self.routing.partition_for(kind, key),
                                  self.routing.coordinator_id(kind, key))

"""`Cluster`: the brokers this process runs (`minikafka.brokers`), each with its own config (node id, listener
ports), its advertised endpoints once bound and whether it is running (`stop_broker` / `start_broker`).

Broker k (k = 1..N) is node.id + k - 1 and listens on every listener's port + k - 1. A coordinator lives on the
leader of its key's internal partition (`coordinator_routing.py`); `coordinator_id`, the first broker, is where a
partition without a recorded state is placed and who coordinates while an internal topic does not exist yet (and
always with one broker). Shared by every broker's handlers; event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.broker.config import KafkaConfig
from minikafka.broker.listeners import EndPoint


@dataclass
class BrokerNode:
    """One broker of the process: its config (ports bound once it listened) and whether it is running."""

    node_id: int
    config: KafkaConfig
    running: bool = True


class Cluster:
    """The brokers of this process by id, in id order."""

    def __init__(self, configs: Sequence[KafkaConfig]) -> None:
        self.nodes = {config.node_id: BrokerNode(config.node_id, config) for config in configs}
        #: the first broker: the default replica, the coordinator before the internal topics exist, the controller
        self.coordinator_id = min(self.nodes)

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.nodes)

    def running_ids(self) -> list[int]:
        return [node_id for node_id in self.broker_ids if self.nodes[node_id].running]

    def controller_id(self) -> int:
        """The controller Metadata and DescribeCluster name (clients send CreateTopics and the like there): the
        first broker, or the first running one while it is stopped (KRaft brokers name a live broker)."""
        return self.coordinator_id if self.is_running(self.coordinator_id) else self.running_ids()[0]

    def is_running(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.running

    def endpoint(self, node_id: int, listener_name: str) -> EndPoint:
        """What a client that reached us on `listener_name` is told to use for broker `node_id`."""
        return self.nodes[node_id].config.advertised_endpoint(listener_name)

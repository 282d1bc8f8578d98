"""`CoordinatorFaults`: `move_coordinator(kind, key, id)`, the fault that moves a coordinator to another broker of
this process (`minikafka.brokers`). As on a Kafka cluster a coordinator moves with the leadership of its internal
partition (`coordinator_routing.py`), so the fault elects broker `id` leader of the key's partition of
`__consumer_offsets` ("group": a group id), `__transaction_state` ("transaction": a transactional id) or
`__share_group_state` ("share": "groupId:topicId:partition"), leader epoch + 1. The old coordinator answers
NOT_COORDINATOR from then on; clients look the coordinator up again and retry there.

Input is validated here (a `FaultInputError` names the mistake: an unknown kind or broker, a stopped broker, a
broker that is not a replica of the partition, an internal topic that does not exist yet). Event-loop thread only.
"""

from __future__ import annotations

from minikafka.broker.coordinator_routing import TOPICS, CoordinatorRouting
from minikafka.broker.faults.fault_names import FaultInputError


class CoordinatorFaults:
    """Moves coordinators by electing leaders of the internal topics' partitions (`PartitionStates.elect`)."""

    def __init__(self, routing: CoordinatorRouting) -> None:
        self.routing = routing

    def move_coordinator(self, kind: str, key: str, broker: str | int) -> int:
        """Broker `broker` coordinates `key` from now on; returns the internal partition that moved."""
        kind = str(kind).strip().lower()
        if kind not in TOPICS:
            raise FaultInputError(f"unknown coordinator kind {kind!r}: use one of {', '.join(TOPICS)}")
        cluster = self.routing.cluster
        try:
            broker_id = int(str(broker).strip())
        except ValueError:
            raise FaultInputError(f"broker id must be an integer, got {broker!r}") from None
        if broker_id not in cluster.nodes:
            raise FaultInputError(f"unknown broker {broker_id}: the brokers are "
                                  f"{', '.join(str(known) for known in cluster.broker_ids)}")
        if not cluster.is_running(broker_id):
            raise FaultInputError(f"broker {broker_id} is stopped: start_broker({broker_id}) first")
        partition = self.routing.partition_for(kind, key)
        if partition is None:
            raise FaultInputError(f"{TOPICS[kind]} does not exist yet: a client's FindCoordinator creates it")
        try:
            self.routing.partitions.elect(TOPICS[kind], partition, broker_id)
        except ValueError as error:
            raise FaultInputError(f"cannot move the {kind} coordinator of {key!r} ({TOPICS[kind]}-{partition}): "
                                  f"{error}") from None
        return partition

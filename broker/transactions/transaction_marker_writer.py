"""`TxnMarkerWriter`: writes a transaction's COMMIT/ABORT marker to one partition — Kafka's
TransactionMarkerChannelManager plus the broker side of WriteTxnMarkers, collapsed for a single node.

`ReplicaTxnMarkerWriter` appends the control batch through the ReplicaManager (which moves the partition's
last stable offset) and, for a `__consumer_offsets` partition, tells the group coordinator to materialize
or discard that producer's pending transactional offsets, as Kafka's WriteTxnMarkers handler does.
Event-loop thread only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from minikafka.broker.groups.offsets_topic import OFFSETS_TOPIC

if TYPE_CHECKING:
    from minikafka.broker.groups.group_coordinator import GroupCoordinator
    from minikafka.broker.replica_manager import ReplicaManager


class TxnMarkerWriter(Protocol):
    def write_marker(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool
    ) -> None:
        """Write the marker; raises the partition's KafkaError."""
        ...


class ReplicaTxnMarkerWriter:
    """Markers into the broker's own partition logs."""

    def __init__(self, replica_manager: ReplicaManager, group_coordinator: GroupCoordinator) -> None:
        self.replica_manager = replica_manager
        self.group_coordinator = group_coordinator

    def write_marker(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool
    ) -> None:
        self.replica_manager.write_txn_marker(topic, partition, producer_id, producer_epoch, coordinator_epoch, commit)
        if topic == OFFSETS_TOPIC:
            self.group_coordinator.offsets.complete_txn_offsets(producer_id, partition, commit)

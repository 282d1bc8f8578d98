"""`PendingTxnOffsets`: transactional offset commits (TxnOffsetCommit) that wait for their producer's
transaction to end — Kafka's GroupMetadata.pendingTransactionalOffsetCommits, kept by producer id.

They are in `__consumer_offsets` already (a transactional batch of the producer); the COMMIT marker makes
them the group's committed offsets, the ABORT marker drops them. Until then OffsetFetch does not show them,
and with require_stable answers UNSTABLE_OFFSET_COMMIT for their partitions. Event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from minikafka.broker.groups.group_metadata import OffsetAndMetadata

TopicPartition = tuple[str, int]


class PendingTxnOffsets:
    """producer id -> group id -> partition -> offset awaiting the producer's marker."""

    def __init__(self) -> None:
        self._by_producer: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}

    def add(self, producer_id: int, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in groups.get(group_id, ()) for groups in self._by_producer.values())

    def pending_for(self, group_id: str) -> dict[int, dict[TopicPartition, OffsetAndMetadata]]:
        return {pid: dict(groups[group_id]) for pid, groups in self._by_producer.items() if group_id in groups}

    def take(
        self, producer_id: int, in_partition: Callable[[str], bool]
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Remove and return the producer's pending offsets of the groups `in_partition` selects (the groups
        of the `__consumer_offsets` partition a marker was written to)."""
        groups = self._by_producer.get(producer_id)
        if not groups:
            return {}
        taken = {group_id: groups.pop(group_id) for group_id in [g for g in groups if in_partition(g)]}
        if not groups:
            del self._by_producer[producer_id]
        return taken

"""`ShareReadModel`: what the share coordinators publish for readers outside them (the console, the metrics
collector): per share group its state and members, per loaded share partition its offsets and record counts, and
the share-session counts. Immutable values, built by `ShareCoordinator.read_model()` on the event loop; readers
never touch the groups, the share partitions or the session cache themselves."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

__all__ = ["ShareGroupSummary", "SharePartitionSummary", "ShareReadModel"]


@dataclass(frozen=True, slots=True)
class SharePartitionSummary:
    """One loaded share partition: its start and end offsets, the records in flight (available or acquired) and
    archived between them, and its in-flight batches."""

    group_id: str
    topic_id: uuid.UUID
    topic: str  # the topic's name; its id as text when the topic is gone
    partition: int
    start_offset: int
    end_offset: int
    in_flight: int
    archived: int
    in_flight_batches: int


@dataclass(frozen=True, slots=True)
class ShareGroupSummary:
    group_id: str
    state: str  # Kafka's ShareGroupState name: Empty, Stable, Dead
    members: tuple[tuple[str, str, str], ...]  # (member id, client id, client host), sorted


@dataclass(frozen=True, slots=True)
class ShareReadModel:
    groups: tuple[ShareGroupSummary, ...]  # sorted by group id
    partitions: tuple[SharePartitionSummary, ...]  # sorted by group, topic, partition
    share_sessions: int
    share_session_partitions: int

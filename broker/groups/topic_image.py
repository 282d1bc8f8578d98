"""`TopicImage`: the topics a KIP-848 group coordinator sees (name, id, partition count) when it resolves
subscriptions and computes target assignments — the broker's ReplicaManager, or a fixed set in tests. Kafka's
coordinator reads the same from its MetadataImage. Read on the event-loop thread; not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from minikafka.broker.groups.assignors import TopicInfo

if TYPE_CHECKING:
    from minikafka.broker.replica_manager import ReplicaManager

__all__ = ["ReplicaTopicImage", "StaticTopicImage", "TopicImage", "topic_names_by_id"]


class TopicImage(Protocol):
    def topics(self) -> Mapping[str, TopicInfo]:
        """Every topic by name with its id and partition count."""
        ...


def topic_names_by_id(image: TopicImage) -> dict[uuid.UUID, str]:
    """Every topic's name by its id."""
    return {info.topic_id: name for name, info in image.topics().items()}


class ReplicaTopicImage:
    """The broker's topics, as its ReplicaManager knows them."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager

    def topics(self) -> Mapping[str, TopicInfo]:
        return {name: TopicInfo(meta.topic_id, name, meta.num_partitions)
                for name, meta in self.replica_manager.topics().items()}


@dataclass
class StaticTopicImage:
    """A fixed set of topics (tests)."""

    by_name: dict[str, TopicInfo] = field(default_factory=dict)

    def add(self, name: str, num_partitions: int) -> TopicInfo:
        info = self.by_name[name] = TopicInfo(uuid.uuid4(), name, num_partitions)
        return info

    def topics(self) -> Mapping[str, TopicInfo]:
        return self.by_name

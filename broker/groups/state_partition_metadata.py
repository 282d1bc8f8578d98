"""How Apache Kafka 4.3.1's group coordinator moves a share group's topics through its
ShareGroupStatePartitionMetadata record (`GroupMetadataManager`): subscribed partitions not yet initialised become
*initializing*, then *initialized* once the share coordinator wrote their state (or leave *initializing* again when
it could not); DeleteShareGroupOffsets moves a topic from *initialized* to *deleting* until its state is deleted;
deleting the group moves everything to *deleting* before its tombstone.

Pure functions from one `StatePartitionMetadata` to the next (the caller writes each as a record). Kafka retries
an *initializing* topic only after `group.share.initialize.retry.interval.ms` because its initialisation is
asynchronous; minikafka initialises within the heartbeat, so a topic still *initializing* at the next heartbeat
is one whose initialisation was cut short (a crash) and is retried at once. Thread-safe (no state).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from minikafka.broker.groups.share_group import StatePartitionMetadata, TopicPartitions

__all__ = [
    "EMPTY",
    "begin_initializing",
    "delete_all",
    "delete_offsets",
    "finish_deleting",
    "finish_initializing",
    "to_initialize",
    "uninitialize",
]

EMPTY = StatePartitionMetadata()


def _combine(base: TopicPartitions, added: TopicPartitions) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    """Kafka's combineInitMaps: the union of the partitions per topic, the name from `added` where it has one."""
    combined = dict(base)
    for topic_id, (name, partitions) in added.items():
        combined[topic_id] = (name, combined.get(topic_id, (name, frozenset()))[1] | partitions)
    return combined


def _without(topics: TopicPartitions, removed: TopicPartitions) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    kept = {}
    for topic_id, (name, partitions) in topics.items():
        left = partitions - removed.get(topic_id, ("", frozenset()))[1]
        if left:
            kept[topic_id] = (name, left)
    return kept


def to_initialize(
    metadata: StatePartitionMetadata, subscribed: Iterable[str], topics: Mapping[str, tuple[uuid.UUID, int]]
) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    """Kafka's subscribedTopicsChangeMap: the partitions of the subscribed topics (that exist) not initialised."""
    change = {}
    for name in sorted(set(subscribed)):
        if name not in topics:
            continue
        topic_id, count = topics[name]
        missing = frozenset(range(count)) - metadata.initialized.get(topic_id, (name, frozenset()))[1]
        if missing:
            change[topic_id] = (name, missing)
    return change


def begin_initializing(metadata: StatePartitionMetadata, change: TopicPartitions) -> StatePartitionMetadata:
    """Kafka's addInitializingTopicsRecords: `change` joins the initializing topics (and leaves the deleting ones)."""
    return StatePartitionMetadata(
        initializing=_combine(metadata.initializing, change),
        initialized=metadata.initialized,
        deleting={t: n for t, n in metadata.deleting.items() if t not in change},
    )


def finish_initializing(metadata: StatePartitionMetadata, done: TopicPartitions) -> StatePartitionMetadata:
    """Kafka's initializeShareGroupState: the share coordinator initialised `done`."""
    return StatePartitionMetadata(
        initializing=_without(metadata.initializing, done),
        initialized=_combine(metadata.initialized, done),
        deleting=metadata.deleting,
    )


def uninitialize(metadata: StatePartitionMetadata, failed: TopicPartitions) -> StatePartitionMetadata:
    """Kafka's uninitializeShareGroupState: the share coordinator could not initialise `failed`."""
    return StatePartitionMetadata(
        initializing=_without(metadata.initializing, failed),
        initialized=metadata.initialized,
        deleting=metadata.deleting,
    )


def delete_offsets(
    metadata: StatePartitionMetadata, topic_ids: Iterable[uuid.UUID]
) -> StatePartitionMetadata:
    """Kafka's sharePartitionsEligibleForOffsetDeletion: the initialised topics among `topic_ids` move to
    deleting (the caller deletes their state, and that of the ones already deleting)."""
    moved = {t for t in topic_ids if t in metadata.initialized}
    return StatePartitionMetadata(
        initializing=metadata.initializing,
        initialized={t: v for t, v in metadata.initialized.items() if t not in moved},
        deleting={**metadata.deleting, **{t: metadata.initialized[t][0] for t in moved}},
    )


def finish_deleting(metadata: StatePartitionMetadata, topic_ids: Iterable[uuid.UUID]) -> StatePartitionMetadata:
    """Kafka's completeDeleteShareGroupOffsets: the state of `topic_ids` is deleted."""
    gone = set(topic_ids)
    return StatePartitionMetadata(
        initializing=metadata.initializing,
        initialized=metadata.initialized,
        deleting={t: n for t, n in metadata.deleting.items() if t not in gone},
    )


def delete_all(metadata: StatePartitionMetadata) -> StatePartitionMetadata:
    """Kafka's shareGroupBuildPartitionDeleteRequest (DeleteGroups): every initialising and initialised topic moves
    to deleting, with those already deleting."""
    deleting = dict(metadata.deleting)
    for topic_id, (name, _partitions) in _combine(metadata.initialized, metadata.initializing).items():
        deleting[topic_id] = name
    return StatePartitionMetadata(deleting=deleting)

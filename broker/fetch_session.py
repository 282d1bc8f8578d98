"""`FetchSession`: one incremental fetch session (KIP-227), as Kafka's FetchSession.scala keeps it.

A session remembers, per partition, the fetcher's last request parameters and the high watermark and log start
offset it was last told, so that an incremental request lists only partitions whose parameters changed and an
incremental response only partitions with something new. Also here: the value types a fetch context works on
(`TopicIdPartition`, `PartitionData`, `CachedPartition`) and the session id/epoch rules of `FetchMetadata`.

Not thread-safe: sessions live on the event-loop thread (Kafka takes a per-session lock; a single event loop
needs none, since nothing awaits while a session is read or changed).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.broker.replica_manager import PartitionRead

INVALID_SESSION_ID = 0
#: a full request that asks for a new session
INITIAL_EPOCH = 0
#: a full request that asks for no session (sessionless), or closes the one it names
FINAL_EPOCH = -1
ZERO_UUID = uuid.UUID(int=0)
INT32_MAX = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: -1 stays -1, the largest int32 wraps to 1 (0 is never reused)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


def is_full(epoch: int) -> bool:
    """A request with epoch 0 (create a session) or -1 (no session) is a full fetch."""
    return epoch in (INITIAL_EPOCH, FINAL_EPOCH)


@dataclass(frozen=True, slots=True, eq=False)
class TopicIdPartition:
    """A fetched partition, named as the request named it: by topic name before Fetch v13 (`topic_id` zero), by
    topic id from v13 (`topic` None while the id is unknown). Equal when the id (or, without one, the name) and
    the partition are equal, so a partition keeps its identity while its name is resolved."""

    topic_id: uuid.UUID
    topic: str | None
    partition: int

    @property
    def key(self) -> tuple[uuid.UUID | str | None, int]:
        return (self.topic if self.topic_id == ZERO_UUID else self.topic_id), self.partition

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicIdPartition) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:
        name = self.topic if self.topic is not None else "<unknown>"
        return f"{name}-{self.partition}" if self.topic_id == ZERO_UUID else f"{self.topic_id}:{name}-{self.partition}"


@dataclass(frozen=True, slots=True)
class PartitionData:
    """One partition's parameters in a Fetch request (Kafka's FetchRequest.PartitionData)."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1


@dataclass(slots=True)
class CachedPartition:
    """A session's copy of one partition: the last request parameters, and the high watermark and local log
    start offset last sent (-1 = never, or after an error, so the partition is sent again once it recovers)."""

    partition: TopicIdPartition
    request: PartitionData
    high_watermark: int = -1
    local_log_start_offset: int = -1

    def maybe_update_response_data(self, read: PartitionRead, update: bool) -> bool:
        """True if `read` must be in an incremental response: it has records, a new high watermark or log start
        offset, or an error. With `update`, remember what is being sent (Kafka's maybeUpdateResponseData)."""
        must_respond = len(read.records) > 0
        if self.high_watermark != read.high_watermark:
            must_respond = True
            if update:
                self.high_watermark = read.high_watermark
        if self.local_log_start_offset != read.log_start_offset:
            must_respond = True
            if update:
                self.local_log_start_offset = read.log_start_offset
        if read.error is not None:
            must_respond = True
            if update:
                self.high_watermark = -1
        return must_respond


class FetchSession:
    """Owns one session's id, epoch, timestamps and its ordered map of cached partitions.

    `partitions` keeps Kafka's order: insertion, except that a partition which returned records moves to the
    end, so the next request's response-size budget favours the others. `cached_size` and the two evictable
    flags belong to the FetchSessionCache (set by its `touch`). Not thread-safe: event-loop thread only.
    """

    def __init__(self, session_id: int, privileged: bool, partitions: Iterable[CachedPartition],
                 uses_topic_ids: bool, creation_ms: int, epoch: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = creation_ms
        self.last_used_ms = creation_ms
        self.epoch = epoch
        self.partitions: OrderedDict[TopicIdPartition, CachedPartition] = OrderedDict(
            (cached.partition, cached) for cached in partitions)
        #: the size the cache last accounted for (-1: not in the cache yet)
        self.cached_size = -1
        self.evictable_by_all = False
        self.evictable_by_privileged = False

    def __len__(self) -> int:
        return len(self.partitions)

    def update(self, fetch_data: Mapping[TopicIdPartition, PartitionData], to_forget: Iterable[TopicIdPartition]
               ) -> tuple[list[TopicIdPartition], list[TopicIdPartition], list[TopicIdPartition]]:
        """Apply an incremental request: add or update the listed partitions, drop the forgotten ones.
        Returns (added, updated, removed)."""
        added: list[TopicIdPartition] = []
        updated: list[TopicIdPartition] = []
        removed: list[TopicIdPartition] = []
        for partition, data in fetch_data.items():
            cached = self.partitions.get(partition)
            if cached is None:
                self.partitions[partition] = CachedPartition(partition, data)
                added.append(partition)
            else:
                cached.request = data
                updated.append(partition)
        for partition in to_forget:
            if self.partitions.pop(partition, None) is not None:
                removed.append(partition)
        return added, updated, removed

    def resolve_topic_names(self, topic_names: Mapping[uuid.UUID, str]) -> None:
        """Name the partitions added while their topic id was unknown, once the id is known (Kafka's
        maybeResolveUnknownName). A partition's identity is its id, so it keeps its place."""
        for key, cached in self.partitions.items():
            if cached.partition.topic is None and cached.partition.topic_id in topic_names:
                resolved = TopicIdPartition(key.topic_id, topic_names[key.topic_id], key.partition)
                cached.partition = resolved

    def mark_sent_with_records(self, partition: TopicIdPartition) -> None:
        self.partitions.move_to_end(partition)

    def __repr__(self) -> str:
        return (f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partitions)}, "
                f"uses_topic_ids={self.uses_topic_ids}, creation_ms={self.creation_ms}, "
                f"last_used_ms={self.last_used_ms}, epoch={self.epoch})")

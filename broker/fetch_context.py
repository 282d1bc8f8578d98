"""`FetchContext` and its four kinds, as in Kafka's FetchSession.scala: how one Fetch request relates to a session.

- `SessionlessFetchContext`: a full fetch without a session (session id 0 in the response); every requested
  partition is answered.
- `FullFetchContext`: a full fetch that asks for a session (epoch 0): every requested partition is answered, and a
  session caching them is created if the FetchSessionCache has or can make room (else session id 0).
- `IncrementalFetchContext`: a request in an existing session: it reads every partition the session caches (with
  the cached parameters unless the request changed them) and answers only those with records, a new high
  watermark or log start offset, or an error.
- `SessionErrorContext`: the session is unknown, the epoch is wrong, or the request's version does not match the
  session's use of topic ids: a top-level error, no partitions, session id 0.

The handler asks `partitions()` what to read, reads, then calls `update_and_generate_response` with the reads in
order. Between the two it awaits (long poll), so an incremental context re-checks the session epoch before it
answers, as Kafka does for a duplicate request. Not thread-safe: event-loop thread only.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from minikafka.broker.fetch_session import (
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    PartitionData,
    TopicIdPartition,
    next_epoch,
)
from minikafka.broker.fetch_session_cache import FetchSessionCache
from minikafka.broker.replica_manager import PartitionRead
from minikafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FetchResponseData:
    """What a context answers: the top-level error, the session id and the partitions to send, in order."""

    error_code: int
    session_id: int
    partitions: list[tuple[TopicIdPartition, PartitionRead]] = field(default_factory=list)


class FetchContext:
    """The base: a context for one request. `kind` names it in metrics (`context` label)."""

    kind = ""

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        """The partitions to read for this request, with their parameters, in the order to read them."""
        raise NotImplementedError

    def update_and_generate_response(self, updates: Mapping[TopicIdPartition, PartitionRead]) -> FetchResponseData:
        """Given the reads of `partitions()` (in order), update the session and choose what to send."""
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    """A request whose session metadata was refused; nothing is read."""

    kind = "session_error"

    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        return []

    def update_and_generate_response(self, updates: Mapping[TopicIdPartition, PartitionRead]) -> FetchResponseData:
        log.debug("Session error fetch context returning %s", self.error.name)
        return FetchResponseData(self.error, INVALID_SESSION_ID)


class SessionlessFetchContext(FetchContext):
    """A full fetch answered without a session."""

    kind = "sessionless"

    def __init__(self, fetch_data: Mapping[TopicIdPartition, PartitionData]) -> None:
        self.fetch_data = fetch_data

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        return list(self.fetch_data.items())

    def update_and_generate_response(self, updates: Mapping[TopicIdPartition, PartitionRead]) -> FetchResponseData:
        return FetchResponseData(ErrorCode.NONE, INVALID_SESSION_ID, list(updates.items()))


class FullFetchContext(FetchContext):
    """A full fetch that creates a session from its response when the cache admits one."""

    kind = "full"

    def __init__(self, cache: FetchSessionCache, now_ms: Callable[[], int],
                 fetch_data: Mapping[TopicIdPartition, PartitionData], uses_topic_ids: bool,
                 is_from_follower: bool) -> None:
        self.cache = cache
        self.now_ms = now_ms
        self.fetch_data = fetch_data
        self.uses_topic_ids = uses_topic_ids
        self.is_from_follower = is_from_follower

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        return list(self.fetch_data.items())

    def update_and_generate_response(self, updates: Mapping[TopicIdPartition, PartitionRead]) -> FetchResponseData:
        def create_partitions() -> list[CachedPartition]:
            return [CachedPartition(partition, self.fetch_data[partition], read.high_watermark, read.log_start_offset)
                    for partition, read in updates.items()]

        session_id = self.cache.maybe_create_session(self.now_ms(), self.is_from_follower, len(updates),
                                                     self.uses_topic_ids, create_partitions)
        log.debug("Full fetch context with session id %d returning %d partitions", session_id, len(updates))
        return FetchResponseData(ErrorCode.NONE, session_id, list(updates.items()))


class IncrementalFetchContext(FetchContext):
    """A request in `session`, whose epoch the FetchManager has already checked and advanced."""

    kind = "incremental"

    def __init__(self, request_epoch: int, session: FetchSession, topic_names: Mapping[uuid.UUID, str]) -> None:
        self.request_epoch = request_epoch
        self.session = session
        self.topic_names = topic_names

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        if self.session.uses_topic_ids:
            self.session.resolve_topic_names(self.topic_names)
        return [(cached.partition, cached.request) for cached in self.session.partitions.values()]

    def update_and_generate_response(self, updates: Mapping[TopicIdPartition, PartitionRead]) -> FetchResponseData:
        session = self.session
        expected_epoch = next_epoch(self.request_epoch)
        if session.epoch != expected_epoch:
            log.info("Incremental fetch session %d expected epoch %d, but got %d. Possible duplicate request.",
                     session.id, expected_epoch, session.epoch)
            return FetchResponseData(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id)
        changed: list[tuple[TopicIdPartition, PartitionRead]] = []
        for partition, read in updates.items():
            cached = session.partitions.get(partition)
            if cached is None or cached.maybe_update_response_data(read, update=True):
                changed.append((partition, read))
                if cached is not None and read.records:
                    session.mark_sent_with_records(partition)
        log.debug("Incremental fetch context with session id %d returning %d of %d partitions", session.id,
                  len(changed), len(updates))
        return FetchResponseData(ErrorCode.NONE, session.id, changed)

"""`FetchManager`: picks the FetchContext for each Fetch request (Kafka's FetchManager.newContext).

Request metadata (session id, epoch) -> context:
- (0, -1): sessionless full fetch. (id, -1): close session `id`, then sessionless.
- (0, 0): full fetch that creates a session. (id, 0): close session `id`, then create a new one.
- (id, n > 0): incremental, if session `id` exists (else FETCH_SESSION_ID_NOT_FOUND), its epoch is n (else
  INVALID_FETCH_SESSION_EPOCH), and the request version matches the session's names/ids (v13+ names topics by
  id; else FETCH_SESSION_TOPIC_ID_ERROR). The request's partitions are added or updated, forgotten ones removed;
  a session left empty is closed and the request answered sessionless. Otherwise the session is touched and its
  epoch advanced.
Also counts the contexts created, by kind, for the broker's metrics. Not thread-safe: event-loop thread only.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from minikafka.broker.fetch_context import (
    FetchContext,
    FullFetchContext,
    IncrementalFetchContext,
    SessionErrorContext,
    SessionlessFetchContext,
)
from minikafka.broker.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, PartitionData, TopicIdPartition, is_full
from minikafka.broker.fetch_session import next_epoch as _next_epoch
from minikafka.broker.fetch_session_cache import FetchSessionCache
from minikafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

#: the first Fetch version that names topics by id (KIP-516)
TOPIC_ID_VERSION = 13


class FetchManager:
    """Owns the FetchSessionCache and the per-kind count of fetch contexts created."""

    def __init__(self, cache: FetchSessionCache, now_ms: Callable[[], int]) -> None:
        self.cache = cache
        self.now_ms = now_ms
        self.contexts: Counter[str] = Counter()

    def new_context(self, version: int, session_id: int, epoch: int, is_from_follower: bool,
                    fetch_data: Mapping[TopicIdPartition, PartitionData], to_forget: Sequence[TopicIdPartition],
                    topic_names: Mapping[uuid.UUID, str]) -> FetchContext:
        context = self._new_context(version, session_id, epoch, is_from_follower, fetch_data, to_forget,
                                    topic_names)
        self.contexts[context.kind] += 1
        return context

    def _new_context(self, version: int, session_id: int, epoch: int, is_from_follower: bool,
                     fetch_data: Mapping[TopicIdPartition, PartitionData], to_forget: Sequence[TopicIdPartition],
                     topic_names: Mapping[uuid.UUID, str]) -> FetchContext:
        if is_full(epoch):
            if session_id != INVALID_SESSION_ID and self.cache.remove(session_id) is not None:
                log.debug("Removed fetch session %d", session_id)  # any session named in a full fetch is closed
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self.cache, self.now_ms, fetch_data, version >= TOPIC_ID_VERSION,
                                    is_from_follower)
        session = self.cache.get(session_id)
        if session is None:
            log.debug("Session error for %d: no such session ID found", session_id)
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            log.debug("Session error for %d: expected epoch %d, but got %d instead", session_id, session.epoch, epoch)
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= TOPIC_ID_VERSION):
            log.debug("Session error for %d: request version %d does not match the session's use of topic ids",
                      session_id, version)
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        added, updated, removed = session.update(fetch_data, to_forget)
        if not session.partitions:
            log.debug("Closing fetch session %d, epoch %d: no partitions left after removing %d", session.id,
                      session.epoch, len(removed))
            self.cache.remove(session.id)
            return SessionlessFetchContext(fetch_data)
        self.cache.touch(session, self.now_ms())
        session.epoch = _next_epoch(session.epoch)
        log.debug("Incremental fetch context for session %d, epoch %d: added %d, updated %d, removed %d partitions",
                  session.id, session.epoch, len(added), len(updated), len(removed))
        return IncrementalFetchContext(epoch, session, topic_names)

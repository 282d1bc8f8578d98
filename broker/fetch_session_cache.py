"""`FetchSessionCache`: the broker's bounded set of incremental fetch sessions, with Kafka's eviction policy.

At most `max.incremental.fetch.session.cache.slots` sessions (Kafka's default 1000; 0 turns sessions off). When
the cache is full, a new session may evict an existing one (Kafka's FetchSessionCache.tryEvict):
1. the least recently used session, if it has been unused for more than the eviction time; otherwise
2. the least valuable evictable session, if the new one is worth more. Value orders by (privileged, partition
   count, id): a privileged (follower) session beats an unprivileged (consumer) one, then more partitions win,
   and at equal size the existing session stays. A session is evictable by unprivileged newcomers once it is
   older than the eviction time, and by privileged ones when it is unprivileged or older than that. As in
   Kafka, whether a session is evictable is decided when it is last used (`touch`), not when space is needed.
The eviction time is Kafka's fixed MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (120 s), configurable here as
`minikafka.incremental.fetch.session.eviction.ms`.

Unlike Kafka 3.8+ (KAFKA-9401: 8 shards of slots/8 each, a new session going to the next shard round-robin), the
cache is not sharded (shards spread lock contention across request-handler threads; one event loop has none), so
the slot limit is exact and eviction considers every session, as in Kafka before 3.8.
Not thread-safe: event-loop thread only.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable

from minikafka.broker.fetch_session import INITIAL_EPOCH, INT32_MAX, INVALID_SESSION_ID, CachedPartition, FetchSession
from minikafka.broker.fetch_session import next_epoch as _next_epoch

log = logging.getLogger(__name__)

#: Kafka's KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
DEFAULT_EVICTION_MS = 120_000


class FetchSessionCache:
    """Owns the sessions by id, the partition count they cache and the eviction count."""

    def __init__(self, max_entries: int, eviction_ms: int = DEFAULT_EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._sessions: dict[int, FetchSession] = {}
        self._num_partitions = 0
        self.evictions = 0
        self._rng = rng or random.Random()

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def total_partitions(self) -> int:
        """Partitions cached over all sessions (Kafka's NumIncrementalFetchPartitionsCached)."""
        return self._num_partitions

    def sessions(self) -> list[FetchSession]:
        return list(self._sessions.values())

    def new_session_id(self) -> int:
        """A random positive id not in use (Kafka: ThreadLocalRandom in [1, Int.MaxValue))."""
        while True:
            session_id = self._rng.randrange(1, INT32_MAX)
            if session_id not in self._sessions and session_id != INVALID_SESSION_ID:
                return session_id

    def maybe_create_session(self, now_ms: int, privileged: bool, size: int, uses_topic_ids: bool,
                             create_partitions: Callable[[], Iterable[CachedPartition]]) -> int:
        """Create a session of `size` partitions if there is room or room can be made; its id, or
        INVALID_SESSION_ID (0) when the fetcher must go on without one."""
        if len(self._sessions) < self.max_entries or self.try_evict(privileged, (privileged, size, 0), now_ms):
            session = FetchSession(self.new_session_id(), privileged, create_partitions(), uses_topic_ids, now_ms,
                                   _next_epoch(INITIAL_EPOCH))
            self._sessions[session.id] = session
            self.touch(session, now_ms)
            log.debug("Created fetch session %r", session)
            return session.id
        log.debug("No fetch session created for privileged=%s, size=%d", privileged, size)
        return INVALID_SESSION_ID

    def try_evict(self, privileged: bool, key: tuple[bool, int, int], now_ms: int) -> bool:
        """Evict one session to make room for a new one whose evictable key is `key`; True if one went."""
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            log.debug("Evicting stale fetch session %d", stalest.id)
            self._evict(stalest)
            return True
        candidates = [s for s in self._sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        victim = min(candidates, key=_evictable_key)
        if key < _evictable_key(victim):
            log.debug("Cannot evict fetch session %s with %s", _evictable_key(victim), key)
            return False
        log.debug("Evicting fetch session %s with %s", _evictable_key(victim), key)
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._num_partitions -= max(session.cached_size, 0)
            session.cached_size = -1
            session.evictable_by_all = session.evictable_by_privileged = False
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Record a use of `session`: its last-used time, the partitions it caches, and whether it may now be
        evicted for a more valuable session (decided here, as Kafka does)."""
        session.last_used_ms = now_ms
        if session.cached_size != -1:
            self._num_partitions -= session.cached_size
        session.cached_size = len(session)
        self._num_partitions += session.cached_size
        old_enough = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old_enough
        session.evictable_by_all = old_enough


def _evictable_key(session: FetchSession) -> tuple[bool, int, int]:
    """Kafka's EvictableKey: the least valuable session sorts first."""
    return session.privileged, session.cached_size, session.id

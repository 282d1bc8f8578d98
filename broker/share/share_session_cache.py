"""Share sessions (KIP-932), as Apache Kafka 4.3.1's `ShareSessionCache` and `SharePartitionManager.newContext` keep
them: one session per (group, member) holding the partitions the member fetches, and its epoch.

ShareFetch with epoch 0 opens a session (replacing the member's old one; acknowledgements are refused then, as
there is nothing to acknowledge yet), epoch -1 closes it (the caller applies the piggybacked acknowledgements and
then releases the member's acquired records), any other epoch must be the session's current one and moves it on
(wrapping from 2^31-1 to 1) after adding the request's partitions and dropping its forgotten ones. ShareAcknowledge
may not open a session; with -1 it leaves the epoch alone. Errors are Kafka's: SHARE_SESSION_NOT_FOUND (122),
INVALID_SHARE_SESSION_EPOCH (123), SHARE_SESSION_LIMIT_REACHED (133, `group.share.max.share.sessions`), INVALID_REQUEST.
A closed connection ends every session opened on it (`on_disconnect`; a client may open several, for several
members, on one connection). When the cache is full, the session idle longest is evicted to make room if it was
idle for `eviction_ms` (Kafka's share session cache eviction, 120 s as its fetch sessions' minimum); the caller
releases the evicted member's records. Sans-IO (time from `clock_ms`); not thread-safe (one owner).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from minikafka.broker.share.share_types import INVALID_REQUEST

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SHARE_SESSION_EPOCH",
    "SHARE_SESSION_LIMIT_REACHED",
    "SHARE_SESSION_NOT_FOUND",
    "ShareFetchContext",
    "ShareSession",
    "ShareSessionCache",
    "ShareSessionError",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_LIMIT_REACHED = 133
_MAX_EPOCH = 2**31 - 1
#: how long a share session must have been idle before a new one may evict it (Kafka's
#: MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS)
SESSION_EVICTION_MS = 120_000

TopicIdPartition = tuple[bytes, int]


class ShareSessionError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection_id: str
    epoch: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)  # insertion-ordered set
    last_used_ms: int = 0


class ContextKind(enum.Enum):
    NEW = "new"  # a full request opening a session
    INCREMENTAL = "incremental"
    FINAL = "final"  # the member closes its session


@dataclass(frozen=True, slots=True)
class ShareFetchContext:
    kind: ContextKind
    partitions: tuple[TopicIdPartition, ...]  # what to fetch: the session's partitions after this request
    added: tuple[TopicIdPartition, ...] = ()
    removed: tuple[TopicIdPartition, ...] = ()
    evicted: tuple[ShareSession, ...] = ()  # idle sessions evicted to make room: their records go back


class ShareSessionCache:
    """Every share session of the broker. See the module docstring."""

    def __init__(self, max_entries: int = 2000, *, eviction_ms: int = SESSION_EVICTION_MS,
                 clock_ms: Callable[[], int] = lambda: 0) -> None:
        self.max_entries = max_entries  # group.share.max.share.sessions
        self.eviction_ms = eviction_ms
        self._clock_ms = clock_ms
        self._sessions: dict[tuple[str, str], ShareSession] = {}  # least recently used first
        self._by_connection: dict[str, dict[tuple[str, str], None]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def total_partitions(self) -> int:
        return sum(len(s.partitions) for s in self._sessions.values())

    def new_context(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        fetch: Iterable[TopicIdPartition],
        forget: Iterable[TopicIdPartition],
        *,
        acknowledgements_present: bool,
        connection_id: str,
    ) -> ShareFetchContext:
        """The context of one ShareFetch request (Kafka's SharePartitionManager.newContext)."""
        key = (group_id, member_id)
        fetch = list(fetch)
        if epoch == FINAL_EPOCH:
            if key not in self._sessions:
                raise ShareSessionError(SHARE_SESSION_NOT_FOUND, "The share session was not found.")
            return ShareFetchContext(ContextKind.FINAL, ())
        if epoch == INITIAL_EPOCH:
            if acknowledgements_present:
                raise ShareSessionError(INVALID_REQUEST, "Acknowledge data present on initial epoch")
            self.remove(group_id, member_id)
            now_ms = self._clock_ms()
            evicted = self._evict_idle(now_ms)
            if len(self._sessions) >= self.max_entries:
                raise ShareSessionError(SHARE_SESSION_LIMIT_REACHED, "The limit of share sessions has been reached.")
            session = ShareSession(group_id, member_id, connection_id, next_epoch(INITIAL_EPOCH), dict.fromkeys(fetch),
                                   now_ms)
            self._sessions[key] = session
            self._by_connection.setdefault(connection_id, {})[key] = None
            return ShareFetchContext(ContextKind.NEW, tuple(session.partitions), added=tuple(session.partitions),
                                     evicted=evicted)
        session = self._checked(key, epoch)
        added = [tp for tp in fetch if tp not in session.partitions]
        session.partitions.update(dict.fromkeys(added))
        removed = [tp for tp in forget if tp in session.partitions]
        for tp in removed:
            del session.partitions[tp]
        session.epoch = next_epoch(session.epoch)
        return ShareFetchContext(ContextKind.INCREMENTAL, tuple(session.partitions), tuple(added), tuple(removed))

    def acknowledge_session_update(self, group_id: str, member_id: str, epoch: int) -> None:
        """Check (and move on) the session epoch of a ShareAcknowledge request."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(INVALID_SHARE_SESSION_EPOCH, "The share session epoch is invalid.")
        key = (group_id, member_id)
        if key not in self._sessions:
            raise ShareSessionError(SHARE_SESSION_NOT_FOUND, "The share session was not found.")
        if epoch == FINAL_EPOCH:
            return
        self._checked(key, epoch).epoch = next_epoch(epoch)

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        """Drop a session (the caller releases the member's acquired records on its partitions)."""
        session = self._sessions.pop((group_id, member_id), None)
        if session is not None:
            opened = self._by_connection.get(session.connection_id, {})
            opened.pop((group_id, member_id), None)
            if not opened:
                self._by_connection.pop(session.connection_id, None)
        return session

    def _evict_idle(self, now_ms: int) -> tuple[ShareSession, ...]:
        """At the limit: the least recently used session, if idle for `eviction_ms`, makes room."""
        if len(self._sessions) < self.max_entries or not self._sessions:
            return ()
        oldest = next(iter(self._sessions.values()))
        if now_ms - oldest.last_used_ms < self.eviction_ms:
            return ()
        self.remove(oldest.group_id, oldest.member_id)
        return (oldest,)

    def release_session(self, group_id: str, member_id: str) -> list[TopicIdPartition]:
        """The member closed its session (epoch -1): its partitions, whose acquired records the caller releases."""
        session = self.remove(group_id, member_id)
        if session is None:
            raise ShareSessionError(SHARE_SESSION_NOT_FOUND, "The share session was not found.")
        return list(session.partitions)

    def on_disconnect(self, connection_id: str) -> list[ShareSession]:
        """The connection sessions were opened on closed: they all end (Kafka's connection-disconnect listener)."""
        keys = self._by_connection.pop(connection_id, {})
        return [session for session in (self._sessions.pop(key, None) for key in keys) if session is not None]

    def _checked(self, key: tuple[str, str], epoch: int) -> ShareSession:
        session = self._sessions.get(key)
        if session is None:
            raise ShareSessionError(SHARE_SESSION_NOT_FOUND, "The share session was not found.")
        if session.epoch != epoch:
            raise ShareSessionError(INVALID_SHARE_SESSION_EPOCH, "The share session epoch is invalid.")
        session.last_used_ms = self._clock_ms()
        self._sessions[key] = self._sessions.pop(key)  # most recently used last
        return session

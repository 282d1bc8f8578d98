"""FetchSessionCache and FetchManager without sockets: Kafka's eviction policy and session id/epoch rules, on a
FakeClock (FetchSessionCacheTest / FetchSessionTest in Apache Kafka test the same rules)."""

from __future__ import annotations

import random
import uuid

import pytest

from minikafka.broker.fetch_context import (
    FullFetchContext,
    IncrementalFetchContext,
    SessionErrorContext,
    SessionlessFetchContext,
)
from minikafka.broker.fetch_manager import FetchManager
from minikafka.broker.fetch_session import (
    INVALID_SESSION_ID,
    ZERO_UUID,
    CachedPartition,
    PartitionData,
    TopicIdPartition,
    next_epoch,
)
from minikafka.broker.fetch_session_cache import FetchSessionCache
from minikafka.broker.replica_manager import PartitionRead
from minikafka.protocol.errors import ErrorCode, KafkaError, OffsetOutOfRangeError, UnknownTopicIdError
from minikafka.storage.clock import FakeClock

EVICTION_MS = 120_000


def tp(topic: str, partition: int) -> TopicIdPartition:
    return TopicIdPartition(ZERO_UUID, topic, partition)


def cached(count: int) -> list[CachedPartition]:
    return [CachedPartition(tp("t", p), PartitionData(0, 1000)) for p in range(count)]


def create(cache: FetchSessionCache, clock: FakeClock, size: int, privileged: bool = False) -> int:
    return cache.maybe_create_session(clock.monotonic_ms(), privileged, size, False, lambda: cached(size))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_epochs_follow_fetch_metadata() -> None:
    assert [next_epoch(e) for e in (-1, 0, 1, 2**31 - 1)] == [-1, 1, 2, 1]


def test_a_full_cache_refuses_fresh_sessions_of_equal_value(clock: FakeClock) -> None:
    cache = FetchSessionCache(2, EVICTION_MS, random.Random(1))
    first, second = create(cache, clock, 1), create(cache, clock, 1)
    assert first > 0 and second > 0 and first != second
    clock.advance_ms(10)
    assert create(cache, clock, 5) == INVALID_SESSION_ID  # nobody is old enough to be evicted for a bigger session
    assert len(cache) == 2 and cache.total_partitions == 2 and cache.evictions == 0


def test_a_stale_session_is_evicted_by_anyone(clock: FakeClock) -> None:
    cache = FetchSessionCache(2, EVICTION_MS)
    stale, used = create(cache, clock, 3), create(cache, clock, 3)
    clock.advance_ms(EVICTION_MS)
    cache.touch(cache.get(used), clock.monotonic_ms())  # type: ignore[arg-type]
    clock.advance_ms(1)
    assert create(cache, clock, 1) > 0  # smaller, unprivileged, but `stale` was unused for longer than 120 s
    assert cache.get(stale) is None and cache.get(used) is not None and cache.evictions == 1


def test_a_bigger_session_evicts_the_smallest_session_older_than_the_eviction_time(clock: FakeClock) -> None:
    cache = FetchSessionCache(3, EVICTION_MS)
    small, medium, big = create(cache, clock, 1), create(cache, clock, 2), create(cache, clock, 10)
    clock.advance_ms(EVICTION_MS + 1)
    for session_id in (small, medium, big):  # used again: not stale, and now evictable by size
        cache.touch(cache.get(session_id), clock.monotonic_ms())  # type: ignore[arg-type]
    assert create(cache, clock, 1) == INVALID_SESSION_ID  # equal size does not evict
    newcomer = create(cache, clock, 2)
    assert newcomer > 0 and cache.get(small) is None
    assert create(cache, clock, 2) == INVALID_SESSION_ID  # `medium` (2) is not smaller; the newcomer is too young
    assert create(cache, clock, 3) > 0 and cache.get(medium) is None
    assert cache.evictions == 2 and cache.total_partitions == 10 + 2 + 3


def test_evictability_is_decided_when_a_session_is_last_used(clock: FakeClock) -> None:
    """Kafka puts a session in its evictable sets in touch(): one used only before it was 120 s old is not
    evictable for a bigger session until it is used again (or becomes stale)."""
    cache = FetchSessionCache(1, EVICTION_MS)
    old = create(cache, clock, 1)
    clock.advance_ms(EVICTION_MS - 10)
    cache.touch(cache.get(old), clock.monotonic_ms())  # type: ignore[arg-type]
    clock.advance_ms(20)  # now older than 120 s, but last touched while younger
    assert create(cache, clock, 50) == INVALID_SESSION_ID
    cache.touch(cache.get(old), clock.monotonic_ms())  # type: ignore[arg-type]
    assert create(cache, clock, 50) > 0 and cache.get(old) is None


def test_a_privileged_session_evicts_a_fresh_unprivileged_one_but_not_a_fresh_privileged_one(clock: FakeClock) -> None:
    cache = FetchSessionCache(2, EVICTION_MS)
    consumer = create(cache, clock, 100)
    follower = create(cache, clock, 1, privileged=True)
    clock.advance_ms(1)
    assert create(cache, clock, 1000) == INVALID_SESSION_ID  # unprivileged newcomers wait for the age rule
    replacement = create(cache, clock, 1, privileged=True)
    assert replacement > 0 and cache.get(consumer) is None  # a follower beats any consumer, whatever its size
    assert create(cache, clock, 5, privileged=True) == INVALID_SESSION_ID  # fresh privileged sessions stay
    assert cache.get(follower) is not None and cache.get(replacement) is not None


def test_zero_slots_turn_sessions_off(clock: FakeClock) -> None:
    cache = FetchSessionCache(0, EVICTION_MS)
    assert create(cache, clock, 1) == INVALID_SESSION_ID and len(cache) == 0


# ------------------------------------------------------------------------------------------ FetchManager

def data(offset: int) -> PartitionData:
    return PartitionData(offset, 1000)


def read(high_watermark: int, records: bytes = b"", error: KafkaError | None = None) -> PartitionRead:
    if error is not None:
        return PartitionRead(error, b"")
    return PartitionRead(None, records, high_watermark, high_watermark, 0)


def new_session(manager: FetchManager, partitions: dict[TopicIdPartition, PartitionData],
                reads: dict[TopicIdPartition, PartitionRead]) -> int:
    context = manager.new_context(12, 0, 0, False, partitions, [], {})
    assert isinstance(context, FullFetchContext)
    response = context.update_and_generate_response(reads)
    assert [p for p, _r in response.partitions] == list(partitions)
    return response.session_id


def test_incremental_context_answers_only_changed_partitions_and_rotates_those_with_records(clock: FakeClock) -> None:
    manager = FetchManager(FetchSessionCache(10), clock.monotonic_ms)
    a, b, c = tp("t", 0), tp("t", 1), tp("t", 2)
    session_id = new_session(manager, {a: data(0), b: data(0), c: data(0)}, {a: read(5), b: read(0), c: read(0)})
    context = manager.new_context(12, session_id, 1, False, {a: data(5)}, [], {})
    assert isinstance(context, IncrementalFetchContext)
    assert context.partitions() == [(a, data(5)), (b, data(0)), (c, data(0))]
    response = context.update_and_generate_response({a: read(5), b: read(3, b"xyz"), c: read(0)})
    assert (response.error_code, response.session_id) == (ErrorCode.NONE, session_id)
    assert [p for p, _r in response.partitions] == [b]
    # b returned records: it moves to the end, so the next read favours the others
    context = manager.new_context(12, session_id, 2, False, {b: data(3)}, [], {})
    assert [p for p, _d in context.partitions()] == [a, c, b]
    error = OffsetOutOfRangeError("x")
    response = context.update_and_generate_response({a: read(5), c: read(0, error=error), b: read(3)})
    assert [p for p, _r in response.partitions] == [c]  # errors are always sent
    context = manager.new_context(12, session_id, 3, False, {c: data(0)}, [], {})
    response = context.update_and_generate_response({a: read(5), c: read(0), b: read(3)})
    assert [p for p, _r in response.partitions] == [c]  # sent again once the error is gone


def test_session_metadata_errors(clock: FakeClock) -> None:
    manager = FetchManager(FetchSessionCache(10), clock.monotonic_ms)
    a = tp("t", 0)
    session_id = new_session(manager, {a: data(0)}, {a: read(0)})
    wrong_epoch = manager.new_context(12, session_id, 2, False, {}, [], {})
    unknown = manager.new_context(12, session_id + 1, 1, False, {}, [], {})
    by_id = manager.new_context(13, session_id, 1, False, {}, [], {})
    assert [(type(c), c.error) for c in (wrong_epoch, unknown, by_id)] == [  # type: ignore[attr-defined]
        (SessionErrorContext, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
        (SessionErrorContext, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
        (SessionErrorContext, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR),
    ]
    assert wrong_epoch.update_and_generate_response({}).session_id == INVALID_SESSION_ID
    # the errors left the session as it was: epoch 1 still works
    assert isinstance(manager.new_context(12, session_id, 1, False, {}, [], {}), IncrementalFetchContext)
    assert manager.contexts == {"full": 1, "session_error": 3, "incremental": 1}


def test_a_duplicate_request_answered_after_a_newer_one_gets_invalid_epoch(clock: FakeClock) -> None:
    manager = FetchManager(FetchSessionCache(10), clock.monotonic_ms)
    a = tp("t", 0)
    session_id = new_session(manager, {a: data(0)}, {a: read(0)})
    slow = manager.new_context(12, session_id, 1, False, {}, [], {})  # e.g. still in its long poll
    fast = manager.new_context(12, session_id, 2, False, {}, [], {})
    assert fast.update_and_generate_response({a: read(1, b"r")}).error_code == ErrorCode.NONE
    response = slow.update_and_generate_response({a: read(1, b"r")})
    assert (response.error_code, response.session_id, response.partitions) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id, [])


def test_full_requests_close_the_session_they_name(clock: FakeClock) -> None:
    manager = FetchManager(FetchSessionCache(10), clock.monotonic_ms)
    a = tp("t", 0)
    first = new_session(manager, {a: data(0)}, {a: read(0)})
    second = manager.new_context(12, first, 0, False, {a: data(0)}, [], {})  # (id, 0): close and open anew
    assert isinstance(second, FullFetchContext) and manager.cache.get(first) is None
    renewed = second.update_and_generate_response({a: read(0)}).session_id
    assert renewed not in (first, INVALID_SESSION_ID)
    closing = manager.new_context(12, renewed, -1, False, {}, [], {})  # (id, -1): close, no new session
    assert isinstance(closing, SessionlessFetchContext) and len(manager.cache) == 0


def test_forgetting_every_partition_closes_the_session(clock: FakeClock) -> None:
    manager = FetchManager(FetchSessionCache(10), clock.monotonic_ms)
    a, b = tp("t", 0), tp("u", 0)
    session_id = new_session(manager, {a: data(0), b: data(0)}, {a: read(0), b: read(0)})
    context = manager.new_context(12, session_id, 1, False, {}, [b], {})
    assert [p for p, _d in context.partitions()] == [a] and manager.cache.total_partitions == 1
    context = manager.new_context(12, session_id, 2, False, {}, [a], {})
    assert isinstance(context, SessionlessFetchContext) and len(manager.cache) == 0
    assert manager.cache.total_partitions == 0


def test_topic_id_sessions_resolve_names_of_ids_that_appear_later(clock: FakeClock) -> None:
    manager = FetchManager(FetchSessionCache(10), clock.monotonic_ms)
    topic_id = uuid.uuid4()
    unknown = TopicIdPartition(topic_id, None, 0)
    context = manager.new_context(13, 0, 0, False, {unknown: data(0)}, [], {})
    session_id = context.update_and_generate_response({unknown: read(0, error=UnknownTopicIdError("x"))}).session_id
    context = manager.new_context(13, session_id, 1, False, {}, [], {topic_id: "late"})
    assert context.partitions() == [(TopicIdPartition(topic_id, "late", 0), data(0))]
    assert context.partitions()[0][0].topic == "late"

"""Share sessions as Kafka 4.3.1's SharePartitionManager.newContext/acknowledgeSessionUpdate and ShareSessionCache
keep them (tests named after SharePartitionManagerTest's)."""

from __future__ import annotations

import pytest

from minikafka.broker.share.share_session_cache import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SHARE_SESSION_EPOCH,
    SHARE_SESSION_LIMIT_REACHED,
    SHARE_SESSION_NOT_FOUND,
    ContextKind,
    ShareSessionCache,
    ShareSessionError,
    next_epoch,
)
from minikafka.broker.share.share_types import INVALID_REQUEST

FOO, BAR = b"\x01" * 16, b"\x02" * 16
TP0, TP1, BAR1 = (FOO, 0), (FOO, 1), (BAR, 1)


def open_session(cache: ShareSessionCache, member: str = "m1", partitions: tuple = (TP0, TP1), connection: str = "c1"):  # type: ignore[no-untyped-def]
    return cache.new_context(
        "grp", member, INITIAL_EPOCH, partitions, (), acknowledgements_present=False, connection_id=connection
    )


def code(call) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(ShareSessionError) as caught:
        call()
    return caught.value.error_code


def test_testNewContextReturnsFinalContextWithoutRequestData() -> None:
    cache = ShareSessionCache(10)
    assert open_session(cache).kind is ContextKind.NEW
    final = cache.new_context("grp", "m1", FINAL_EPOCH, (), (), acknowledgements_present=True, connection_id="c1")
    assert final.kind is ContextKind.FINAL
    assert cache.release_session("grp", "m1") == [TP0, TP1]
    assert len(cache) == 0


def test_testNewContextThrowsErrorWhenShareSessionNotFoundOnFinalEpoch() -> None:
    cache = ShareSessionCache(10)
    assert (
        code(
            lambda: cache.new_context(
                "grp", "m1", FINAL_EPOCH, (), (), acknowledgements_present=False, connection_id="c"
            )
        )
        == SHARE_SESSION_NOT_FOUND
    )


def test_testNewContextThrowsErrorWhenAcknowledgeDataPresentOnInitialEpoch() -> None:
    cache = ShareSessionCache(10)
    assert (
        code(
            lambda: cache.new_context(
                "grp", "m1", INITIAL_EPOCH, (TP0,), (), acknowledgements_present=True, connection_id="c"
            )
        )
        == INVALID_REQUEST
    )


def test_testNewContextThrowsErrorWhenShareSessionCacheIsFullOnInitialEpoch() -> None:
    cache = ShareSessionCache(2)
    open_session(cache, "m1")
    open_session(cache, "m2", connection="c2")
    assert code(lambda: open_session(cache, "m3", connection="c3")) == SHARE_SESSION_LIMIT_REACHED


def test_testNewContextExistingSessionNewRequestWithInitialEpoch() -> None:
    cache = ShareSessionCache(1)
    open_session(cache)
    context = open_session(cache, partitions=(BAR1,))  # replaces the member's session, within the limit
    assert context.partitions == (BAR1,)
    assert cache.get("grp", "m1").epoch == 1  # type: ignore[union-attr]


def test_testSubsequentShareSession_and_testShareSessionUpdateTopicIdsBrokerSide() -> None:
    cache = ShareSessionCache(10)
    open_session(cache)
    context = cache.new_context("grp", "m1", 1, (BAR1, TP0), (TP1,), acknowledgements_present=True, connection_id="c1")
    assert context.kind is ContextKind.INCREMENTAL
    assert (context.partitions, context.added, context.removed) == ((TP0, BAR1), (BAR1,), (TP1,))
    assert cache.get("grp", "m1").epoch == 2  # type: ignore[union-attr]
    assert cache.total_partitions() == 2
    # the same epoch again is stale
    assert (
        code(lambda: cache.new_context("grp", "m1", 1, (), (), acknowledgements_present=False, connection_id="c1"))
        == INVALID_SHARE_SESSION_EPOCH
    )
    assert (
        code(lambda: cache.new_context("grp", "m2", 1, (), (), acknowledgements_present=False, connection_id="c1"))
        == SHARE_SESSION_NOT_FOUND
    )


def test_acknowledge_session_update() -> None:
    # testAcknowledgeSessionUpdateThrowsOnInitialEpoch, ...ThrowsWhenShareSessionNotFound,
    # ...ThrowsInvalidShareSessionEpochException, ...SuccessOnSubsequentEpoch, ...SuccessOnFinalEpoch
    cache = ShareSessionCache(10)
    assert code(lambda: cache.acknowledge_session_update("grp", "m1", INITIAL_EPOCH)) == INVALID_SHARE_SESSION_EPOCH
    assert code(lambda: cache.acknowledge_session_update("grp", "m1", 1)) == SHARE_SESSION_NOT_FOUND
    open_session(cache)
    assert code(lambda: cache.acknowledge_session_update("grp", "m1", 5)) == INVALID_SHARE_SESSION_EPOCH
    cache.acknowledge_session_update("grp", "m1", 1)
    assert cache.get("grp", "m1").epoch == 2  # type: ignore[union-attr]
    cache.acknowledge_session_update("grp", "m1", FINAL_EPOCH)
    assert cache.get("grp", "m1").epoch == 2  # type: ignore[union-attr]


def test_testReleaseSessionWithIncorrectMemberId() -> None:
    cache = ShareSessionCache(10)
    open_session(cache)
    assert code(lambda: cache.release_session("grp", "other")) == SHARE_SESSION_NOT_FOUND
    assert code(lambda: cache.release_session("other-grp", "m1")) == SHARE_SESSION_NOT_FOUND


def test_a_closed_connection_ends_its_session() -> None:
    cache = ShareSessionCache(10)
    open_session(cache, "m1", connection="c1")
    open_session(cache, "m2", connection="c2")
    ended = cache.on_disconnect("c1")
    assert [s.member_id for s in ended] == ["m1"]
    assert cache.get("grp", "m1") is None and cache.get("grp", "m2") is not None
    assert cache.on_disconnect("c1") == []


def test_every_session_opened_on_a_connection_ends_with_it() -> None:
    """Two members' sessions on one connection: closing it ends both, and frees both slots of
    group.share.max.share.sessions (a second session used to orphan the first until a restart)."""
    cache = ShareSessionCache(2)
    open_session(cache, "m1", connection="c1")
    open_session(cache, "m2", connection="c1")
    assert sorted(s.member_id for s in cache.on_disconnect("c1")) == ["m1", "m2"]
    assert len(cache) == 0
    open_session(cache, "m3", connection="c2")
    open_session(cache, "m4", connection="c2")


def test_an_idle_session_is_evicted_when_the_cache_is_full() -> None:
    """At the limit, the least recently used session makes room once idle for the eviction time; a used one
    does not."""
    now_ms = [0]
    cache = ShareSessionCache(2, eviction_ms=120_000, clock_ms=lambda: now_ms[0])
    open_session(cache, "m1", connection="c1")
    open_session(cache, "m2", connection="c2")
    now_ms[0] = 100_000
    cache.new_context("grp", "m1", 1, (), (), acknowledgements_present=False, connection_id="c1")  # m1 is used
    assert code(lambda: open_session(cache, "m3", connection="c3")) == SHARE_SESSION_LIMIT_REACHED
    now_ms[0] = 120_000
    context = open_session(cache, "m3", connection="c3")
    assert [s.member_id for s in context.evicted] == ["m2"]
    assert cache.get("grp", "m2") is None and cache.get("grp", "m1") is not None
    assert cache.on_disconnect("c2") == []


def test_next_epoch_wraps() -> None:
    assert [next_epoch(e) for e in (0, 1, 2**31 - 1, -1)] == [1, 2, 1, -1]

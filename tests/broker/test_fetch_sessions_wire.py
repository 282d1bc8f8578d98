"""Incremental fetch sessions (KIP-227) and Fetch by topic id (v13+) over a real socket, with exact versions."""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.protocol.records import iter_batches
from tests.broker.test_fetch_wire import batch_of, create_topic, produce
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

TopicRef = str | uuid.UUID
Wanted = Sequence[tuple[TopicRef, int, int]]  # (topic name or id, partition, fetch offset)

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
UNKNOWN_TOPIC_ID = 100
INCONSISTENT_TOPIC_ID = 103
FETCH_SESSION_TOPIC_ID_ERROR = 106


def fetch(client: WireClient, session_id: int, epoch: int, partitions: Wanted = (),
          forgotten: Sequence[tuple[TopicRef, list[int]]] = (), *, version: int = 12, max_wait_ms: int = 0,
          replica_id: int = -1) -> Any:
    topic_cls = FetchRequest.FetchTopic
    by_topic: dict[TopicRef, list[Any]] = {}
    for topic, partition, offset in partitions:
        by_topic.setdefault(topic, []).append(topic_cls.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=1_000_000))

    def naming(topic: TopicRef) -> dict[str, Any]:
        return {"topic_id": topic} if version >= 13 else {"topic": topic}

    request = FetchRequest[version](
        replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=1 if max_wait_ms else 0, max_bytes=50_000_000,
        isolation_level=0, session_id=session_id, session_epoch=epoch,
        topics=[topic_cls(partitions=parts, **naming(topic)) for topic, parts in by_topic.items()],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(partitions=parts, **naming(topic))
                               for topic, parts in forgotten],
        rack_id="",
    )
    return client.request(request)


def answered(response: Any) -> dict[tuple[Any, int], Any]:
    """{(topic name or id, partition): partition data} of a response."""
    return {(t.topic_id if response.API_VERSION >= 13 else t.topic, p.partition_index): p
            for t in response.responses for p in t.partitions}


def record_count(partition: Any) -> int:
    return sum(batch.records_count for batch in iter_batches(partition.records or b""))


def topic_ids(client: WireClient, *names: str) -> list[uuid.UUID]:
    response = client.request(MetadataRequest[12](
        topics=[MetadataRequest.MetadataRequestTopic(name=name, topic_id=None) for name in names],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    ids = {topic.name: topic.topic_id for topic in response.topics}
    return [ids[name] for name in names]


def scrape(broker: BrokerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as response:
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def cache_gauges(broker: BrokerProcess) -> tuple[float, float, float]:
    """(sessions, partitions cached, evictions) from /metrics."""
    samples = scrape(broker)
    prefix = "kafka_server_fetchsessioncache_"
    return (samples[(prefix + "numincrementalfetchsessions", ())],
            samples[(prefix + "numincrementalfetchpartitionscached", ())],
            samples[(prefix + "incrementalfetchsessionevictions_total", ())])


def test_full_fetch_creates_a_session_and_incremental_fetches_return_only_changes(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "s", partitions=3)
        produce(client, "s", 0, batch_of(4))
        full = fetch(client, 0, 0, [("s", 0, 0), ("s", 1, 0), ("s", 2, 0)])
        assert full.error_code == 0 and full.session_id != 0
        assert set(answered(full)) == {("s", 0), ("s", 1), ("s", 2)}
        assert record_count(answered(full)[("s", 0)]) == 4
        session = full.session_id
        assert cache_gauges(broker)[:2] == (1, 3)

        # The consumer moved p0 to offset 4: nothing new anywhere, so nothing is answered.
        quiet = fetch(client, session, 1, [("s", 0, 4)])
        assert (quiet.error_code, quiet.session_id, answered(quiet)) == (0, session, {})

        # New data on p1 only: the session fetches p1 from its cached offset 0 and answers only p1.
        produce(client, "s", 1, batch_of(2))
        changed = fetch(client, session, 2)
        assert set(answered(changed)) == {("s", 1)}
        p1 = answered(changed)[("s", 1)]
        assert (p1.high_watermark, record_count(p1)) == (2, 2)

        # A long poll in the session is woken by an append to a cached partition that the request did not list.
        produce(client, "s", 2, batch_of(1))
        woken = fetch(client, session, 3, [("s", 1, 2)], max_wait_ms=5_000)
        assert set(answered(woken)) == {("s", 2)} and record_count(answered(woken)[("s", 2)]) == 1
        assert fetch(client, session, 4, [("s", 2, 1)]).responses == []

    samples = scrape(broker)
    contexts = {labels[0][1]: value for (name, labels), value in samples.items()
                if name == "minikafka_fetch_context_requests_total"}
    assert contexts == {"full": 1, "incremental": 4, "sessionless": 0, "session_error": 0}


def test_session_errors_wrong_epoch_unknown_id_and_a_version_that_does_not_match(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "e")
        session = fetch(client, 0, 0, [("e", 0, 0)]).session_id
        assert session != 0
        for session_id, epoch, version, error in (
            (session, 5, 12, INVALID_FETCH_SESSION_EPOCH),
            (session, 2, 12, INVALID_FETCH_SESSION_EPOCH),  # epoch 1 is the one expected
            (session + 1 if session < 2**31 - 2 else 1, 1, 12, FETCH_SESSION_ID_NOT_FOUND),
            (session, 1, 13, FETCH_SESSION_TOPIC_ID_ERROR),  # a session by names cannot go on by topic ids
        ):
            response = fetch(client, session_id, epoch, version=version)
            assert (response.error_code, response.session_id, response.responses) == (error, 0, [])
        ok = fetch(client, session, 1)
        assert (ok.error_code, ok.session_id) == (0, session)  # the errors did not touch the session
        replay = fetch(client, session, 1)
        assert replay.error_code == INVALID_FETCH_SESSION_EPOCH


def test_forgotten_partitions_leave_the_session_and_forgetting_all_closes_it(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "f", partitions=2)
        create_topic(client, "g")
        session = fetch(client, 0, 0, [("f", 0, 0), ("f", 1, 0), ("g", 0, 0)]).session_id
        assert fetch(client, session, 1, forgotten=[("f", [1])]).error_code == 0
        assert cache_gauges(broker)[:2] == (1, 2)
        produce(client, "f", 1, batch_of(3))
        produce(client, "g", 0, batch_of(1))
        response = fetch(client, session, 2)
        assert set(answered(response)) == {("g", 0)}  # f-1 is no longer fetched
        # re-adding a partition and forgetting another in one request
        response = fetch(client, session, 3, [("f", 1, 1)], forgotten=[("g", [0])])
        assert set(answered(response)) == {("f", 1)} and record_count(answered(response)[("f", 1)]) == 3
        last = fetch(client, session, 4, forgotten=[("f", [0, 1])])
        assert (last.error_code, last.session_id) == (0, 0)  # no partitions left: closed, answered sessionless
        assert cache_gauges(broker)[:2] == (0, 0)
        assert fetch(client, session, 5).error_code == FETCH_SESSION_ID_NOT_FOUND


def test_closing_a_session_with_the_final_epoch_and_replacing_it_with_epoch_zero(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "c")
        produce(client, "c", 0, batch_of(2))
        first = fetch(client, 0, 0, [("c", 0, 0)]).session_id
        renewed = fetch(client, first, 0, [("c", 0, 0)])  # (id, 0): close `first`, open a new session
        assert renewed.session_id not in (0, first) and record_count(answered(renewed)[("c", 0)]) == 2
        assert fetch(client, first, 1).error_code == FETCH_SESSION_ID_NOT_FOUND
        closing = fetch(client, renewed.session_id, -1, [("c", 0, 0)])  # (id, -1): close, answer sessionless
        assert (closing.error_code, closing.session_id) == (0, 0)
        assert record_count(answered(closing)[("c", 0)]) == 2
        assert fetch(client, renewed.session_id, 1).error_code == FETCH_SESSION_ID_NOT_FOUND
        assert fetch(client, 0, -1, [("c", 0, 0)]).session_id == 0  # sessionless as before
        assert cache_gauges(broker)[0] == 0


def test_fetch_by_topic_id_with_an_unknown_id(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "ids", partitions=2)
        produce(client, "ids", 1, batch_of(3))
        (known,) = topic_ids(client, "ids")
        unknown = uuid.uuid4()
        for version in (13, 15, 16, 17, 18):
            full = fetch(client, 0, 0, [(known, 0, 0), (known, 1, 0), (unknown, 0, 0), (known, 7, 0)],
                         version=version)
            parts = answered(full)
            assert set(parts) == {(known, 0), (known, 1), (unknown, 0), (known, 7)}
            assert parts[(unknown, 0)].error_code == UNKNOWN_TOPIC_ID
            assert parts[(known, 7)].error_code == 3  # the id is known, the partition is not
            assert record_count(parts[(known, 1)]) == 3 and parts[(known, 1)].high_watermark == 3
            assert full.session_id != 0
            again = fetch(client, full.session_id, 1, [(known, 1, 3)], forgotten=[(known, [7])], version=version)
            # errors are answered every time; the known partitions have nothing new
            assert set(answered(again)) == {(unknown, 0)} and again.error_code == 0
            assert fetch(client, full.session_id, 2, version=12).error_code == FETCH_SESSION_TOPIC_ID_ERROR
            assert fetch(client, full.session_id, -1, version=version).session_id == 0


def test_a_topic_recreated_under_a_new_id_is_inconsistent_in_the_session_and_unknown_outside(
        broker: BrokerProcess) -> None:
    """As Kafka: the session remembers the old id's topic name, reads the new topic's log and finds another id
    (INCONSISTENT_TOPIC_ID); a new full fetch by the old id cannot resolve it at all (UNKNOWN_TOPIC_ID)."""
    from kafka.protocol.admin.topics import DeleteTopicsRequest

    with WireClient(broker.bootstrap) as client:
        create_topic(client, "re")
        (old_id,) = topic_ids(client, "re")
        session = fetch(client, 0, 0, [(old_id, 0, 0)], version=17).session_id
        deleted = client.request(DeleteTopicsRequest[6](
            topics=[DeleteTopicsRequest.DeleteTopicState(name="re", topic_id=uuid.UUID(int=0))], timeout_ms=10_000))
        assert deleted.responses[0].error_code == 0
        create_topic(client, "re")
        (new_id,) = topic_ids(client, "re")
        assert new_id != old_id
        response = fetch(client, session, 1, version=17)
        assert {key: p.error_code for key, p in answered(response).items()} == {(old_id, 0): INCONSISTENT_TOPIC_ID}
        response = fetch(client, 0, -1, [(old_id, 0, 0), (new_id, 0, 0)], version=17)
        errors = {key: p.error_code for key, p in answered(response).items()}
        assert errors == {(old_id, 0): UNKNOWN_TOPIC_ID, (new_id, 0): 0}


def _keep_alive(client: WireClient, sessions: dict[int, int]) -> None:
    """One incremental fetch in each session (touching it); advances the epochs in `sessions`."""
    for session_id, epoch in sessions.items():
        assert fetch(client, session_id, epoch).error_code == 0
        sessions[session_id] = epoch + 1


def _wait(seconds: float, keep: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if keep is not None:
            keep()
        time.sleep(0.1)


def test_eviction_follows_kafkas_rules_when_the_cache_is_full(broker_factory: Any) -> None:
    """Two slots and a 1.5 s eviction time: a fresh session is never evicted for another consumer's; one older
    than that (when last used) is evicted for a strictly bigger session, the smallest first; and a session
    unused for that long is evicted for anyone."""
    eviction_ms = 1_500
    broker = broker_factory({"max.incremental.fetch.session.cache.slots": "2",
                             "minikafka.incremental.fetch.session.eviction.ms": str(eviction_ms)})
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "ev", partitions=5)

        def full(count: int) -> int:
            session_id: int = fetch(client, 0, 0, [("ev", p, 0) for p in range(count)]).session_id
            return session_id

        a, b = full(1), full(2)
        assert a and b
        assert full(3) == 0  # the cache is full of fresh sessions: answered sessionless
        assert cache_gauges(broker) == (2, 3, 0)

        # Used again once older than the eviction time, a and b become evictable for bigger sessions.
        epochs = {a: 1, b: 1}
        _wait(eviction_ms / 1000 + 0.3, lambda: _keep_alive(client, epochs))
        assert full(1) == 0  # equal size does not evict a (1 partition)
        c = full(3)
        assert c and cache_gauges(broker) == (2, 5, 1)
        assert fetch(client, a, epochs[a]).error_code == FETCH_SESSION_ID_NOT_FOUND  # the smallest went
        assert full(2) == 0  # b (2 partitions) is not smaller; c is too young to be evicted
        d = full(4)
        assert d and cache_gauges(broker) == (2, 7, 2)
        assert fetch(client, b, epochs[b]).error_code == FETCH_SESSION_ID_NOT_FOUND
        assert full(5) == 0  # c and d are fresh

        _wait(eviction_ms / 1000 + 0.3)  # nobody fetches: c, then d, go stale
        e = full(1)
        assert e and cache_gauges(broker) == (2, 5, 3)
        assert fetch(client, c, 1).error_code == FETCH_SESSION_ID_NOT_FOUND  # the least recently used went
        assert fetch(client, d, 1).error_code == 0


def test_a_follower_session_evicts_a_consumer_session_at_once(broker_factory: Any) -> None:
    """A full fetch with a replica id (Kafka's follower fetch) creates a privileged session, which may evict any
    consumer session however fresh; consumers cannot evict a fresh privileged session."""
    broker = broker_factory({"max.incremental.fetch.session.cache.slots": "2"})
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "st", partitions=3)
        big = fetch(client, 0, 0, [("st", 0, 0), ("st", 1, 0), ("st", 2, 0)]).session_id
        small = fetch(client, 0, 0, [("st", 0, 0), ("st", 1, 0)]).session_id
        follower = fetch(client, 0, 0, [("st", 0, 0)], replica_id=1).session_id
        assert big and small and follower and cache_gauges(broker) == (2, 4, 1)
        assert fetch(client, small, 1).error_code == FETCH_SESSION_ID_NOT_FOUND  # the least valuable went
        assert fetch(client, big, 1).error_code == 0
        assert fetch(client, 0, 0, [("st", 0, 0), ("st", 1, 0), ("st", 2, 0)]).session_id == 0
        second_follower = fetch(client, 0, 0, [("st", 0, 0)], replica_id=2).session_id
        assert second_follower and cache_gauges(broker) == (2, 2, 2)  # big, fresh as it is, made room
        assert fetch(client, big, 2).error_code == FETCH_SESSION_ID_NOT_FOUND
        assert fetch(client, 0, 0, [("st", 0, 0), ("st", 1, 0)], replica_id=3).session_id == 0  # fresh followers stay

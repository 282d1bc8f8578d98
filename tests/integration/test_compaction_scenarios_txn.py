"""Spec §5 scenario S29 over the wire: a read_committed view is stable across cleaning.

Real transactional producers (confluent-kafka) and consumers against a broker process; the aborted-transaction
list of the FetchResponse is read with a raw Fetch v12 at isolation level read_committed. Cleaning is held off
with `min.cleanable.dirty.ratio=1.0` (S4) until the "before" view has been checked, then enabled.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka.protocol.consumer.fetch import FetchRequest

from minikafka.protocol.records import RecordBatch, iter_batches
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import checkpoint_of, produce, wait_for
from tests.integration.test_compaction_scenarios_b import CLEAN_NOW, FAST_CLEANER, HELD, alter_topic
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(180)

BrokerFactory = Callable[..., BrokerProcess]
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def transactional_producer(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"s29-{uuid.uuid4().hex[:8]}",
                         "linger.ms": 0})
    producer.init_transactions(30)
    return producer


def transaction(producer: Producer, topic: str, pairs: list[tuple[bytes, bytes]], *, commit: bool) -> None:
    producer.begin_transaction()
    for key, value in pairs:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def consume(bootstrap: str, topic: str, isolation_level: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record a confluent-kafka consumer with this isolation level returns from 0."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"s29-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": isolation_level,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[tuple[bytes | None, bytes | None]] = []
        while True:
            message = consumer.poll(10)
            assert message is not None, f"no end of partition within 10 s; got {got}"
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return got
                raise AssertionError(f"consumer error: {error}")
            got.append((message.key(), message.value()))
    finally:
        consumer.close()


def raw_fetch(bootstrap: str, topic: str, isolation_level: int) -> Any:
    """Partition 0 of a Fetch v12 from offset 0 (max_wait 0): records, aborted_transactions, LSO."""
    partition = FetchRequest[12].FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
        partition_max_bytes=1 << 20)
    request = FetchRequest[12](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation_level,
        session_id=0, session_epoch=-1, topics=[FetchRequest[12].FetchTopic(topic=topic, partitions=[partition])],
        forgotten_topics_data=[], rack_id="")
    with WireClient(bootstrap) as client:
        response = client.request(request).responses[0].partitions[0]
    assert response.error_code == 0
    return response


def aborted(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    transactions = raw_fetch(bootstrap, topic, READ_COMMITTED).aborted_transactions or []
    return [(t.producer_id, t.first_offset) for t in transactions]


def batches(bootstrap: str, topic: str) -> list[RecordBatch]:
    return list(iter_batches(raw_fetch(bootstrap, topic, READ_UNCOMMITTED).records or b""))


def clean_past(broker: BrokerProcess, topic: str, offset: int) -> None:
    wait_for(lambda: (checkpoint_of(broker.data_dir, topic) or 0) >= offset, 30,
             f"cleaner checkpoint of {topic} at {offset}")


def test_S29_read_committed_view_is_stable_across_cleaning(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic = broker.bootstrap, "s29"
    create_topic(bootstrap, topic, 1, config=HELD)
    producer = transactional_producer(bootstrap)
    transaction(producer, topic, [(b"x", b"1")], commit=False)  # x@0, ABORT@1
    transaction(producer, topic, [(b"y", b"1")], commit=True)  # y@2, COMMIT@3

    assert consume(bootstrap, topic, "read_committed") == [(b"y", b"1")]
    assert consume(bootstrap, topic, "read_uncommitted") == [(b"x", b"1"), (b"y", b"1")]
    before = aborted(bootstrap, topic)
    assert [first for _pid, first in before] == [0]

    alter_topic(bootstrap, topic, CLEAN_NOW)
    clean_past(broker, topic, 4)  # the round that removes x@0: it read the aborted data
    assert consume(bootstrap, topic, "read_committed") == [(b"y", b"1")]
    assert consume(bootstrap, topic, "read_uncommitted") == [(b"y", b"1")]
    assert aborted(bootstrap, topic) == before
    assert [(b.base_offset, b.is_control) for b in batches(bootstrap, topic)] == [(1, True), (2, False), (3, True)]

    produce(bootstrap, topic, [(b"z", b"1")])  # new dirty data triggers the next round (z@4)
    clean_past(broker, topic, 5)
    assert aborted(bootstrap, topic) == []
    assert consume(bootstrap, topic, "read_committed") == [(b"y", b"1"), (b"z", b"1")]
    assert consume(bootstrap, topic, "read_uncommitted") == [(b"y", b"1"), (b"z", b"1")]


def test_S29_aborted_last_batch_of_a_producer_survives_as_an_empty_header(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic = broker.bootstrap, "s29-empty-header"
    create_topic(bootstrap, topic, 1, config=HELD)
    producer = transactional_producer(bootstrap)
    transaction(producer, topic, [(b"a", b"1")], commit=False)  # a@0 (this producer's last data), ABORT@1
    entry = aborted(bootstrap, topic)
    assert [first for _pid, first in entry] == [0]

    alter_topic(bootstrap, topic, CLEAN_NOW)
    for round_, offset in enumerate((2, 3, 4)):  # n@2, n@3, n@4: one more round each
        produce(bootstrap, topic, [(b"n", b"%d" % round_)])
        clean_past(broker, topic, offset + 1)
        kept = batches(bootstrap, topic)
        assert [(b.base_offset, b.records_count, b.is_control) for b in kept[:2]] == [(0, 0, False), (1, 1, True)]
        assert aborted(bootstrap, topic) == entry
        assert consume(bootstrap, topic, "read_committed") == [(b"n", b"%d" % round_)]


def test_open_transaction_bounds_cleaning_at_the_last_stable_offset(broker_factory: BrokerFactory) -> None:
    """Spec §2.3: the first uncleanable offset is at most the LSO, so an open transaction's data and everything
    after it wait for the commit, while the stable prefix is cleaned."""
    broker = broker_factory(FAST_CLEANER)
    bootstrap, topic = broker.bootstrap, "lso-bound"
    create_topic(bootstrap, topic, 1, config={**HELD, **CLEAN_NOW})
    produce(bootstrap, topic, [(b"k", b"%d" % i) for i in range(10)])  # @0-9
    clean_past(broker, topic, 10)  # the idle roll closes the segment, the stable prefix is cleaned
    producer = transactional_producer(bootstrap)
    producer.begin_transaction()
    producer.produce(topic, key=b"t", value=b"open")  # @10, uncommitted
    assert producer.flush(30) == 0
    produce(bootstrap, topic, [(b"k", b"%d" % i) for i in range(10, 20)])  # @11-20: superseding k, above the LSO
    assert raw_fetch(bootstrap, topic, READ_COMMITTED).last_stable_offset == 10
    assert consume(bootstrap, topic, "read_committed") == [(b"k", b"9")]
    # A later topic's round proves the cleaner ran after the roll of 11-20, without passing the LSO here.
    create_topic(bootstrap, "lso-witness", 1, config={**HELD, **CLEAN_NOW})
    produce(bootstrap, "lso-witness", [(b"w", b"1"), (b"w", b"2")])
    clean_past(broker, "lso-witness", 2)
    assert checkpoint_of(broker.data_dir, topic) == 10
    assert [r.value for b in batches(bootstrap, topic) for r in b.records() if r.key == b"k"][:1] == [b"9"]

    producer.commit_transaction(30)
    clean_past(broker, topic, 21)
    assert consume(bootstrap, topic, "read_committed") == [(b"t", b"open"), (b"k", b"19")]

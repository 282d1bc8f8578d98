"""Coordinators that move between three brokers, met by confluent-kafka (librdkafka): a consumer group whose
coordinator's broker is stopped finds the new coordinator (the next leader of its `__consumer_offsets` partition,
offsets.topic.replication.factor=3), rejoins there and loses no committed offset; a transactional producer whose
transaction coordinator is moved (`move_coordinator`) in the middle of its transactions still commits each record
exactly once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from minikafka.testing import MiniKafka
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(300)
PARTITIONS = 3
RECORDS = 300


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"group.initial.rebalance.delay.ms": 0, "offsets.topic.replication.factor": 3,
                    "offsets.topic.num.partitions": 6, "transaction.state.log.num.partitions": 6}, brokers=3) as broker:
        yield broker


def create_topic(kafka: MiniKafka, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(10)


def coordinator_of(kafka: MiniKafka, key: str, key_type: int, avoid: int | None = None) -> int:
    """FindCoordinator through a running broker (not `avoid`)."""
    servers = kafka.bootstrap_servers.split(",")
    via = next(server for index, server in enumerate(servers, start=1) if index != avoid)
    with WireClient(via) as client:
        found = client.request_until_ready(FindCoordinatorRequest[4](key_type=key_type, coordinator_keys=[key]))
    assert found.coordinators[0].error_code == 0, found
    return int(found.coordinators[0].node_id)


def consumer(kafka: MiniKafka, group: str, **extra: object) -> Consumer:
    return Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 10_000, **extra})


def test_a_group_rejoins_on_the_new_coordinator_and_keeps_its_committed_offsets(kafka: MiniKafka) -> None:
    topic = f"failover-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    create_topic(kafka, topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
    for n in range(RECORDS):
        producer.produce(topic, value=str(n).encode(), partition=n % PARTITIONS)
    assert producer.flush(30) == 0

    first = consumer(kafka, group)
    first.subscribe([topic])
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while len(seen) < RECORDS // 2 and time.monotonic() < deadline:
        message = first.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(int(message.value()))
            first.commit(message, asynchronous=False)
    assert len(seen) >= RECORDS // 2
    committed_before = {tp.partition: tp.offset for tp in first.committed(
        [TopicPartition(topic, partition) for partition in range(PARTITIONS)], timeout=10)}

    stopped = coordinator_of(kafka, group, key_type=0)
    kafka.faults.stop_broker(stopped)
    try:
        moved_to = coordinator_of(kafka, group, key_type=0, avoid=stopped)
        assert moved_to != stopped
        # the offsets committed on the old coordinator are read back from the new one
        after_move = {tp.partition: tp.offset for tp in first.committed(
            [TopicPartition(topic, partition) for partition in range(PARTITIONS)], timeout=30)}
        assert after_move == committed_before
        second = consumer(kafka, group)  # a new member: the group rebalances on the new coordinator
        second.subscribe([topic])
        deadline = time.monotonic() + 90
        while len(seen) < RECORDS and time.monotonic() < deadline:
            for member in (first, second):
                message = member.poll(0.2)
                if message is not None and message.error() is None:
                    seen.append(int(message.value()))
                    member.commit(message, asynchronous=False)
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})  # alive until the result is in
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert described.coordinator.id == moved_to
        assert len(described.members) == 2
        first.close()
        second.close()
    finally:
        kafka.faults.start_broker(stopped)
    assert sorted(seen) == list(range(RECORDS))  # every record once: no committed offset was lost or rewound
    final = consumer(kafka, group)
    committed = final.committed([TopicPartition(topic, partition) for partition in range(PARTITIONS)], timeout=10)
    assert {tp.partition: tp.offset for tp in committed} == {partition: RECORDS // PARTITIONS
                                                              for partition in range(PARTITIONS)}
    final.close()


def test_move_coordinator_during_transactions_commits_each_record_exactly_once(kafka: MiniKafka) -> None:
    topic = f"txn-moves-{uuid.uuid4().hex[:8]}"
    transactional_id = f"tx-{topic}"
    create_topic(kafka, topic, 1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    coordinators = [coordinator_of(kafka, transactional_id, key_type=1)]
    per_transaction = 50
    for transaction in range(6):
        producer.begin_transaction()
        for n in range(per_transaction):
            producer.produce(topic, value=f"{transaction}:{n}".encode(), partition=0)
            if n == per_transaction // 2 and transaction in (1, 3, 4):  # records of this transaction in flight
                producer.flush(10)
                target = next(broker for broker in (1, 2, 3) if broker != coordinators[-1])
                kafka.faults.move_coordinator("transaction", transactional_id, target)
                coordinators.append(target)
        producer.commit_transaction(60)
    assert coordinator_of(kafka, transactional_id, key_type=1) == coordinators[-1]
    assert len(set(coordinators)) > 1

    reader = consumer(kafka, f"reader-{topic}", **{"isolation.level": "read_committed"})
    reader.assign([TopicPartition(topic, 0, 0)])
    values: list[str] = []
    deadline = time.monotonic() + 60
    while len(values) < 6 * per_transaction and time.monotonic() < deadline:
        message = reader.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
    time.sleep(1)  # a duplicate would arrive here
    while (message := reader.poll(0.2)) is not None:
        if message.error() is None:
            values.append(message.value().decode())
    reader.close()
    assert values == [f"{transaction}:{n}" for transaction in range(6) for n in range(per_transaction)]

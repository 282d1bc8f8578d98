"""Three brokers in one process met by confluent-kafka (librdkafka): an idempotent acks=all producer keeps
exactly-once, in-order delivery while leaders move (`elect_leader`) and while the leader's broker is stopped and
started; Metadata after a stop shows the new leaders and ISRs; acks=all gets NOT_ENOUGH_REPLICAS once the ISR is
below min.insync.replicas."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(300)
PARTITIONS = 3
PER_PHASE = 400


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"group.initial.rebalance.delay.ms": 0}, brokers=3) as broker:
        yield broker


def create_topic(kafka: MiniKafka, topic: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})  # alive until the result is in
    admin.create_topics([topic])[topic.topic].result(10)


def partitions(kafka: MiniKafka, topic: str) -> dict[int, Any]:
    """partition -> confluent-kafka's PartitionMetadata (leader, replicas, isrs), from a fresh Metadata request."""
    metadata = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(topic, timeout=10)
    return dict(metadata.topics[topic].partitions)


def test_the_idempotent_producer_delivers_exactly_once_in_order_across_leader_moves(kafka: MiniKafka) -> None:
    topic = f"moves-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, NewTopic(topic, PARTITIONS, 3))
    failures: list[str] = []

    def delivered(error: KafkaError | None, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "batch.size": 2048, "message.timeout.ms": 60_000,
                         "topic.metadata.refresh.interval.ms": 1000})
    sent = {partition: 0 for partition in range(PARTITIONS)}

    def send_phase() -> None:
        for n in range(PER_PHASE):
            partition = n % PARTITIONS
            producer.produce(topic, value=f"{partition}:{sent[partition]}".encode(), partition=partition,
                             on_delivery=delivered)
            sent[partition] += 1
            if n % 50 == 0:
                producer.poll(0)

    send_phase()
    leader = partitions(kafka, topic)[0].leader
    kafka.faults.elect_leader(topic, 0, next(b for b in (1, 2, 3) if b != leader))  # batches still in flight
    send_phase()
    moved = partitions(kafka, topic)[1].leader
    kafka.faults.stop_broker(moved)  # its connections drop with requests appended but not answered
    send_phase()
    after_stop = partitions(kafka, topic)
    assert all(part.leader != moved and moved not in part.isrs for part in after_stop.values())
    kafka.faults.start_broker(moved)
    send_phase()
    assert producer.flush(60) == 0
    assert failures == []

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(PARTITIONS)])
    read: dict[int, list[tuple[int, str]]] = {partition: [] for partition in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while sum(map(len, read.values())) < 4 * PER_PHASE and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read[message.partition()].append((message.offset(), message.value().decode()))
    time.sleep(1)  # nothing more arrives: a duplicate would show up here
    while (message := consumer.poll(0.2)) is not None:
        if message.error() is None:
            read[message.partition()].append((message.offset(), message.value().decode()))
    consumer.close()
    for partition, records in read.items():
        assert [offset for offset, _ in records] == list(range(sent[partition])), partition
        assert [value for _, value in records] == [f"{partition}:{n}" for n in range(sent[partition])], partition


def test_metadata_after_a_stop_shows_the_new_leaders_and_isr(kafka: MiniKafka) -> None:
    topic = f"failover-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, NewTopic(topic, 3, replica_assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]]))
    before = partitions(kafka, topic)
    assert {index: (part.leader, part.isrs) for index, part in before.items()} == {
        0: (1, [1, 2, 3]), 1: (2, [2, 3, 1]), 2: (3, [3, 1, 2])}
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "2")])
    assert next(iter(described.values())).result(10)["node.id"].value == "2"
    kafka.faults.stop_broker(2)
    try:
        brokers = admin.list_topics(timeout=10).brokers
        assert sorted(brokers) == [1, 3]
        after = partitions(kafka, topic)
        assert {index: (part.leader, part.replicas, part.isrs) for index, part in after.items()} == {
            0: (1, [1, 2, 3], [1, 3]), 1: (3, [2, 3, 1], [3, 1]), 2: (3, [3, 1, 2], [3, 1])}
    finally:
        kafka.faults.start_broker(2)
    restarted = partitions(kafka, topic)
    assert {index: (part.leader, sorted(part.isrs)) for index, part in restarted.items()} == {
        0: (1, [1, 2, 3]), 1: (3, [1, 2, 3]), 2: (3, [1, 2, 3])}


def test_acks_all_gets_not_enough_replicas_below_min_insync_replicas(kafka: MiniKafka) -> None:
    topic = f"min-isr-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, NewTopic(topic, 1, replica_assignment=[[1, 3]], config={"min.insync.replicas": "2"}))

    def produce(acks: str) -> KafkaError | None:
        outcome: list[KafkaError | None] = []
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": acks, "retries": 0,
                             "enable.idempotence": False, "message.timeout.ms": 10_000})
        producer.produce(topic, b"v", partition=0, on_delivery=lambda error, _message: outcome.append(error))
        assert producer.flush(15) == 0
        return outcome[0]

    assert produce("all") is None
    kafka.faults.stop_broker(3)
    try:
        refused = produce("all")
        assert refused is not None and refused.code() == KafkaError.NOT_ENOUGH_REPLICAS
        assert produce("1") is None  # acks=1 needs the leader only
    finally:
        kafka.faults.start_broker(3)
    assert produce("all") is None

"""An unclean election met by confluent-kafka (librdkafka), three brokers in one process: the follower of a
partition is paused (`pause_follower`) and leaves the ISR, `acks=1` records are acknowledged by the leader alone,
the leader's broker stops and, with unclean.leader.election.enable, the out-of-sync follower is elected: the
`acks=1` records are truncated from the log as Kafka loses them, the `acks=all` records acknowledged before the
pause are all there, and a consumer that had read past the new log end detects the truncation (KIP-320,
OffsetsForLeaderEpoch) and goes back to read the new leader's records."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(120)
TOPIC = "lossy"


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    config = {"replica.lag.time.max.ms": 1000, "auto.leader.rebalance.enable": "false"}
    with MiniKafka(config, brokers=3) as broker:
        yield broker


def produce(kafka: MiniKafka, acks: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": acks, "enable.idempotence": False,
                         "linger.ms": 0})
    failures: list[object] = []
    for value in values:
        producer.produce(TOPIC, value.encode(), partition=0,
                         on_delivery=lambda error, _message: failures.append(error) if error else None)
    assert producer.flush(30) == 0 and failures == []


def isr(kafka: MiniKafka) -> list[int]:
    metadata = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(TOPIC, timeout=10)
    return list(metadata.topics[TOPIC].partitions[0].isrs)


def consume(consumer: Consumer, count: int, timeout_s: float = 20.0) -> list[tuple[int, str]]:
    got: list[tuple[int, str]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append((message.offset(), message.value().decode()))
    return got


def test_acks_1_records_are_lost_in_an_unclean_election_and_the_consumer_sees_the_truncation(
        kafka: MiniKafka) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[[2, 3]],
                                  config={"unclean.leader.election.enable": "true"})])[TOPIC].result(10)
    committed = [f"all-{n}" for n in range(5)]
    produce(kafka, "all", committed)  # offsets 0-4, on both replicas

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "lossy-reader",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    try:
        assert consume(consumer, 5) == list(enumerate(committed))
        kafka.faults.pause_follower(TOPIC, 0, 3)
        doomed = [f"one-{n}" for n in range(5)]
        produce(kafka, "1", doomed)  # offsets 5-9, on the leader only
        deadline = time.monotonic() + 10
        while isr(kafka) != [2] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert isr(kafka) == [2]  # replica.lag.time.max.ms after the pause, as it lags
        # past the high watermark until then; now the consumer reads them
        assert consume(consumer, 5) == [(5 + n, value) for n, value in enumerate(doomed)]

        kafka.faults.stop_broker(2)  # only the out-of-sync replica 3 is left: elected uncleanly, log truncated
        try:
            partition = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]
            assert (partition.leader, partition.isrs) == (3, [3])
            produce(kafka, "all", ["after-0", "after-1"])  # offsets 5 and 6 again, on the new leader
            # the consumer was at offset 10, past the new log end: KIP-320 truncation detection takes it back
            # (auto.offset.reset=earliest would have gone back to offset 0: this is the epoch's end offset)
            assert consume(consumer, 2) == [(5, "after-0"), (6, "after-1")]
        finally:
            kafka.faults.start_broker(2)
    finally:
        consumer.close()

    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "lossy-check",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(TOPIC, 0, 0)])
    try:
        assert consume(reader, 7) == list(enumerate([*committed, "after-0", "after-1"]))
        assert consume(reader, 1, timeout_s=1.0) == []  # nothing of the acks=1 records is left
    finally:
        reader.close()

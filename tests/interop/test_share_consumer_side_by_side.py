"""confluent-kafka's ShareConsumer (KIP-932, librdkafka 2.15+) against Apache Kafka 4.3.1 and minikafka with the same
scenarios and the same outcomes: implicit acknowledgement; explicit ACCEPT, RELEASE (redelivered with a higher
delivery count) and REJECT (archived, never redelivered); a new member of a fully acknowledged group receives
nothing; two consumers share one partition, each record delivered to exactly one of them.

Both brokers start a share partition at `share.auto.offset.reset=latest` (Kafka's default), so every scenario first
warms up: it produces marker records until the consumer receives one (the partition is then initialised and
assigned), accepts the markers, and only then produces the records it checks."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from tests.integration.client_drivers import create_topic

pytestmark = pytest.mark.interop

MARKER = b"marker"


def _consumer(bootstrap: str, group: str, mode: str) -> Any:
    from confluent_kafka import ShareConsumer

    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode})


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})


def _produce(producer: Any, topic: str, values: list[bytes], one_batch_each: bool = False) -> None:
    for value in values:
        producer.produce(topic, value=value, partition=0)
        if one_batch_each:
            producer.flush(30)
    assert producer.flush(30) == 0


def _warm_up(consumers: list[Any], producer: Any, topic: str, explicit: bool, timeout_s: float = 60) -> None:
    """Produce markers until every consumer has received one (accepting every marker it gets)."""
    from confluent_kafka import AcknowledgeType

    warm: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while len(warm) < len(consumers):
        assert time.monotonic() < deadline, "the share consumers never received a record"
        _produce(producer, topic, [MARKER])
        for index, consumer in enumerate(consumers):
            for message in consumer.poll(0.5):
                assert message.error() is None, message.error()
                assert message.value() == MARKER
                warm.add(index)
                if explicit:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if explicit:
                consumer.commit_sync()
    # drain the markers still in flight
    quiet_until = time.monotonic() + 2
    while time.monotonic() < quiet_until:
        for consumer in consumers:
            for message in consumer.poll(0.3):
                assert message.value() == MARKER
                quiet_until = time.monotonic() + 2
                if explicit:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if explicit:
                consumer.commit_sync()


def test_implicit_acknowledgement_and_a_new_member_of_an_acknowledged_group(target_bootstrap: str) -> None:
    topic, group = f"share-implicit-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic, 1)
    producer = _producer(target_bootstrap)
    consumer = _consumer(target_bootstrap, group, "implicit")
    consumer.subscribe([topic])
    try:
        _warm_up([consumer], producer, topic, explicit=False)
        values = [b"v%d" % i for i in range(6)]
        _produce(producer, topic, values)
        got: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            got += [(m.value(), m.delivery_count()) for m in consumer.poll(1.0) if m.error() is None]
        assert got == [(v, 1) for v in values]
        consumer.commit_sync()  # implicit mode: the last poll's records are accepted
    finally:
        consumer.close()
    newcomer = _consumer(target_bootstrap, group, "implicit")
    newcomer.subscribe([topic])
    try:
        again = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            again += [m.value() for m in newcomer.poll(1.0) if m.error() is None]
        assert again == []
    finally:
        newcomer.close()


def test_explicit_accept_release_reject(target_bootstrap: str) -> None:
    from confluent_kafka import AcknowledgeType

    topic, group = f"share-explicit-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic, 1)
    producer = _producer(target_bootstrap)
    consumer = _consumer(target_bootstrap, group, "explicit")
    consumer.subscribe([topic])
    try:
        _warm_up([consumer], producer, topic, explicit=True)
        _produce(producer, topic, [b"accept", b"release", b"reject", b"accept-too"])
        deliveries: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(deliveries) < 5:
            for message in consumer.poll(1.0):
                assert message.error() is None, message.error()
                deliveries.append((message.value(), message.delivery_count()))
                if message.value() == b"release" and message.delivery_count() == 1:
                    consumer.acknowledge(message, AcknowledgeType.RELEASE)
                elif message.value() == b"reject":
                    consumer.acknowledge(message, AcknowledgeType.REJECT)
                else:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        quiet_until = time.monotonic() + 5  # nothing more comes: REJECT archived, the rest accepted
        while time.monotonic() < quiet_until:
            for message in consumer.poll(0.5):
                deliveries.append((message.value(), message.delivery_count()))
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        assert deliveries == [(b"accept", 1), (b"release", 1), (b"reject", 1), (b"accept-too", 1), (b"release", 2)]
    finally:
        consumer.close()


def test_two_consumers_share_one_partition(target_bootstrap: str) -> None:
    topic, group = f"share-two-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic, 1)
    producer = _producer(target_bootstrap)
    consumers = [_consumer(target_bootstrap, group, "implicit") for _ in range(2)]
    for consumer in consumers:
        consumer.subscribe([topic])
    try:
        _warm_up(consumers, producer, topic, explicit=False)
        values = [b"r%d" % i for i in range(40)]
        received: list[list[bytes]] = [[], []]
        stop = threading.Event()

        def consume(index: int) -> None:
            while not stop.is_set():
                received[index] += [m.value() for m in consumers[index].poll(0.5) if m.error() is None]
                consumers[index].commit_sync()

        threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        _produce(producer, topic, values, one_batch_each=True)
        deadline = time.monotonic() + 30
        while sum(map(len, received)) < len(values) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # anything delivered twice would show up now
        stop.set()
        for thread in threads:
            thread.join(10)
        assert sorted(received[0] + received[1]) == sorted(values)  # each record to exactly one consumer
        assert received[0] and received[1]
    finally:
        for consumer in consumers:
            consumer.close()


@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_java_kafka_share_consumer(target_bootstrap: str, java_client: None, mode: str) -> None:
    """The same scenario with kafka-clients 4.3.1's KafkaShareConsumer (tests/interop/java ShareConsumerClient)."""
    import subprocess

    from tests.interop.java_client import LIB_DIR, ensure_built, parse_summary

    topic, group = f"share-java-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic, 1)
    jar = ensure_built()
    done = subprocess.run(["java", "-Xmx256m", "-cp", f"{jar}:{LIB_DIR}/*", "minikafka.interop.ShareConsumerClient",
                           target_bootstrap, topic, group, mode], capture_output=True, text=True, timeout=150)
    deliveries = [tuple(d) for d in parse_summary(done, "Java share consumer")["deliveries"]]
    if mode == "explicit":
        assert deliveries == [("accept", 1), ("release", 1), ("reject", 1), ("accept-too", 1), ("release", 2)]
    else:
        assert deliveries == [("accept", 1), ("release", 1), ("reject", 1), ("accept-too", 1)]


def test_the_delivery_count_limit_archives_a_record_released_every_time(target_bootstrap: str) -> None:
    """group.share.delivery.count.limit (5 on both brokers): a record released on every delivery is delivered five
    times, then archived and never delivered again; its neighbour is accepted once."""
    from confluent_kafka import AcknowledgeType

    topic, group = f"share-limit-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic, 1)
    producer = _producer(target_bootstrap)
    consumer = _consumer(target_bootstrap, group, "explicit")
    consumer.subscribe([topic])
    try:
        _warm_up([consumer], producer, topic, explicit=True)
        _produce(producer, topic, [b"poison"])
        _produce(producer, topic, [b"fine"])
        deliveries: list[tuple[bytes, int]] = []
        quiet_until = time.monotonic() + 30
        while time.monotonic() < quiet_until:
            for message in consumer.poll(0.5):
                assert message.error() is None, message.error()
                deliveries.append((message.value(), message.delivery_count()))
                poison = message.value() == b"poison"
                consumer.acknowledge(message, AcknowledgeType.RELEASE if poison else AcknowledgeType.ACCEPT)
                if poison and message.delivery_count() == 5:
                    quiet_until = time.monotonic() + 5
            consumer.commit_sync()
        assert sorted(deliveries) == [(b"fine", 1)] + [(b"poison", n) for n in range(1, 6)]
    finally:
        consumer.close()

"""A KIP-848 consumer group scenario with confluent-kafka (`group.protocol=consumer`), run the same way against
minikafka and Apache Kafka: three members join and share the partitions, one leaves and its partitions move
to the other two, every partition's offset is committed; `resume` (after a broker restart where the caller
can) reads the committed offsets back through a new member of the same group."""

from __future__ import annotations

import time
from typing import Any

PARTITIONS = 6
COMMITTED = {partition: 3 + partition for partition in range(PARTITIONS)}


def _consumer(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})


def _assignments(consumers: list[Any]) -> list[set[int]]:
    return [{tp.partition for tp in consumer.assignment()} for consumer in consumers]


def _settle(consumers: list[Any], expected_sizes: list[int], timeout_s: float = 60.0) -> list[set[int]]:
    """Poll every member until the assignment sizes are `expected_sizes` and cover every partition once."""
    deadline = time.monotonic() + timeout_s
    while True:
        for consumer in consumers:
            consumer.poll(0.05)
        current = _assignments(consumers)
        union = set().union(*current)
        if sorted(map(len, current)) == expected_sizes and len(union) == PARTITIONS == sum(map(len, current)):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"assignments did not settle: {current}")


def share_and_move(bootstrap: str, topic: str, group: str) -> dict[str, Any]:
    """Three members share `topic`; the first leaves; the other two take its partitions and commit."""
    from confluent_kafka import TopicPartition

    consumers = [_consumer(bootstrap, group) for _ in range(3)]
    try:
        for consumer in consumers:
            consumer.subscribe([topic])
        three = _settle(consumers, [2, 2, 2])
        consumers[0].close()
        two = _settle(consumers[1:], [3, 3])
        for consumer, owned in zip(consumers[1:], two, strict=True):
            consumer.commit(offsets=[TopicPartition(topic, p, COMMITTED[p]) for p in sorted(owned)],
                            asynchronous=False)
        moved = three[0]
        return {"sizes_three": sorted(map(len, three)), "sizes_two": sorted(map(len, two)),
                "moved_to_survivors": moved <= set().union(*two),
                "kept": all(a <= b for a, b in zip(three[1:], two, strict=True))}
    finally:
        for consumer in consumers[1:]:
            consumer.close()


def resume(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """The offset a new member of `group` starts each partition at (its first record's offset)."""
    consumer = _consumer(bootstrap, group)
    consumer.subscribe([topic])
    first: dict[int, int] = {}
    deadline = time.monotonic() + 60
    try:
        while len(first) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                first.setdefault(message.partition(), message.offset())
    finally:
        consumer.close()
    return first


def produce(bootstrap: str, topic: str, per_partition: int = 10) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(PARTITIONS):
        for index in range(per_partition):
            producer.produce(topic, value=f"{partition}-{index}".encode(), partition=partition)
    assert producer.flush(30) == 0

"""Produce-then-consume round trips through a secured listener (TLS, SASL) with confluent-kafka and kafka-python:
the client settings come from the test, the records are `k<i>`/`v<i>` on a fresh topic, read back by a group (so
the group coordinator is found and reached over the same listener)."""

from __future__ import annotations

import uuid
from typing import Any


def fresh_topic() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def confluent_round_trip(bootstrap: str, config: dict[str, Any], count: int) -> list[bytes]:
    """The values a confluent-kafka group consumer reads back after producing `count` records."""
    from confluent_kafka import Consumer, Producer

    topic = fresh_topic()
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                         **config})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(300):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) >= count:
                break
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def kafka_python_round_trip(bootstrap: str, options: dict[str, Any], count: int) -> list[bytes]:
    """The same with kafka-python (`options` are its keyword arguments)."""
    from kafka import KafkaConsumer, KafkaProducer

    topic = fresh_topic()
    producer = KafkaProducer(bootstrap_servers=bootstrap, **options)
    for i in range(count):
        producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}", auto_offset_reset="earliest",
                             consumer_timeout_ms=10_000, **options)
    values: list[bytes] = []
    for message in consumer:
        values.append(message.value)
        if len(values) >= count:
            break
    consumer.close()
    return values


def aiokafka_round_trip(bootstrap: str, options: dict[str, Any], count: int) -> list[bytes]:
    """The same with aiokafka (`options` are its keyword arguments), run on a fresh event loop."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def round_trip() -> list[bytes]:
        topic = fresh_topic()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **options)
        await producer.start()
        try:
            for i in range(count):
                await producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}",
                                    auto_offset_reset="earliest", **options)
        await consumer.start()
        values: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                while len(values) < count:
                    batches = await consumer.getmany(timeout_ms=1000)
                    values += [m.value for messages in batches.values() for m in messages if m.value is not None]
        finally:
            await consumer.stop()
        return values

    return asyncio.run(round_trip())

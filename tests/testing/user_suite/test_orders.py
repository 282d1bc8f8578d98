"""An application's tests against a real broker: produce with confluent-kafka, consume it back, commit offsets,
restart. Uses only `minikafka_broker` and `minikafka_topic`."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def produce(bootstrap: str, topic: str, records: list[tuple[str, str | None]], **config: object) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **config})
    failures: list[KafkaError] = []
    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(30) == 0
    assert failures == []


def consume_all(bootstrap: str, topic: str, partitions: int = 1, **config: object) -> list[tuple[str, str | None]]:
    """Every record of `topic` from the beginning to the current end, partition by partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True, **config})
    records: list[tuple[str, str | None]] = []
    try:
        for partition in range(partitions):
            consumer.assign([TopicPartition(topic, partition, 0)])
            while True:
                message = consumer.poll(10)
                assert message is not None, f"{topic}-{partition}: neither a record nor its end within 10 s"
                if message.error() is not None and message.error().code() == KafkaError._PARTITION_EOF:
                    break
                assert message.error() is None, message.error()
                value = message.value()
                records.append((message.key().decode(), value.decode() if value is not None else None))
    finally:
        consumer.close()
    return records


def test_orders_come_back_in_order_with_their_keys(minikafka_broker, minikafka_topic):
    topic = minikafka_topic()
    orders = [(f"order-{n}", f'{{"amount": {n}}}') for n in range(100)]

    produce(minikafka_broker.bootstrap_servers, topic, orders)

    assert consume_all(minikafka_broker.bootstrap_servers, topic) == orders


def test_keys_keep_their_order_within_each_of_three_partitions(minikafka_broker, minikafka_topic):
    topic = minikafka_topic(partitions=3)
    events = [(f"customer-{n % 7}", f"event-{n}") for n in range(210)]

    produce(minikafka_broker.bootstrap_servers, topic, events)

    consumed = consume_all(minikafka_broker.bootstrap_servers, topic, partitions=3)
    assert sorted(consumed) == sorted(events)
    for customer in {key for key, _ in events}:
        assert [v for k, v in consumed if k == customer] == [v for k, v in events if k == customer]


def test_a_consumer_group_resumes_after_its_committed_offset(minikafka_broker, minikafka_topic):
    bootstrap = minikafka_broker.bootstrap_servers
    topic = minikafka_topic()
    group = f"billing-{uuid.uuid4()}"
    produce(bootstrap, topic, [(f"k{n}", f"first-{n}") for n in range(10)])

    first = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
    first.subscribe([topic])
    seen = []
    while len(seen) < 10:
        message = first.poll(10)
        assert message is not None and message.error() is None
        seen.append(message.value().decode())
    first.commit(asynchronous=False)
    first.close()
    assert seen == [f"first-{n}" for n in range(10)]

    produce(bootstrap, topic, [(f"k{n}", f"second-{n}") for n in range(5)])
    second = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    second.subscribe([topic])
    resumed = []
    while len(resumed) < 5:
        message = second.poll(10)
        assert message is not None and message.error() is None
        resumed.append(message.value().decode())
    second.close()
    assert resumed == [f"second-{n}" for n in range(5)]


def test_a_compacted_topic_keeps_deletes_as_tombstones(minikafka_broker, minikafka_topic):
    topic = minikafka_topic(config={"cleanup.policy": "compact", "min.compaction.lag.ms": 60_000})
    produce(minikafka_broker.bootstrap_servers, topic, [("user-1", "alice"), ("user-2", "bob"), ("user-1", None)])

    assert consume_all(minikafka_broker.bootstrap_servers, topic) == [
        ("user-1", "alice"), ("user-2", "bob"), ("user-1", None)]


def test_an_aborted_transaction_is_invisible_to_read_committed(minikafka_broker, minikafka_topic):
    bootstrap = minikafka_broker.bootstrap_servers
    topic = minikafka_topic()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"payments-{uuid.uuid4()}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, key="p1", value="charged")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, key="p2", value="never happened")
    producer.abort_transaction(30)

    committed = consume_all(bootstrap, topic, **{"isolation.level": "read_committed"})
    assert committed == [("p1", "charged")]


def test_records_survive_a_broker_restart(minikafka_broker, minikafka_topic):
    topic = minikafka_topic(partitions=2)
    records = [(f"sensor-{n % 4}", f"reading-{n}") for n in range(40)]
    produce(minikafka_broker.bootstrap_servers, topic, records)

    minikafka_broker.restart()

    assert sorted(consume_all(minikafka_broker.bootstrap_servers, topic, partitions=2)) == sorted(records)

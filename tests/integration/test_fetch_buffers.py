"""Fetch responses written as several buffers (record data shared with the segment read, memoryview slices when a
read ends inside a batch) arrive intact over PLAINTEXT and over TLS, for librdkafka and kafka-python: every record,
in order, across partitions, with fetch sizes that cut reads mid-batch."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikafka.testing import MiniKafka
from tests.tls_material import CertificateAuthority

PARTITIONS = 3
RECORDS = 300  # per partition
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def broker_and_ca(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MiniKafka, Path]]:
    root = tmp_path_factory.mktemp("fetch-buffers")
    ca = CertificateAuthority()
    server_pem = ca.issue_server().write_pem_keystore(root / "server.pem", key_password="kp")
    ca_file = ca.write_pem_truststore(root / "ca.pem")
    with MiniKafka({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(server_pem), "ssl.key.password": "kp",
                    "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca_file)},
                   listeners={"SSL": "SSL"}) as broker:
        yield broker, ca_file


@pytest.fixture(scope="module")
def topic(broker_and_ca: tuple[MiniKafka, Path]) -> tuple[str, dict[int, list[bytes]]]:
    """A topic of large batches (about 100 KiB of 2-9 KiB values each) on every partition."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker, _ = broker_and_ca
    name = "fetch-buffers"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # alive until the result is in
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(timeout=30)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50, "batch.size": 100_000})
    expected: dict[int, list[bytes]] = {partition: [] for partition in range(PARTITIONS)}
    for index in range(RECORDS * PARTITIONS):
        partition = index % PARTITIONS
        value = f"{index}:".encode() + os.urandom(2048 + (index * 997) % 7000)
        expected[partition].append(value)
        producer.produce(name, value, partition=partition)
    assert producer.flush(60) == 0
    return name, expected


def _ssl(ca_file: Path) -> dict[str, Any]:
    return {"security.protocol": "ssl", "ssl.ca.location": str(ca_file)}


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_librdkafka_reads_every_record_in_order(broker_and_ca: tuple[MiniKafka, Path],
                                                 topic: tuple[str, dict[int, list[bytes]]], listener: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    broker, ca_file = broker_and_ca
    name, expected = topic
    config = {"bootstrap.servers": broker.bootstrap_servers_for(listener), "group.id": "unused",
              "enable.auto.commit": False, "max.partition.fetch.bytes": 150_000, "fetch.max.bytes": 400_000,
              "message.max.bytes": 400_000,
              **(_ssl(ca_file) if listener == "SSL" else {})}
    consumer = Consumer(config)
    consumer.assign([TopicPartition(name, partition, 0) for partition in range(PARTITIONS)])
    received: dict[int, list[bytes]] = {partition: [] for partition in range(PARTITIONS)}
    try:
        for _ in range(200):
            for message in consumer.consume(1000, timeout=0.5):
                assert message.error() is None, message.error()
                assert message.offset() == len(received[message.partition()])
                received[message.partition()].append(message.value())
            if sum(map(len, received.values())) >= RECORDS * PARTITIONS:
                break
    finally:
        consumer.close()
    assert received == expected


def test_kafka_python_reads_every_record_over_tls(broker_and_ca: tuple[MiniKafka, Path],
                                                  topic: tuple[str, dict[int, list[bytes]]]) -> None:
    from kafka import KafkaConsumer, TopicPartition

    broker, ca_file = broker_and_ca
    name, expected = topic
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers_for("SSL"), security_protocol="SSL",
                             ssl_cafile=str(ca_file), max_partition_fetch_bytes=120_000, fetch_max_bytes=300_000,
                             consumer_timeout_ms=10_000, enable_auto_commit=False)
    consumer.assign([TopicPartition(name, partition) for partition in range(PARTITIONS)])
    consumer.seek_to_beginning()
    received: dict[int, list[bytes]] = {partition: [] for partition in range(PARTITIONS)}
    for message in consumer:
        received[message.partition].append(message.value)
        if sum(map(len, received.values())) >= RECORDS * PARTITIONS:
            break
    consumer.close()
    assert received == expected

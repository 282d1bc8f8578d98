"""Real Python clients over many small fetches while records keep arriving: consumption is exact, and the broker's
fetch-session metrics show how each client fetched.

kafka-python asks for incremental fetch sessions (KIP-227; Fetch v12 by topic names). librdkafka
(confluent-kafka) never does: its fetcher always sends session id 0 and epoch -1 (rdkafka_fetcher.c) and, since
the broker advertises Fetch 13+ and Metadata returns topic ids, it fetches by topic id. aiokafka is sessionless
too. The Java client is covered in tests/interop/test_fetch_sessions_interop.py.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import _headers, create_topic, partition_counts, produce_confluent
from tests.integration.expected_records import ConsumedRecord, ExpectedRecords

pytestmark = pytest.mark.timeout(300)

RECORDS = 4_000
PARTITIONS = 3
#: small batches and fetch sizes, so that the consumer needs hundreds of fetches
SMALL_BATCHES = {"batch.size": 600, "linger.ms": 0}
PARTITION_FETCH_BYTES = 700
FETCH_BYTES = 1_400


def _metrics(broker: BrokerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as response:
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def fetch_contexts(broker: BrokerProcess) -> dict[str, float]:
    """Fetch requests by fetch context, and the Fetch request count ("requests")."""
    samples = _metrics(broker)
    contexts = {labels[0][1]: value for (name, labels), value in samples.items()
                if name == "minikafka_fetch_context_requests_total"}
    contexts["requests"] = samples[("kafka_network_requestmetrics_requests_total", (("request", "Fetch"),))]
    return contexts


def _consume_kafka_python(bootstrap: str, topic: str, total: int, deadline: float,
                          got: list[ConsumedRecord]) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_bytes=FETCH_BYTES, max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
                             fetch_max_wait_ms=100)
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    try:
        while len(got) < total and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                got.extend(ConsumedRecord(tp.partition, r.offset, r.key, r.value, _headers(r.headers), r.timestamp,
                                          r.timestamp_type) for r in records)
    finally:
        consumer.close()


def _consume_confluent(bootstrap: str, topic: str, total: int, deadline: float,
                       got: list[ConsumedRecord]) -> None:
    from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sessions", "enable.auto.commit": False,
                         "fetch.max.bytes": FETCH_BYTES, "max.partition.fetch.bytes": PARTITION_FETCH_BYTES,
                         "fetch.wait.max.ms": 100, "message.max.bytes": 1_000})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    try:
        while len(got) < total and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1_000, timeout=0.2):
                assert msg.error() is None, f"consumer error: {msg.error()}"
                ts_type, ts = msg.timestamp()
                got.append(ConsumedRecord(int(msg.partition() or 0), int(msg.offset() or 0), msg.key(), msg.value(),
                                          _headers(msg.headers()), ts, 1 if ts_type == TIMESTAMP_LOG_APPEND_TIME
                                          else 0))
    finally:
        consumer.close()


def _consume_aiokafka(bootstrap: str, topic: str, total: int, deadline: float,
                      got: list[ConsumedRecord]) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                    fetch_max_bytes=FETCH_BYTES, max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
                                    fetch_max_wait_ms=100)
        await consumer.start()
        try:
            partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            while len(got) < total and time.monotonic() < deadline:
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    got.extend(ConsumedRecord(tp.partition, r.offset, r.key, r.value, _headers(r.headers),
                                              r.timestamp, r.timestamp_type) for r in records)
        finally:
            await consumer.stop()

    asyncio.run(run())


Consume = Callable[[str, str, int, float, list[ConsumedRecord]], None]
CLIENTS: dict[str, tuple[Consume, bool]] = {  # client -> (consumer, uses incremental fetch sessions)
    "kafka-python": (_consume_kafka_python, True),
    "confluent-kafka": (_consume_confluent, False),
    "aiokafka": (_consume_aiokafka, False),
}


@pytest.mark.parametrize("client", CLIENTS)
def test_consumption_is_exact_over_many_fetches_with_or_without_sessions(broker: BrokerProcess, client: str) -> None:
    topic = f"sessions-{client}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    expected = ExpectedRecords(RECORDS)
    first, second = ExpectedRecords(0), ExpectedRecords(0)
    first.records, second.records = expected.records[: RECORDS // 2], expected.records[RECORDS // 2:]
    first.acked = second.acked = expected.acked
    produce_confluent(broker.bootstrap, topic, first, "none", extra=SMALL_BATCHES)
    # the second half arrives while the consumer is fetching
    producer = threading.Thread(target=produce_confluent, args=(broker.bootstrap, topic, second, "lz4"),
                                kwargs={"extra": SMALL_BATCHES})
    got: list[ConsumedRecord] = []
    consume, uses_sessions = CLIENTS[client]
    producer.start()
    try:
        time.sleep(0.2)
        consume(broker.bootstrap, topic, RECORDS, time.monotonic() + 120, got)
    finally:
        producer.join(timeout=120)
    expected.check_acked_all()
    counts = partition_counts(expected, PARTITIONS)
    assert {p: sum(1 for r in got if r.partition == p) for p in range(PARTITIONS)} == counts
    expected.check_consumed(got, PARTITIONS)

    contexts = fetch_contexts(broker)
    assert contexts["requests"] >= 100, f"only {contexts['requests']} fetches: the sizes did not force many"
    assert contexts["session_error"] == 0
    if uses_sessions:
        assert contexts["full"] >= 1 and contexts["incremental"] >= 100, contexts
    else:
        assert contexts["full"] == contexts["incremental"] == 0 and contexts["sessionless"] >= 100, contexts

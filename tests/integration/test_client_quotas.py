"""Client quotas end to end (KIP-13/KIP-219): AlterClientQuotas/DescribeClientQuotas over the wire, a throttled
consumer Fetch answered empty with throttle_time_ms and its connection muted, and a real producer
(confluent-kafka) held to a 1 MiB/s producer_byte_rate within 10% over 20 s with throttles reported to it
(throttle_cb), then back to full speed once the quota is removed.

The broker runs with `quota.window.num=2`: with Kafka's default of 11 samples the same algorithm (Kafka's Rate:
at least samples - 1 windows, samples purged a whole window after their last event) lets a fresh client burst
10 s worth of quota and then cycles with an ~11 s period, so any one 20 s window measures between about 0.6x and
1.1x the quota (long-run average right); two samples keep the cycle short enough for a 20 s measurement.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.testing.mini_kafka import MiniKafka
from tests.wire_client import WireClient

QUOTA_BYTES_PER_S = 1_048_576


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniKafka]:
    with MiniKafka({"quota.window.num": 2, "num.partitions": 1}) as kafka:
        yield kafka


def alter(bootstrap: str, client_id: str, ops: list[tuple[str, float, bool]], validate_only: bool = False) -> Any:
    with WireClient(bootstrap) as client:
        return client.request(AlterClientQuotasRequest[1](
            entries=[([("client-id", client_id)], ops)], validate_only=validate_only))


def test_alter_and_describe_over_the_wire(broker: MiniKafka) -> None:
    bootstrap = broker.bootstrap_servers
    [entry] = alter(bootstrap, "c1", [("producer_byte_rate", 1024.0, False),
                                      ("request_percentage", 50.0, False)]).entries
    assert (entry.error_code, entry.error_message) == (ErrorCode.NONE, None)
    [bad] = alter(bootstrap, "c1", [("producer_byte_rate", 1.5, False)]).entries
    assert (bad.error_code, bad.error_message) == (ErrorCode.INVALID_REQUEST,
                                                   "producer_byte_rate cannot be a fractional value.")
    with WireClient(bootstrap) as client:
        described = client.request(DescribeClientQuotasRequest[1](components=[("client-id", 0, "c1")], strict=True))
        assert described.error_code == ErrorCode.NONE
        [found] = described.entries
        assert [(e.entity_type, e.entity_name) for e in found.entity] == [("client-id", "c1")]
        assert sorted((v.key, v.value) for v in found.values) == [("producer_byte_rate", 1024.0),
                                                                 ("request_percentage", 50.0)]
        refused = client.request(DescribeClientQuotasRequest[1](components=[("group", 0, "g")], strict=False))
        assert (refused.error_code, refused.entries) == (ErrorCode.UNSUPPORTED_VERSION, None)
    alter(bootstrap, "c1", [("producer_byte_rate", 0.0, True), ("request_percentage", 0.0, True)])
    with WireClient(bootstrap) as client:
        assert client.request(DescribeClientQuotasRequest[1](components=[], strict=False)).entries == []


def test_a_throttled_fetch_is_empty_and_mutes_the_connection(broker: MiniKafka) -> None:
    bootstrap = broker.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "loader"})
    producer.produce("fetched", b"x" * 25_000)
    assert producer.flush(15) == 0
    # WireClient's client id is "wire-test": 4000 B/s over 2 x 1 s windows; one 25 kB fetch exceeds it
    assert alter(bootstrap, "wire-test", [("consumer_byte_rate", 4000.0, False)]).entries[0].error_code == 0
    try:
        with WireClient(bootstrap, timeout_s=30) as client:
            fetch = FetchRequest[4](replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                                    topics=[("fetched", [(0, 0, 1 << 20)])])
            throttled = client.request(fetch)
            # O = ~25 kB / 1 s (the window counts samples - 1 = 1 full window), T = 2000 B/s: X = (O - T) / T x 1 s
            assert 4_500 < throttled.throttle_time_ms < 6_500
            assert throttled.responses == []
            started = time.monotonic()
            client.request(MetadataRequest[1](topics=[]))
            assert time.monotonic() - started >= throttled.throttle_time_ms / 1000 - 0.1
    finally:
        alter(bootstrap, "wire-test", [("consumer_byte_rate", 0.0, True)])


def produced_rate(producer: Producer, delivered: list[int], lock: threading.Lock, seconds: float) -> float:
    value = b"v" * 10_000
    with lock:
        start_bytes = sum(delivered)
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce("quota-topic", value)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    with lock:
        return (sum(delivered) - start_bytes) / (time.monotonic() - started)


def test_a_producer_is_held_to_its_byte_rate_and_released_when_the_quota_is_removed(broker: MiniKafka) -> None:
    bootstrap = broker.bootstrap_servers
    throttles: list[int] = []
    delivered: list[int] = []
    lock = threading.Lock()

    def on_delivery(error: Any, message: Any) -> None:
        if error is None:
            with lock:
                delivered.append(len(message.value()))

    producer = Producer({
        "bootstrap.servers": bootstrap, "client.id": "quota-producer", "linger.ms": 5, "batch.size": 65_536,
        "queue.buffering.max.kbytes": 2048, "on_delivery": on_delivery,
        "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    assert alter(bootstrap, "quota-producer", [("producer_byte_rate", float(QUOTA_BYTES_PER_S), False)]).entries[
        0].error_code == 0
    try:
        produced_rate(producer, delivered, lock, 3.0)  # warm-up: the first burst and the first throttles
        assert throttles, "the producer was never told it is throttled"
        rate = produced_rate(producer, delivered, lock, 20.0)
        assert abs(rate - QUOTA_BYTES_PER_S) <= 0.1 * QUOTA_BYTES_PER_S, f"{rate:.0f} B/s"
        assert max(throttles) > 0
    finally:
        alter(bootstrap, "quota-producer", [("producer_byte_rate", 0.0, True)])
    time.sleep(2.5)  # the last throttle (at most a couple of windows) runs out
    unthrottled = produced_rate(producer, delivered, lock, 4.0)
    producer.flush(30)
    assert unthrottled > 3 * QUOTA_BYTES_PER_S, f"{unthrottled:.0f} B/s"

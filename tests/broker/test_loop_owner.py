"""Loop-owned state checked, not just documented (broker/loop_owner.py): with the check on, as the suite runs it
(tests/conftest.py), resolving purgatory futures or snapshotting loop-owned metrics from a worker thread raises
LoopOwnershipError, and the same calls on the loop pass. Against a broker subprocess (which inherits the check):
`/metrics` with fetch and share sessions alive and `POST /admin/erase` (whose tombstone is appended on the loop) answer
200 and the broker logs no violation."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest
from confluent_kafka import Consumer
from prometheus_client.registry import Collector

from minikafka.broker import loop_owner
from minikafka.broker.loop_owner import LoopOwnershipError
from minikafka.broker.metrics import BrokerMetrics
from minikafka.broker.purgatory import FetchPurgatory
from minikafka.testing import MiniKafka
from tests.integration.test_admin_http_attacks import users_topic


def test_the_suite_runs_with_the_check_on() -> None:
    assert loop_owner.CHECKING


def test_a_purgatory_notified_from_a_thread_is_caught_and_from_the_loop_wakes_the_fetch() -> None:
    purgatory = FetchPurgatory()

    async def scenario() -> bool:
        waiting = asyncio.create_task(purgatory.wait_for_append([("t", 0)], 5000))
        await asyncio.sleep(0)
        with pytest.raises(LoopOwnershipError, match="FetchPurgatory is event-loop-thread only"):
            await asyncio.to_thread(purgatory.notify_append, ("t", 0))
        assert not waiting.done()
        purgatory.notify_append(("t", 0))
        return await waiting

    assert asyncio.run(scenario())


class _LoopOwned(Collector):
    def collect(self):  # type: ignore[no-untyped-def]
        from prometheus_client.core import GaugeMetricFamily

        yield GaugeMetricFamily("loop_owned_things", "Things only the loop may count", value=3)


def test_loop_owned_collectors_are_built_on_the_loop_and_only_read_in_the_scrape_thread() -> None:
    from prometheus_client import generate_latest

    metrics = BrokerMetrics(lambda: [])
    metrics.register_loop_owned(_LoopOwned())

    async def scrape() -> bytes:
        # the broker's own request stats are loop-owned too, and published first
        with pytest.raises(LoopOwnershipError, match="RequestStatsCollector is event-loop-thread only"):
            await asyncio.to_thread(metrics.publish_loop_snapshots)
        metrics.publish_loop_snapshots()
        return await asyncio.to_thread(generate_latest, metrics.registry)

    assert b"loop_owned_things 3.0" in asyncio.run(scrape())


def test_scrapes_and_erasure_against_a_broker_touch_loop_state_only_on_the_loop() -> None:
    with MiniKafka({"log.cleaner.backoff.ms": 200}) as kafka:
        topic = users_topic(kafka)  # alice at offset 0, bob at 1
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "owned",
                             "auto.offset.reset": "earliest", "fetch.wait.max.ms": 500})
        consumer.subscribe([topic])
        try:
            assert [consumer.poll(10) is not None for _ in range(2)] == [True, True]  # a fetch session is cached
            for _ in range(3):
                with urllib.request.urlopen(kafka.metrics_url, timeout=30) as response:
                    assert b"kafka_server_fetchsessioncache_numincrementalfetchsessions" in response.read()
            request = urllib.request.Request(f"{kafka.admin_url}/admin/erase?topic={topic}&key=alice&timeout_ms=5000",
                                             data=b"", method="POST")
            with urllib.request.urlopen(request, timeout=60) as response:
                assert json.loads(response.read())["tombstone_offset"] == 2
            tombstone = consumer.poll(10)
            assert tombstone is not None and tombstone.key() == b"alice" and tombstone.value() is None
        finally:
            consumer.close()
        assert "LoopOwnershipError" not in kafka.log_path.read_text()

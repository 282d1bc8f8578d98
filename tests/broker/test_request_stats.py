"""The per-request metrics (broker/metrics.py `RequestStats`): plain numbers the dispatcher updates, exposed at
scrape time under the names and bucket labels prometheus_client's Counter and Histogram gave them."""

from __future__ import annotations

import asyncio

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.broker.metrics import BrokerMetrics


def _samples(metrics: BrokerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async def publish() -> None:  # loop-owned: built on an event loop, as a scrape does first
        metrics.publish_loop_snapshots()

    asyncio.run(publish())
    text = generate_latest(metrics.registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_counts_sums_and_buckets_are_cumulative_with_inclusive_upper_bounds() -> None:
    metrics = BrokerMetrics(lambda: [])
    stats = metrics.request_stats
    for seconds in (0.0001, 0.001, 0.0011, 40.0):  # 0.001 is a bound: it counts in le="0.001"
        stats.observe("Produce", seconds)
    stats.observe("Fetch", 0.2)
    stats.bytes_in += 1000
    stats.bytes_out += 2048
    samples = _samples(metrics)

    def bucket(request: str, le: str) -> float:
        return samples[("kafka_network_requestmetrics_totaltime_seconds_bucket", (("le", le), ("request", request)))]

    assert samples[("kafka_network_requestmetrics_requests_total", (("request", "Produce"),))] == 4
    assert samples[("kafka_network_requestmetrics_requests_total", (("request", "Fetch"),))] == 1
    assert [bucket("Produce", le) for le in ("0.0005", "0.001", "0.0025", "30.0", "+Inf")] == [1, 2, 3, 3, 4]
    assert [bucket("Fetch", le) for le in ("0.1", "0.25", "+Inf")] == [0, 1, 1]
    assert samples[("kafka_network_requestmetrics_totaltime_seconds_count", (("request", "Produce"),))] == 4
    assert abs(samples[("kafka_network_requestmetrics_totaltime_seconds_sum", (("request", "Produce"),))]
               - 40.0022) < 1e-9
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", ())] == 1000
    assert samples[("kafka_server_brokertopicmetrics_bytesout_total", ())] == 2048


def test_an_api_appears_once_it_was_requested_and_the_byte_counters_from_the_start() -> None:
    metrics = BrokerMetrics(lambda: [])
    samples = _samples(metrics)
    assert not any(name.startswith("kafka_network_requestmetrics") for name, _ in samples)
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", ())] == 0
    assert samples[("kafka_server_brokertopicmetrics_bytesout_total", ())] == 0

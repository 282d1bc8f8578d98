"""The Prometheus endpoint after real traffic: request counts per API, bytes in/out, per-partition end offsets."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import consume_confluent, create_topic, produce_confluent
from tests.integration.expected_records import ExpectedRecords

pytestmark = pytest.mark.timeout(120)


def _scrape(broker: BrokerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_reflect_produce_and_fetch_traffic(broker: BrokerProcess) -> None:
    topic = "metered"
    create_topic(broker.bootstrap, topic, 2)
    expected = ExpectedRecords(3_000)
    produce_confluent(broker.bootstrap, topic, expected, "none")
    counts = {p: sum(1 for (q, _o) in expected.acked if q == p) for p in (0, 1)}
    consume_confluent(broker.bootstrap, topic, counts)

    samples = _scrape(broker)
    assert samples[("kafka_network_requestmetrics_requests_total", (("request", "Produce"),))] > 0
    assert samples[("kafka_network_requestmetrics_requests_total", (("request", "Fetch"),))] > 0
    assert samples[("kafka_network_requestmetrics_requests_total", (("request", "Metadata"),))] > 0
    assert samples[("kafka_network_requestmetrics_totaltime_seconds_count", (("request", "Produce"),))] > 0
    produced_bytes = sum(len(r.key) + len(r.value) for r in expected.records)
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", ())] >= produced_bytes
    assert samples[("kafka_server_brokertopicmetrics_bytesout_total", ())] >= produced_bytes
    for partition, count in counts.items():
        labels = (("partition", str(partition)), ("topic", topic))
        assert samples[("kafka_log_log_logendoffset", labels)] == count
        assert samples[("kafka_log_log_logstartoffset", labels)] == 0
        assert samples[("kafka_log_log_size", labels)] > 0

"""`BrokerMetrics`: the broker's Prometheus metrics, on a registry of its own.

Names follow what the Prometheus JMX exporter produces for Apache Kafka's MBeans, so dashboards carry over:
- `kafka_network_requestmetrics_requests_total{request}` and
  `kafka_network_requestmetrics_totaltime_seconds{request}` (histogram) per API;
- `kafka_server_brokertopicmetrics_bytesin_total`, `..._bytesout_total` (Produce request bytes in, Fetch
  response bytes out);
- per partition, read at scrape time: `kafka_log_log_size{topic,partition}` (bytes),
  `kafka_log_log_logendoffset` and `kafka_log_log_logstartoffset`.
Counters are updated from the event-loop thread; scrapes run in the HTTP task on the same loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from storage.unified_log import UnifiedLog

_LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class PartitionCollector(Collector):
    """Reads size and offsets of every partition log at scrape time."""

    def __init__(self, logs: Callable[[], Iterable[UnifiedLog]]) -> None:
        self._logs = logs

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Partition log size in bytes", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Partition log end offset", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Partition log start offset", labels=labels)
        for log in self._logs():
            key = [log.topic, str(log.partition)]
            size.add_metric(key, log.size_bytes)
            end.add_metric(key, log.log_end_offset)
            start.add_metric(key, log.log_start_offset)
        yield size
        yield end
        yield start


class BrokerMetrics:
    """Request, byte and partition metrics of one broker."""

    def __init__(self, logs: Callable[[], Iterable[UnifiedLog]]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kafka_network_requestmetrics_requests", "Requests handled, per API", ["request"], registry=self.registry
        )
        self.request_time = Histogram(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from a request's arrival to its response being queued, per API",
            ["request"],
            buckets=_LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.bytes_in = Counter(
            "kafka_server_brokertopicmetrics_bytesin", "Produce request bytes received", registry=self.registry
        )
        self.bytes_out = Counter(
            "kafka_server_brokertopicmetrics_bytesout", "Fetch response bytes sent", registry=self.registry
        )
        self.registry.register(PartitionCollector(logs))

    def observe_request(self, request_name: str, seconds: float) -> None:
        self.requests.labels(request_name).inc()
        self.request_time.labels(request_name).observe(seconds)

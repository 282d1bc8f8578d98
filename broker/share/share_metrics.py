"""Prometheus metrics of share groups (KIP-932), read at scrape time from the `ShareCoordinator` (same event loop):
Kafka's ShareSessionCache gauges (`kafka.server:type=ShareSessionCache,name=ShareSessionsCount|
SharePartitionsCount`), its SharePartitionMetrics (KIP-1103) in-flight gauges per share partition
(`InFlightMessageCount`, `InFlightBatchCount`), and, per share group, the records between each partition's start
and end offsets by state: in flight (available or acquired) and archived (rejected, over the delivery limit,
aborted), the gauge operators watch for poison records. Not thread-safe beyond prometheus_client's own locking."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from minikafka.broker.share.share_coordinator import ShareCoordinator

__all__ = ["ShareGroupCollector"]


class ShareGroupCollector(Collector):
    """Share sessions, share partitions and per-group record states, from the coordinator's read model when
    scraped."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self._coordinator = coordinator

    def collect(self) -> Iterator[GaugeMetricFamily]:
        model = self._coordinator.read_model()
        prefix = "kafka_server_sharesessioncache_"
        yield GaugeMetricFamily(prefix + "sharesessionscount", "Share sessions cached", value=model.share_sessions)
        yield GaugeMetricFamily(prefix + "sharepartitionscount", "Partitions over all share sessions",
                                value=model.share_session_partitions)
        labels = ["group", "topic", "partition"]
        messages = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightmessagecount",
                                     "Records in flight (not yet acknowledged or archived) of a share partition",
                                     labels=labels)
        batches = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightbatchcount",
                                    "In-flight batches of a share partition", labels=labels)
        per_group = GaugeMetricFamily("minikafka_share_group_records",
                                      "Records between the start and end offsets of a share group's partitions, by "
                                      "state (in_flight: available or acquired; archived)", labels=["group", "state"])
        totals: dict[str, dict[str, int]] = {g.group_id: {"in_flight": 0, "archived": 0} for g in model.groups}
        for summary in model.partitions:
            topic = "" if summary.topic == str(summary.topic_id) else summary.topic
            messages.add_metric([summary.group_id, topic, str(summary.partition)], summary.in_flight)
            batches.add_metric([summary.group_id, topic, str(summary.partition)], summary.in_flight_batches)
            group_totals = totals.setdefault(summary.group_id, {"in_flight": 0, "archived": 0})
            group_totals["in_flight"] += summary.in_flight
            group_totals["archived"] += summary.archived
        for group_id, counts in sorted(totals.items()):
            for state, value in counts.items():
                per_group.add_metric([group_id, state], value)
        yield messages
        yield batches
        yield per_group

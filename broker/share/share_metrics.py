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
from minikafka.broker.share.share_partition import SharePartition

__all__ = ["ShareGroupCollector", "record_counts"]


def record_counts(share_partition: SharePartition) -> tuple[int, int]:
    """(in flight, archived) records between a share partition's start and end offsets: in flight is available or
    acquired, archived is rejected, over the delivery limit or aborted."""
    return share_partition.in_flight_count(), share_partition.archived_count()


class ShareGroupCollector(Collector):
    """Share sessions, share partitions and per-group record states, computed when scraped."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self._coordinator = coordinator

    def collect(self) -> Iterator[GaugeMetricFamily]:
        manager = self._coordinator.partitions
        prefix = "kafka_server_sharesessioncache_"
        yield GaugeMetricFamily(prefix + "sharesessionscount", "Share sessions cached", value=len(manager.sessions))
        yield GaugeMetricFamily(prefix + "sharepartitionscount", "Partitions over all share sessions",
                                value=manager.sessions.total_partitions())
        labels = ["group", "topic", "partition"]
        messages = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightmessagecount",
                                     "Records in flight (not yet acknowledged or archived) of a share partition",
                                     labels=labels)
        batches = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightbatchcount",
                                    "In-flight batches of a share partition", labels=labels)
        per_group = GaugeMetricFamily("minikafka_share_group_records",
                                      "Records between the start and end offsets of a share group's partitions, by "
                                      "state (in_flight: available or acquired; archived)", labels=["group", "state"])
        names = {topic_id.bytes: name for name, (topic_id, _count) in self._coordinator.topics_image().items()}
        totals: dict[str, dict[str, int]] = {}
        for (group_id, _topic_id, partition), share_partition in sorted(manager.share_partitions.items(), key=str):
            in_flight, archived = record_counts(share_partition)
            topic = names.get(share_partition.topic_id, "")
            messages.add_metric([group_id, topic, str(partition)], in_flight)
            batches.add_metric([group_id, topic, str(partition)], share_partition.in_flight_batch_count())
            group_totals = totals.setdefault(group_id, {"in_flight": 0, "archived": 0})
            group_totals["in_flight"] += in_flight
            group_totals["archived"] += archived
        for group_id in self._coordinator.groups:
            totals.setdefault(group_id, {"in_flight": 0, "archived": 0})
        for group_id, counts in sorted(totals.items()):
            for state, value in counts.items():
                per_group.add_metric([group_id, state], value)
        yield messages
        yield batches
        yield per_group

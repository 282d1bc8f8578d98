"""Prometheus metrics of share groups (KIP-932), read at scrape time from the `ShareCoordinator` (same event loop):
Kafka's ShareSessionCache gauges (`kafka.server:type=ShareSessionCache,name=ShareSessionsCount|
SharePartitionsCount`), its SharePartitionMetrics (KIP-1103) in-flight gauges per topic partition
(`InFlightMessageCount`, `InFlightBatchCount`), and the records between share partitions' start and end offsets by
state: in flight (available or acquired) and archived (rejected, over the delivery limit, aborted), the gauge
operators watch for poison records. Kafka tags SharePartitionMetrics with the group; here the sums over every share
group stand instead, because `/metrics` needs no credentials and shows no group id (docs/security.md): a group's own
counts are on the console's front page, for principals that may DESCRIBE the group. Not thread-safe beyond
prometheus_client's own locking."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from minikafka.broker.share.share_coordinator import ShareCoordinator
from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_types import RecordState

__all__ = ["ShareGroupCollector", "record_counts"]


def record_counts(share_partition: SharePartition) -> tuple[int, int]:
    """(in flight, archived) records between a share partition's start and end offsets: in flight is available or
    acquired, archived is rejected, over the delivery limit or aborted."""
    states = [state for view in share_partition.in_flight_batches() for state, _count, _member in view.states]
    return sum(1 for state in states if not state.terminal), sum(1 for state in states if state is RecordState.ARCHIVED)


class ShareGroupCollector(Collector):
    """Share sessions, share partitions and record states over every share group, computed when scraped."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self._coordinator = coordinator

    def collect(self) -> Iterator[GaugeMetricFamily]:
        manager = self._coordinator.partitions
        prefix = "kafka_server_sharesessioncache_"
        yield GaugeMetricFamily(prefix + "sharesessionscount", "Share sessions cached", value=len(manager.sessions))
        yield GaugeMetricFamily(prefix + "sharepartitionscount", "Partitions over all share sessions",
                                value=manager.sessions.total_partitions())
        labels = ["topic", "partition"]
        messages = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightmessagecount",
                                     "Records in flight (not yet acknowledged or archived) of a partition's share "
                                     "partitions, over every share group", labels=labels)
        batches = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightbatchcount",
                                    "In-flight batches of a partition's share partitions, over every share group",
                                    labels=labels)
        per_state = GaugeMetricFamily("minikafka_share_group_records",
                                      "Records between the start and end offsets of the share groups' partitions, by "
                                      "state (in_flight: available or acquired; archived), over every share group",
                                      labels=["state"])
        names = {topic_id.bytes: name for name, (topic_id, _count) in self._coordinator.topics_image().items()}
        per_partition: dict[tuple[str, str], list[int]] = {}
        totals = {"in_flight": 0, "archived": 0}
        for (_group_id, _topic_id, partition), share_partition in manager.share_partitions.items():
            in_flight, archived = record_counts(share_partition)
            counts = per_partition.setdefault((names.get(share_partition.topic_id, ""), str(partition)), [0, 0])
            counts[0] += in_flight
            counts[1] += len(share_partition.in_flight_batches())
            totals["in_flight"] += in_flight
            totals["archived"] += archived
        for key, (in_flight, batch_count) in sorted(per_partition.items()):
            messages.add_metric(list(key), in_flight)
            batches.add_metric(list(key), batch_count)
        for state, value in totals.items():
            per_state.add_metric([state], value)
        yield messages
        yield batches
        yield per_state

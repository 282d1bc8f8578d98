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

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from minikafka.broker.share.share_coordinator import ShareCoordinator

__all__ = ["ShareGroupCollector"]


class ShareGroupCollector(Collector):
    """Share sessions, share partitions and record states over every share group, from the coordinator's read model
    when scraped; every family is served (at zero) before the coordinators are built (broker/lazy_coordinators.py)."""

    def __init__(self, coordinator: Callable[[], ShareCoordinator | None]) -> None:
        self._coordinator = coordinator

    def collect(self) -> Iterator[GaugeMetricFamily]:
        coordinator = self._coordinator()
        model = coordinator.read_model() if coordinator is not None else None
        prefix = "kafka_server_sharesessioncache_"
        yield GaugeMetricFamily(prefix + "sharesessionscount", "Share sessions cached",
                                value=model.share_sessions if model is not None else 0)
        yield GaugeMetricFamily(prefix + "sharepartitionscount", "Partitions over all share sessions",
                                value=model.share_session_partitions if model is not None else 0)
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
        per_partition: dict[tuple[str, str], list[int]] = {}
        totals = {"in_flight": 0, "archived": 0}
        for summary in model.partitions if model is not None else ():
            topic = "" if summary.topic == str(summary.topic_id) else summary.topic
            counts = per_partition.setdefault((topic, str(summary.partition)), [0, 0])
            counts[0] += summary.in_flight
            counts[1] += summary.in_flight_batches
            totals["in_flight"] += summary.in_flight
            totals["archived"] += summary.archived
        for key, (in_flight, batch_count) in sorted(per_partition.items()):
            messages.add_metric(list(key), in_flight)
            batches.add_metric(list(key), batch_count)
        for state, value in totals.items():
            per_state.add_metric([state], value)
        yield messages
        yield batches
        yield per_state

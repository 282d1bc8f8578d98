"""`BrokerMetrics`: the broker's Prometheus metrics, on a registry of its own.

Names follow what the Prometheus JMX exporter produces for Apache Kafka's MBeans, so dashboards carry over:
- `kafka_network_requestmetrics_requests_total{request}` and
  `kafka_network_requestmetrics_totaltime_seconds{request}` (histogram) per API;
- `kafka_server_brokertopicmetrics_bytesin_total`, `..._bytesout_total` (Produce request bytes in, Fetch
  response bytes out);
- per partition, read at scrape time: `kafka_log_log_size{topic,partition}` (bytes),
  `kafka_log_log_logendoffset` and `kafka_log_log_logstartoffset`;
- the log dir (`LogManagerCollector`): `kafka_log_logmanager_offlinelogdirectorycount` and
  `kafka_log_logmanager_logdirectoryoffline{logDirectory}` (1 once an I/O error took it offline).
- the log cleaner (`LogCleanerCollector`, registered by `register_log_cleaner`): Kafka's LogCleaner and
  LogCleanerManager gauges under the JMX exporter's names (spec §3.1 formulas) and per-partition gauges
  `minikafka_log_cleaner_*{topic,partition}`; see the docs site's metrics reference (generated from this registry).
- fetch sessions (`FetchSessionCollector`, registered by `register_fetch_sessions`): Kafka's FetchSessionCache
  metrics `kafka_server_fetchsessioncache_numincrementalfetchsessions`, `..._numincrementalfetchpartitionscached`
  and `..._incrementalfetchsessionevictions_total` (IncrementalFetchSessionEvictionsPerSec), plus
  `minikafka_fetch_context_requests_total{context}`: Fetch requests by how they were served (sessionless, full,
  incremental, session_error).
The per-request numbers (request counts and times, bytes in and out) are plain numbers in a loop-owned `RequestStats`,
turned into Prometheus families only when scraped: prometheus_client's Counter and Histogram take a lock and walk
the buckets in Python on every update, ~7% of a Produce request's in-process CPU (`bench.produce_path`). A scrape
renders the registry in a worker thread (the log and cleaner collectors read files); collectors of loop-owned state
(request stats, fetch sessions, share groups) are wrapped in a `LoopSnapshotCollector`, whose families are built on
the loop by `publish_loop_snapshots` just before, and only read in the thread.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate

from prometheus_client.metrics import Counter
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from minikafka.broker.fetch_manager import FetchManager
from minikafka.broker.loop_owner import assert_on_loop
from minikafka.cleaner.cleaner_metrics import PartitionCleaningStatus
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog

_LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class RequestStats:
    """Owns the per-API request counts and total-time histograms and the Produce/Fetch byte counters of one broker,
    as plain numbers (event-loop thread only: the dispatcher updates them for every request). `RequestStatsCollector`
    reads them at scrape time, on the loop."""

    __slots__ = ("bucket_bounds_s", "by_request", "bytes_in", "bytes_out")

    def __init__(self, bucket_bounds_s: tuple[float, ...]) -> None:
        self.bucket_bounds_s = bucket_bounds_s
        #: request name -> [sum of seconds, then one count per bucket: v <= bound (`le`), the last one +Inf]
        self.by_request: dict[str, list[float]] = {}
        self.bytes_in = 0
        self.bytes_out = 0

    def observe(self, request_name: str, seconds: float) -> None:
        entry = self.by_request.get(request_name)
        if entry is None:
            entry = self.by_request[request_name] = [0.0] * (len(self.bucket_bounds_s) + 2)
        entry[0] += seconds
        entry[1 + bisect_left(self.bucket_bounds_s, seconds)] += 1


class RequestStatsCollector(Collector):
    """Kafka's RequestMetrics (RequestsPerSec, TotalTimeMs) and BrokerTopicMetrics (BytesInPerSec, BytesOutPerSec)
    from a `RequestStats`, under the JMX exporter's names: loop-owned, so registered through
    `BrokerMetrics.register_loop_owned`."""

    def __init__(self, stats: RequestStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        stats = self._stats
        requests = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests handled, per API",
                                       labels=["request"])
        total_time = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from a request's arrival to its response being queued, per API", labels=["request"])
        bounds = [*map(floatToGoString, stats.bucket_bounds_s), "+Inf"]
        for name, (sum_s, *counts) in stats.by_request.items():
            cumulative = list(accumulate(int(count) for count in counts))
            requests.add_metric([name], cumulative[-1])
            total_time.add_metric([name], list(zip(bounds, cumulative)), sum_s)
        yield requests
        yield total_time
        yield CounterMetricFamily("kafka_server_brokertopicmetrics_bytesin", "Produce request bytes received",
                                  value=stats.bytes_in)
        yield CounterMetricFamily("kafka_server_brokertopicmetrics_bytesout", "Fetch response bytes sent",
                                  value=stats.bytes_out)


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


class LogManagerCollector(Collector):
    """Kafka's LogManager gauges for the (single) log dir, read at scrape time: OfflineLogDirectoryCount and
    LogDirectoryOffline{logDirectory}, which turn 1 when an I/O error has taken the log dir offline."""

    def __init__(self, log_manager: LogManager) -> None:
        self._log_manager = log_manager

    def collect(self) -> Iterator[GaugeMetricFamily]:
        offline = int(self._log_manager.offline_reason is not None)
        yield GaugeMetricFamily("kafka_log_logmanager_offlinelogdirectorycount",
                                "Log directories taken offline by an I/O error", value=offline)
        per_dir = GaugeMetricFamily("kafka_log_logmanager_logdirectoryoffline",
                                    "1 if the log directory is offline, else 0", labels=["logDirectory"])
        per_dir.add_metric([str(self._log_manager.log_dir)], offline)
        yield per_dir


class LogCleanerCollector(Collector):
    """Reads the cleaner's gauges at scrape time (the cleaner's methods are thread-safe)."""

    def __init__(self, cleaner: LogCleaner, log_dir: str) -> None:
        self._cleaner = cleaner
        self._log_dir = log_dir

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        statuses = self._cleaner.partition_status()
        m = self._cleaner.metrics(statuses)
        for name, value, doc in (
            ("kafka_log_logcleaner_max_buffer_utilization_percent", m.max_buffer_utilization_percent,
             "Highest offset-map fill of the threads' last rounds, percent"),
            ("kafka_log_logcleaner_cleaner_recopy_percent", m.cleaner_recopy_percent,
             "Bytes written / bytes read over the threads' last rounds, percent"),
            ("kafka_log_logcleaner_max_clean_time_secs", m.max_clean_time_secs,
             "Longest duration of the threads' last rounds, seconds"),
            ("kafka_log_logcleaner_max_compaction_delay_secs", m.max_compaction_delay_secs,
             "KIP-354: how far past max.compaction.lag.ms the most overdue partition was at the last grab"),
            ("kafka_log_logcleaner_deadthreadcount", m.dead_thread_count, "Cleaner threads that died"),
            ("kafka_log_logcleanermanager_max_dirty_percent", m.max_dirty_percent,
             "Highest dirty ratio among cleanable partitions at the last grab, percent"),
            ("kafka_log_logcleanermanager_time_since_last_run_ms", m.time_since_last_run_ms,
             "Milliseconds since a cleaner thread last looked for a partition to clean"),
        ):
            yield GaugeMetricFamily(name, doc, value=value)
        for name, value, doc in (
            ("kafka_log_logcleanermanager_uncleanable_partitions_count", m.uncleanable_partitions_count,
             "Partitions marked uncleanable after their retries"),
            ("kafka_log_logcleanermanager_uncleanable_bytes", m.uncleanable_bytes,
             "Cleanable bytes of the uncleanable partitions"),
        ):
            family = GaugeMetricFamily(name, doc, labels=["logDirectory"])
            family.add_metric([self._log_dir], value)
            yield family
        yield CounterMetricFamily("kafka_utils_throttler_cleaner_io", "Bytes read and written by the cleaner",
                                  value=m.cleaner_io_bytes)
        yield from self._partition_families(statuses)

    def _partition_families(self, statuses: list[PartitionCleaningStatus]) -> Iterator[
            GaugeMetricFamily | CounterMetricFamily]:
        labels = ["topic", "partition"]
        prefix = "minikafka_log_cleaner_"
        ratio = GaugeMetricFamily(prefix + "dirty_ratio", "Cleanable (dirty) bytes / total, as the grab sees it",
                                  labels=labels)
        dirty = GaugeMetricFamily(prefix + "dirty_bytes", "Bytes in the cleanable dirty section", labels=labels)
        delay = GaugeMetricFamily(prefix + "compaction_delay_seconds",
                                  "How far past max.compaction.lag.ms the oldest dirty closed segment is",
                                  labels=labels)
        max_lag = GaugeMetricFamily(prefix + "max_compaction_lag_seconds", "The topic's max.compaction.lag.ms",
                                    labels=labels)
        since = GaugeMetricFamily(prefix + "seconds_since_last_clean",
                                  "Seconds since the last completed round (-1: never since startup)", labels=labels)
        tombstones = GaugeMetricFamily(prefix + "tombstones_pending",
                                       "Tombstones kept by the last round, awaiting delete.retention.ms",
                                       labels=labels)
        records = CounterMetricFamily(prefix + "records_removed", "Records removed by cleaning", labels=labels)
        removed = CounterMetricFamily(prefix + "bytes_removed", "Bytes removed by cleaning", labels=labels)
        now_ms = self._cleaner.clock.time_ms()
        for s in statuses:
            key = [s.topic, str(s.partition)]
            ratio.add_metric(key, s.dirty_ratio)
            dirty.add_metric(key, s.dirty_bytes)
            delay.add_metric(key, s.compaction_delay_ms / 1000)
            max_lag.add_metric(key, s.max_compaction_lag_ms / 1000)
            last = s.record.last_clean_ms
            since.add_metric(key, -1 if last is None else (now_ms - last) / 1000)
            tombstones.add_metric(key, s.record.tombstones_pending)
            records.add_metric(key, s.record.records_removed)
            removed.add_metric(key, s.record.bytes_removed)
        failing = GaugeMetricFamily(
            prefix + "partition_failures",
            "Failed rounds of a partition; uncleanable=\"true\" once its retries are exhausted",
            labels=[*labels, "reason", "uncleanable"])
        for (topic, partition), mark in sorted(self._cleaner.manager.uncleanable_partitions().items()):
            failing.add_metric([topic, str(partition), mark.reason[:200], str(mark.permanent).lower()],
                               mark.failures)
        yield from (ratio, dirty, delay, max_lag, since, tombstones, records, removed, failing)


class FetchSessionCollector(Collector):
    """Reads the fetch session cache and the fetch-context counts at scrape time: loop-owned, so registered through
    `BrokerMetrics.register_loop_owned`."""

    CONTEXTS = ("sessionless", "full", "incremental", "session_error")

    def __init__(self, manager: FetchManager) -> None:
        self._manager = manager

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        cache = self._manager.cache
        prefix = "kafka_server_fetchsessioncache_"
        yield GaugeMetricFamily(prefix + "numincrementalfetchsessions", "Incremental fetch sessions cached",
                                value=len(cache))
        yield GaugeMetricFamily(prefix + "numincrementalfetchpartitionscached",
                                "Partitions cached over all incremental fetch sessions", value=cache.total_partitions)
        yield CounterMetricFamily(prefix + "incrementalfetchsessionevictions",
                                  "Fetch sessions evicted to make room for new ones (Kafka's "
                                  "IncrementalFetchSessionEvictionsPerSec)", value=cache.evictions)
        contexts = CounterMetricFamily("minikafka_fetch_context_requests",
                                       "Fetch requests by the fetch context that served them", labels=["context"])
        for kind in self.CONTEXTS:
            contexts.add_metric([kind], self._manager.contexts[kind])
        yield contexts


class LoopSnapshotCollector(Collector):
    """Serves the families a loop-owned collector built at the last `publish()` (event loop only); `collect` may run
    in any thread, since it only hands out that immutable list."""

    def __init__(self, source: Collector) -> None:
        self._source = source
        self._families: list[Metric] = []

    def publish(self) -> None:
        assert_on_loop(type(self._source).__name__)
        self._families = list(self._source.collect())

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # names are not known before the first publish; register must not collect on its own


class BrokerMetrics:
    """Request, byte and partition metrics of one broker."""

    def __init__(self, logs: Callable[[], Iterable[UnifiedLog]]) -> None:
        self.registry = CollectorRegistry()
        self._loop_snapshots: list[LoopSnapshotCollector] = []
        #: updated by the dispatcher for every request (event loop only)
        self.request_stats = RequestStats(_LATENCY_BUCKETS_S)
        self.register_loop_owned(RequestStatsCollector(self.request_stats))
        self.no_key_compacted_topic_records = Counter(
            "kafka_server_brokertopicmetrics_nokeycompactedtopicrecords",
            "Records without a key rejected by compacted topics (Kafka's NoKeyCompactedTopicRecordsPerSec)",
            registry=self.registry,
        )
        self.registry.register(PartitionCollector(logs))

    def register_log_manager(self, log_manager: LogManager) -> None:
        self.registry.register(LogManagerCollector(log_manager))

    def register_log_cleaner(self, cleaner: LogCleaner, log_dir: str) -> None:
        self.registry.register(LogCleanerCollector(cleaner, log_dir))

    def register_fetch_sessions(self, manager: FetchManager) -> None:
        self.register_loop_owned(FetchSessionCollector(manager))

    def register_loop_owned(self, collector: Collector) -> None:
        """Register a collector of loop-owned state: it runs on the loop, in `publish_loop_snapshots`."""
        snapshot = LoopSnapshotCollector(collector)
        self._loop_snapshots.append(snapshot)
        self.registry.register(snapshot)

    def publish_loop_snapshots(self) -> None:
        """Build the loop-owned collectors' families (event loop only; the admin port calls it before a scrape)."""
        for snapshot in self._loop_snapshots:
            snapshot.publish()

"""The Grafana dashboard in docker/grafana/ against a live broker's `/metrics`, so the dashboard cannot drift from
broker/metrics.py.

Every metric name that a panel's PromQL or a template variable's `label_values(...)` uses must be a sample name in
a real broker's Prometheus exposition after Produce, Fetch and log-cleaner traffic on a compacted topic (histograms
as `_bucket`/`_sum`/`_count`, counters as `_total`), and every label it matches, groups by or puts in a legend must
be a label of those samples. Names come out of the PromQL through a small extractor: string literals, label
matchers, range selectors, grouping clauses, Grafana variables and numbers are stripped, and an identifier before
`(` must be a known PromQL function or aggregation. The compose and provisioning files are read as text (no YAML
parser is installed, no Docker engine is needed). The image's healthcheck is tested in test_container_config.py
and test_container.py; what Prometheus answers for each query in test_dashboard_prometheus.py.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(120)

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
COMPOSE = DOCKER_DIR / "compose.yaml"
GRAFANA_DIR = DOCKER_DIR / "grafana"
DASHBOARD = GRAFANA_DIR / "dashboards" / "minikafka.json"
DATASOURCES = GRAFANA_DIR / "provisioning" / "datasources" / "prometheus.yaml"
DASHBOARD_PROVIDERS = GRAFANA_DIR / "provisioning" / "dashboards" / "minikafka.yaml"

TOPIC = "dashboard-compacted"
PARTITIONS = 2
KEYS = 10
# Rolled after 200 ms and cleaned at any dirty ratio; tombstones stay (delete.retention.ms) so some are pending.
COMPACTED_TOPIC_CONFIG = {
    "cleanup.policy": "compact", "segment.ms": "200", "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "600000", "max.compaction.lag.ms": "60000",
}
BROKER_CONFIG = {"log.cleaner.backoff.ms": 100, "minikafka.log.roll.check.interval.ms": 100}
MIN_DASHBOARD_METRICS = 20
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = frozenset({"instance", "job"})

# ------------------------------------------------------------------------------------------ PromQL names

PROMQL_FUNCTIONS = frozenset({
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time", "ceil",
    "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "day_of_month", "day_of_week",
    "day_of_year", "days_in_month", "deg", "delta", "deriv", "double_exponential_smoothing", "exp", "floor",
    "histogram_avg", "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
    "histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase", "info", "irate", "label_join",
    "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time",
    "minute", "month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
    "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt",
    "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
    # `@ start()` / `@ end()` modifiers
    "start", "end",
})
PROMQL_AGGREGATIONS = frozenset({
    "avg", "bottomk", "count", "count_values", "group", "limit_ratio", "limitk", "max", "min", "quantile", "stddev",
    "stdvar", "sum", "topk",
})
PROMQL_KEYWORDS = frozenset({
    "and", "or", "unless", "atan2", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right",
    "inf", "nan",
})

_STRING = re.compile(r'"(?:\\.|[^"\\])*"' r"|'(?:\\.|[^'\\])*'" r"|`[^`]*`")
_MATCHERS = re.compile(r"\{([^{}]*)\}")
_MATCHER_LABEL = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
# Grafana's variable query: label_values(label) or label_values(selector, label); the label is no metric.
_LABEL_VALUES = re.compile(r"\blabel_values\s*\(\s*(?:(?P<selector>[A-Za-z_:][\w:]*)\s*,\s*)?(?P<label>\w+)\s*\)")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)", re.IGNORECASE)
_GRAFANA_VARIABLE = re.compile(r"\$\{[^{}]*\}|\$\w+")
# A number or duration (`0.99`, `1e15`, `5m`, `0x1f`) is consumed whole, so its letters never read as names.
_TOKEN = re.compile(r"\d[\w.]*|(?P<name>[A-Za-z_:][\w:]*)(?P<call>\s*\()?")
_LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass
class PromQLNames:
    """The metric names and label names one PromQL expression (or Grafana variable query) refers to."""

    metrics: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)


def promql_names(expr: str) -> PromQLNames:
    """Metric and label names in `expr`; raises ValueError for a call to an unknown function or `__name__`."""
    names = PromQLNames()
    text = _STRING.sub('""', expr)
    for matchers in _MATCHERS.findall(text):
        names.labels.update(_MATCHER_LABEL.findall(matchers))
    if "__name__" in names.labels:
        raise ValueError(f"name the metric instead of matching __name__: {expr!r}")
    text = _MATCHERS.sub(" ", text)
    for match in _LABEL_VALUES.finditer(text):
        names.labels.add(match["label"])
    text = _LABEL_VALUES.sub(lambda match: f" {match['selector'] or ''} ", text)
    text = _RANGE.sub(" ", text)
    for labels in _LABEL_LIST.findall(text):
        names.labels.update(label.strip() for label in labels.split(",") if label.strip())
    text = _LABEL_LIST.sub(" ", text)
    text = _GRAFANA_VARIABLE.sub(" ", text)
    for token in _TOKEN.finditer(text):
        name = token["name"]
        if name is None or name.lower() in PROMQL_KEYWORDS:
            continue
        if token["call"]:
            if name not in PROMQL_FUNCTIONS and name.lower() not in PROMQL_AGGREGATIONS:
                raise ValueError(f"unknown PromQL function {name!r} in {expr!r}")
            continue
        names.metrics.add(name)
    return names


@pytest.mark.parametrize(("expr", "metrics", "labels"), [
    ('histogram_quantile(0.99, sum by (request, le) (rate(a_seconds_bucket{request=~"$request"}[$__rate_interval])))',
     {"a_seconds_bucket"}, {"request", "le"}),
    ("sum(rate(a_total[5m] offset 1h)) BY (topic) / on (topic) group_left b_total", {"a_total", "b_total"}, {"topic"}),
    ('c_bytes{reason="sum(d_total) by (x)", topic!~"t.*"} < 1e15 and c_bytes > -0.5', {"c_bytes"},
     {"reason", "topic"}),
    ('label_values(e_size{topic=~"$topic", partition!=""}, partition)', {"e_size"}, {"topic", "partition"}),
    ("label_values(topic)", set(), {"topic"}),
    ("max_over_time(f_ms[$__range:1m]) / 1000 + scalar(g_up)", {"f_ms", "g_up"}, set()),
])
def test_promql_names(expr: str, metrics: set[str], labels: set[str]) -> None:
    names = promql_names(expr)
    assert (names.metrics, names.labels) == (metrics, labels)


@pytest.mark.parametrize("expr", ["rat(a_total[5m])", '{__name__="a_total"}'])
def test_promql_names_rejects_what_it_cannot_check(expr: str) -> None:
    with pytest.raises(ValueError):
        promql_names(expr)


# ------------------------------------------------------------------------------------------ the dashboard


def load_dashboard() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard


def iter_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel that queries, including those inside (collapsed) rows; rows themselves are skipped."""
    for panel in panels:
        if panel.get("type") == "row":
            yield from iter_panels(panel.get("panels", []))
        else:
            yield panel


def dashboard_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(where, PromQL, legend format) of every panel target and every query variable."""
    for panel in iter_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} target {target['refId']}", target["expr"], target.get("legendFormat", "")
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]
            yield f"variable ${variable['name']}", query["query"] if isinstance(query, dict) else query, ""


def provisioned_datasource_uid() -> str:
    match = re.search(r"^\s*uid:\s*(\S+)\s*$", DATASOURCES.read_text(), re.MULTILINE)
    assert match is not None, f"{DATASOURCES} gives the data source no uid"
    return match[1].strip("\"'")


def test_every_panel_queries_the_provisioned_prometheus() -> None:
    dashboard = load_dashboard()
    uid = provisioned_datasource_uid()
    panels = list(iter_panels(dashboard["panels"]))
    assert len(panels) >= 20
    assert len({panel["id"] for panel in panels}) == len(panels), "panel ids are unique"
    for panel in panels:
        where = f"panel {panel['title']!r}"
        assert panel["type"] in {"timeseries", "stat", "table"}, where
        assert panel.get("targets"), f"{where} has no target"
        assert panel["datasource"]["uid"] == uid, where
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == uid, where
            assert target["expr"].strip(), f"{where} target {target['refId']} has no expr"
            assert promql_names(target["expr"]).metrics, f"{where} target {target['refId']} names no metric"


# ------------------------------------------------------------------------------------------ compose and provisioning


def compose_service(name: str) -> list[str]:
    """The lines of one service under `services:` in compose.yaml (2-space indented keys)."""
    lines = COMPOSE.read_text().splitlines()
    start = lines.index(f"  {name}:") + 1
    block: list[str] = []
    for line in lines[start:]:
        if line.strip() and not line.lstrip().startswith("#") and len(line) - len(line.lstrip()) <= 2:
            break
        block.append(line)
    return block


def test_compose_runs_grafana_next_to_prometheus_with_the_provisioning() -> None:
    grafana = "\n".join(compose_service("grafana"))
    compose_service("prometheus")  # the data source's host
    assert "http://prometheus:9090" in DATASOURCES.read_text()
    assert re.search(r"depends_on:\s*\n\s*- prometheus\b", grafana)
    mounts = dict(re.findall(r"^\s*- \./(\S+?):(/\S+?)(?::ro)?\s*$", grafana, re.MULTILINE))
    for source in mounts:
        assert (DOCKER_DIR / source).is_dir(), f"compose mounts missing docker/{source}"
    assert mounts["grafana/provisioning"] == "/etc/grafana/provisioning"
    provider_path = re.search(r"^\s*path:\s*(\S+)\s*$", DASHBOARD_PROVIDERS.read_text(), re.MULTILINE)
    assert provider_path is not None
    assert mounts["grafana/dashboards"] == provider_path[1], "the dashboard provider reads the mounted folder"
    home = re.search(r"GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH:\s*(\S+)", grafana)
    assert home is not None and home[1] == f"{provider_path[1]}/{DASHBOARD.name}"
    assert "GF_AUTH_ANONYMOUS_ENABLED" in grafana


# ------------------------------------------------------------------------------------------ the live broker


@dataclass
class Exposition:
    """Sample names of one scrape with the label names seen on them; a family declared without samples (a gauge
    with nothing to report yet, like `minikafka_log_cleaner_partition_failures`) maps its sample name to None."""

    samples: dict[str, set[str] | None]

    @classmethod
    def parse(cls, text: str) -> Exposition:
        samples: dict[str, set[str] | None] = {}
        for family in text_string_to_metric_families(text):
            if not family.samples and family.type in {"gauge", "counter", "unknown"}:
                samples[family.name + ("_total" if family.type == "counter" else "")] = None
            for sample in family.samples:
                labels = samples.get(sample.name) or set()
                samples[sample.name] = labels | set(sample.labels)
        return cls(samples)


def scrape(kafka: MiniKafka) -> str:
    with urllib.request.urlopen(kafka.metrics_url, timeout=10) as response:
        assert response.status == 200
        text: str = response.read().decode()
        return text


def removed_records(kafka: MiniKafka) -> float:
    return sum(sample.value for family in text_string_to_metric_families(scrape(kafka))
               for sample in family.samples
               if sample.name == "minikafka_log_cleaner_records_removed_total" and sample.labels["topic"] == TOPIC)


def produce_fetch_and_compact(kafka: MiniKafka) -> None:
    """Produce overwrites and tombstones to a compacted topic, wait for the LogCleaner to remove records, Fetch."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    created = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config=COMPACTED_TOPIC_CONFIG)],
                                  operation_timeout=10)
    created[TOPIC].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for partition in range(PARTITIONS):
        for version in range(5):
            for key in range(KEYS):
                producer.produce(TOPIC, key=f"k{key}".encode(), value=f"v{version}".encode() * 20,
                                 partition=partition)
        for key in range(3):
            producer.produce(TOPIC, key=f"k{key}".encode(), value=None, partition=partition)
    assert producer.flush(30) == 0

    deadline = time.monotonic() + 30
    while removed_records(kafka) == 0:
        assert time.monotonic() < deadline, f"the cleaner removed nothing from {TOPIC}:\n{kafka.log_tail()}"
        time.sleep(0.1)

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "dashboard-test",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        consumer.assign([TopicPartition(TOPIC, partition, OFFSET_BEGINNING) for partition in range(PARTITIONS)])
        fetched = 0
        deadline = time.monotonic() + 15
        while fetched == 0:
            assert time.monotonic() < deadline, "nothing fetched from the compacted topic"
            fetched += sum(1 for message in consumer.consume(num_messages=1000, timeout=0.2) if not message.error())
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def live_broker() -> Iterator[MiniKafka]:
    with MiniKafka(BROKER_CONFIG) as kafka:
        produce_fetch_and_compact(kafka)
        yield kafka


def test_dashboard_queries_only_metrics_the_broker_exports(live_broker: MiniKafka) -> None:
    exposition = Exposition.parse(scrape(live_broker))
    used: dict[str, str] = {}
    problems: list[str] = []
    for where, expr, legend in dashboard_queries(load_dashboard()):
        names = promql_names(expr)
        for metric in names.metrics:
            used.setdefault(metric, where)
        missing = sorted(names.metrics - exposition.samples.keys())
        if missing:
            problems.append(f"{where}: no sample named {', '.join(missing)} in /metrics")
            continue
        label_sets = [exposition.samples[metric] for metric in names.metrics]
        if any(labels is None for labels in label_sets):
            continue  # a declared family without samples: its labels are not visible
        known = set().union(*(labels for labels in label_sets if labels is not None)) | TARGET_LABELS
        unknown = sorted((names.labels | set(_LEGEND_LABEL.findall(legend))) - known)
        if unknown:
            problems.append(f"{where}: label(s) {', '.join(unknown)} not on {', '.join(sorted(names.metrics))}")
    assert not problems, "the dashboard drifted from the broker's metrics:\n" + "\n".join(problems)
    assert len(used) >= MIN_DASHBOARD_METRICS, f"only {sorted(used)} found in the dashboard's queries"
    # The traffic reached the labelled series the compaction panels plot.
    assert "kafka_network_requestmetrics_totaltime_seconds_bucket" in used
    assert {"request", "le"} <= (exposition.samples["kafka_network_requestmetrics_totaltime_seconds_bucket"] or set())
    assert {"topic", "partition"} <= (exposition.samples["minikafka_log_cleaner_dirty_ratio"] or set())

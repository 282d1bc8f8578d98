"""The Grafana dashboard against a real Prometheus: Debian's `prometheus` scrapes a live broker with
docker/prometheus.yml's job, and after Produce, Fetch and log-cleaner traffic (a compacted topic cleaned, another
whose segment is corrupt so its cleaning fails) every query of docker/grafana/dashboards/minikafka.json returns at
least one series from Prometheus's HTTP API.

Grafana's variables are replaced as Grafana would with "All" selected (`allValue`), `$__rate_interval` and
`$__range` by a window that covers every scrape. The scrape job is the file's, with the compose host name
replaced by the broker's address and the interval shortened so that rates have samples within seconds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka
from minikafka.testing.mini_kafka import free_port
from tests.docker.test_grafana_dashboard import (
    BROKER_CONFIG,
    DOCKER_DIR,
    dashboard_queries,
    load_dashboard,
    produce_fetch_and_compact,
    scrape,
)

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.timeout(180)

PROMETHEUS_YML = DOCKER_DIR / "prometheus.yml"
SCRAPE_INTERVAL = "1s"
# Longer than the whole test: every scrape since Prometheus started is in the window.
WINDOW = "5m"
FAILING_TOPIC = "dashboard-corrupt"
_LABEL_VALUES = re.compile(r"^\s*label_values\s*\(\s*(?:(?P<selector>.+?)\s*,\s*)?(?P<label>\w+)\s*\)\s*$")


def prometheus_config(metrics_address: str) -> str:
    """docker/prometheus.yml with the broker's address for compose's `minikafka:9404` and a 1 s interval."""
    text = PROMETHEUS_YML.read_text()
    config, targets = re.subn(r'"minikafka:9404"', f'"{metrics_address}"', text)
    config, intervals = re.subn(r"scrape_interval:\s*\S+", f"scrape_interval: {SCRAPE_INTERVAL}", config)
    assert (targets, intervals) == (1, 1), f"{PROMETHEUS_YML} no longer has one target and one interval:\n{text}"
    assert re.search(r"job_name:\s*minikafka\b", config)
    return config


@dataclass
class Prometheus:
    url: str

    def get(self, path: str, **params: str | list[str]) -> Any:
        query = urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.get("/api/v1/query", query=expr)
        result: list[dict[str, Any]] = data["result"] if data["resultType"] in ("vector", "matrix") else [data]
        return result


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniKafka]:
    if PROMETHEUS is None:
        pytest.skip("Debian's prometheus is not installed (apt-get install prometheus)")
    with MiniKafka(BROKER_CONFIG) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def prometheus(broker: MiniKafka, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    assert PROMETHEUS is not None  # the broker fixture skips without it
    workdir = tmp_path_factory.mktemp("prometheus")
    (workdir / "prometheus.yml").write_text(prometheus_config(f"127.0.0.1:{broker.metrics_port}"))
    port = free_port()
    with (workdir / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    server = Prometheus(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while not (_ready(server) and server.query('up{job="minikafka"} == 1')):
            assert process.poll() is None, (workdir / "prometheus.log").read_text()
            assert time.monotonic() < deadline, (workdir / "prometheus.log").read_text()
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        process.wait(30)


def _ready(server: Prometheus) -> bool:
    try:
        with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def corrupt_a_compacted_segment(kafka: MiniKafka) -> None:
    """A compacted topic whose first segment is damaged on disk: its cleaning fails, which is what the dashboard's
    "Failing and uncleanable partitions" table shows."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    config = {"cleanup.policy": "compact", "segment.ms": "200", "min.cleanable.dirty.ratio": "0.01"}
    admin.create_topics([NewTopic(FAILING_TOPIC, 1, 1, config=config)])[FAILING_TOPIC].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})

    def produce(value: bytes) -> None:
        for n in range(50):
            producer.produce(FAILING_TOPIC, key=b"k%d" % (n % 5), value=value)
        assert producer.flush(30) == 0

    produce(b"x" * 100)
    segment = min((kafka.data_dir / f"{FAILING_TOPIC}-0").glob("*.log"))
    with segment.open("r+b") as file:
        file.seek(70)  # inside the first batch's records, past its 61-byte header
        file.write(b"\xff" * 8)
    time.sleep(0.5)  # the segment is rolled (segment.ms) once the next batch arrives
    produce(b"y" * 100)
    deadline = time.monotonic() + 30
    while not any(line.startswith("minikafka_log_cleaner_partition_failures{") and f'topic="{FAILING_TOPIC}"' in line
                  for line in scrape(kafka).splitlines()):
        assert time.monotonic() < deadline, f"cleaning {FAILING_TOPIC} did not fail:\n{kafka.log_tail()}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def scraped_workload(broker: MiniKafka, prometheus: Prometheus) -> Prometheus:
    """Prometheus after the workload and a few more scrapes of it."""
    produce_fetch_and_compact(broker)
    corrupt_a_compacted_segment(broker)
    scrapes = f'count_over_time(up{{job="minikafka"}}[{WINDOW}])'
    first = float(prometheus.query(scrapes)[0]["value"][1])
    deadline = time.monotonic() + 30
    while float(prometheus.query(scrapes)[0]["value"][1]) < first + 3:
        assert time.monotonic() < deadline, "Prometheus stopped scraping the broker"
        time.sleep(0.5)
    return prometheus


# ------------------------------------------------------------------------------------------ the queries


def grafana_variables(dashboard: dict[str, Any]) -> dict[str, str]:
    """Each template variable as Grafana sends it with "All" selected, plus the interval variables."""
    values = {variable["name"]: variable.get("allValue") or ".*"
              for variable in dashboard.get("templating", {}).get("list", [])}
    return {**values, "__rate_interval": WINDOW, "__range": WINDOW, "__interval": SCRAPE_INTERVAL}


def interpolate(expr: str, variables: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match["braced"] or match["plain"]
        assert name in variables, f"unknown Grafana variable ${name} in {expr!r}"
        return variables[name]

    return re.sub(r"\$\{(?P<braced>\w+)\}|\$(?P<plain>\w+)", value, expr)


def series_count(server: Prometheus, expr: str) -> int:
    """How many series a panel query or a `label_values(...)` variable query gets from Prometheus."""
    variable = _LABEL_VALUES.match(expr)
    if variable is None:
        return len(server.query(expr))
    if variable["selector"] is None:
        return len(server.get(f"/api/v1/label/{variable['label']}/values"))
    series = server.get("/api/v1/series", **{"match[]": variable["selector"]})
    return sum(1 for labels in series if variable["label"] in labels)


def empty_queries(server: Prometheus, dashboard: dict[str, Any]) -> list[str]:
    variables = grafana_variables(dashboard)
    return [f"{where}: {expr!r}" for where, expr, _ in dashboard_queries(dashboard)
            if series_count(server, interpolate(expr, variables)) == 0]


def test_every_dashboard_query_returns_a_series(scraped_workload: Prometheus) -> None:
    dashboard = load_dashboard()
    assert len(list(dashboard_queries(dashboard))) >= 40
    empty = empty_queries(scraped_workload, dashboard)
    assert not empty, "queries without a series in Prometheus:\n" + "\n".join(empty)


def test_a_query_naming_a_metric_the_broker_does_not_export_fails(scraped_workload: Prometheus) -> None:
    """The same check on the dashboard with one metric name misspelled, in a panel and in a variable."""
    doctored = json.loads(json.dumps(load_dashboard())
                          .replace("kafka_server_brokertopicmetrics_bytesin_total", "kafka_server_brokertopicmetrics_"
                                                                                     "bytes_in_total")
                          .replace("label_values(kafka_log_log_size, topic)", "label_values(kafka_log_size, topic)"))
    empty = empty_queries(scraped_workload, doctored)
    assert len(empty) == 3, empty  # "Bytes in / s", "Bytes in / out" A, the $topic variable
    assert all("bytes_in_total" in line or "kafka_log_size," in line for line in empty), empty


def test_the_scrape_job_is_the_compose_file_s(scraped_workload: Prometheus) -> None:
    (target,) = scraped_workload.get("/api/v1/targets")["activeTargets"]
    assert (target["labels"]["job"], target["health"]) == ("minikafka", "up")
    assert target["scrapeUrl"].endswith("/metrics")


def test_prometheus_yml_targets_the_compose_service() -> None:
    text = PROMETHEUS_YML.read_text()
    assert '"minikafka:9404"' in text, "docker/compose.yaml's broker service is minikafka, metrics on 9404"
    assert Path(DOCKER_DIR / "compose.yaml").read_text().count("./prometheus.yml:/etc/prometheus/prometheus.yml") == 1

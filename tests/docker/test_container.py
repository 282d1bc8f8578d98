"""The image of docker/Dockerfile, built with podman and run for real (`make test-container`).

The base image is a stand-in for python:3.11-slim made from Debian's packages (tests/docker/podman.py); nothing is
pulled. A broker container runs the two-listener setup docs/docker.md shows (one listener for other containers on the
network, one published on 127.0.0.1 for the host), configured only through KAFKA_* variables as apache/kafka's image
is. The tests run only when MINIKAFKA_CONTAINER_TESTS=1 (set by `make test-container`), and skip with the reason
where podman, runc or root are missing.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.testing.mini_kafka import free_port
from tests.docker import podman as pm
from tests.docker.test_container_config import APACHE_KAFKA_SINGLE_NODE

if os.environ.get("MINIKAFKA_CONTAINER_TESTS") != "1":
    pytest.skip("the container tests run with `make test-container` (podman builds and runs the image)",
                allow_module_level=True)
if (reason := pm.missing_tools()) is not None:
    pytest.skip(reason, allow_module_level=True)

pytestmark = pytest.mark.timeout(600)

RUN_ID = uuid.uuid4().hex[:8]
INTERNAL_PORT = 19092


@dataclass
class Broker:
    name: str
    port: int
    metrics_port: int

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    wheels = pm.build_wheels(tmp_path_factory.mktemp("wheels"))
    built = pm.build_image(wheels)
    assert built.returncode == 0, f"podman build failed:\n{built.stdout[-4000:]}\n{built.stderr[-4000:]}"
    return pm.IMAGE


@pytest.fixture(scope="module")
def network(image: str) -> Iterator[str]:
    name = f"{pm.PREFIX}net-{RUN_ID}"
    pm.podman("network", "create", name)
    yield name
    pm.remove(networks=[name])


@pytest.fixture(scope="module")
def broker(image: str, network: str) -> Iterator[Broker]:
    """docs/docker.md's two-listener setup: PLAINTEXT for containers (minikafka:19092), PLAINTEXT_HOST published for the
    host; a fast cleaner so that compaction shows within seconds."""
    port, metrics_port = free_port(), free_port()
    name = f"{pm.PREFIX}broker-{RUN_ID}"
    env = {
        "KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{INTERNAL_PORT},PLAINTEXT_HOST://0.0.0.0:9092",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://minikafka:{INTERNAL_PORT},PLAINTEXT_HOST://127.0.0.1:{port}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        "KAFKA_LOG_CLEANER_BACKOFF_MS": "100",
        "KAFKA_MINIKAFKA_LOG_ROLL_CHECK_INTERVAL_MS": "100",
    }
    try:
        pm.run_container(name, image, env=env, network=network, aliases=["minikafka"],
                         publish=[f"127.0.0.1:{port}:9092", f"127.0.0.1:{metrics_port}:9404"])
        pm.wait_healthy(name)
        yield Broker(name, port, metrics_port)
    finally:
        pm.remove(containers=[name])


# ------------------------------------------------------------------------------------------ clients


def produce(bootstrap_servers: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "acks": "all", "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


def consume_all(bootstrap_servers: str, topic: str) -> list[tuple[bytes, bytes | None]]:
    """Every record of partition 0 from the beginning up to the end offset."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"container-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records: list[tuple[bytes, bytes | None]] = []
        deadline = time.monotonic() + 30
        while True:
            assert time.monotonic() < deadline, f"{topic}: no end of partition after {len(records)} records"
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return records
            records.append((message.key(), message.value()))
    finally:
        consumer.close()


def create_topic(bootstrap_servers: str, topic: str, config: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=30)


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text: str = response.read().decode()
        return text


def records_removed(broker: Broker, topic: str) -> float:
    return sum(sample.value for family in text_string_to_metric_families(scrape(broker.metrics_url))
               for sample in family.samples
               if sample.name == "minikafka_log_cleaner_records_removed_total" and sample.labels["topic"] == topic)


# ------------------------------------------------------------------------------------------ the image


def test_image_holds_every_package_and_runs_as_appuser_with_a_healthcheck(image: str) -> None:
    info = pm.inspect(image, "image")
    assert info["Config"]["User"] == "appuser"
    assert info["Healthcheck"]["Test"] == ["CMD", "python", "-m", "minikafka.broker.container", "healthcheck"]
    script = ("import importlib.metadata as m, json, os; print(json.dumps([os.getuid(), sorted({'.'.join(f.parts[:-1])"
              " for f in m.files('minikafka') if f.name == '__init__.py'})]))")
    result = pm.podman("run", "--rm", *pm.ulimits(), image, "python", "-c", script)
    uid, installed = json.loads(result.stdout.strip().splitlines()[-1])
    packages = tomllib.loads((pm.REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    # the namespace `minikafka` and data-only packages (the console's static/) have no __init__.py to list
    regular = [name for name in packages
               if (pm.REPO / "src" / Path(*name.split(".")) / "__init__.py").exists()]
    assert uid == 1000
    assert installed == sorted(regular)


def test_host_client_produces_and_consumes_through_the_published_port(broker: Broker) -> None:
    from confluent_kafka.admin import AdminClient

    brokers = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", broker.port)], "KAFKA_ADVERTISED_LISTENERS"
    topic = f"host-{RUN_ID}"
    records = [(f"k{n}".encode(), f"v{n}".encode()) for n in range(100)]
    produce(broker.bootstrap_servers, topic, records)
    assert consume_all(broker.bootstrap_servers, topic) == records


def test_another_container_uses_the_internal_listener(broker: Broker, network: str, image: str) -> None:
    """What a service next to the broker in a compose file sees: minikafka:19092 (kafka-python is in the image)."""
    script = f"""
from kafka import KafkaConsumer, KafkaProducer
producer = KafkaProducer(bootstrap_servers="minikafka:{INTERNAL_PORT}")
for n in range(10):
    producer.send("internal-{RUN_ID}", key=b"k%d" % n, value=b"v%d" % n)
producer.flush(30)
producer.close()
consumer = KafkaConsumer("internal-{RUN_ID}", bootstrap_servers="minikafka:{INTERNAL_PORT}",
                         auto_offset_reset="earliest", consumer_timeout_ms=30000)
values = []
for message in consumer:
    values.append(message.value.decode())
    if len(values) == 10:
        break
print("consumed", values)
"""
    result = pm.podman("run", "--rm", *pm.ulimits(), "--network", network, image, "python", "-c", script)
    assert f"consumed {[f'v{n}' for n in range(10)]}" in result.stdout, result.stdout + result.stderr
    assert consume_all(broker.bootstrap_servers, f"internal-{RUN_ID}")[-1] == (b"k9", b"v9")


def test_metrics_answer_on_the_published_port(broker: Broker) -> None:
    names = {family.name for family in text_string_to_metric_families(scrape(broker.metrics_url))}
    assert {"kafka_network_requestmetrics_requests", "minikafka_log_cleaner_records_removed"} <= names


def test_a_compacted_topic_is_compacted_inside_the_container(broker: Broker) -> None:
    topic = f"compacted-{RUN_ID}"
    create_topic(broker.bootstrap_servers, topic, {"cleanup.policy": "compact", "segment.ms": "200",
                                                   "min.cleanable.dirty.ratio": "0.01"})
    for version in range(5):
        produce(broker.bootstrap_servers, topic, [(f"k{key}".encode(), f"v{version}".encode()) for key in range(20)])
        time.sleep(0.3)  # each version in its own segment
    deadline = time.monotonic() + 60
    while records_removed(broker, topic) == 0:
        assert time.monotonic() < deadline, f"the cleaner removed nothing from {topic}:\n{pm.logs(broker.name)[-3000:]}"
        time.sleep(0.2)
    records = consume_all(broker.bootstrap_servers, topic)
    assert len(records) < 100, "compaction removed records"
    latest = dict(records)
    assert latest == {f"k{key}".encode(): b"v4" for key in range(20)}


def test_apache_kafka_single_node_compose_environment_runs(image: str, network: str) -> None:
    """apache/kafka's own single-node example, only the image changed: its broker listener answers other containers
    at broker:19092 (the KRaft controller listener it names is not bound)."""
    name = f"{pm.PREFIX}apache-env-{RUN_ID}"
    try:
        pm.run_container(name, image, env=APACHE_KAFKA_SINGLE_NODE, network=network, aliases=["broker"])
        pm.wait_healthy(name)
        script = ("from kafka import KafkaAdminClient; a = KafkaAdminClient(bootstrap_servers='broker:19092'); "
                  "print('cluster', a.describe_cluster()['brokers'])")
        result = pm.podman("run", "--rm", *pm.ulimits(), "--network", network, image, "python", "-c", script)
        assert "'host': 'broker', 'port': 19092" in result.stdout, result.stdout + result.stderr
    finally:
        pm.remove(containers=[name])


def test_sigterm_stops_cleanly_and_the_data_survives_a_restart(image: str) -> None:
    """Only KAFKA_ADVERTISED_LISTENERS given: the listener is derived from it (apache/kafka's rule), so the host port
    is published to the same container port."""
    port = free_port()
    name, volume = f"{pm.PREFIX}restart-{RUN_ID}", f"{pm.PREFIX}data-{RUN_ID}"
    topic = f"durable-{RUN_ID}"
    records = [(f"k{n}".encode(), f"v{n}".encode() * 10) for n in range(500)]
    try:
        pm.run_container(name, image, env={"KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}"},
                         publish=[f"127.0.0.1:{port}:{port}"], volume=volume)
        pm.wait_healthy(name)
        produce(f"127.0.0.1:{port}", topic, records)

        pm.podman("stop", "--time", "30", name)
        state = pm.inspect(name)["State"]
        assert state["ExitCode"] == 0, pm.logs(name)
        assert "shut down cleanly" in pm.logs(name)
        data_dir = Path(pm.podman("volume", "inspect", volume, "--format", "{{.Mountpoint}}").stdout.strip())
        assert (data_dir / ".kafka_cleanshutdown").exists()
        assert (data_dir / f"{topic}-0").is_dir()

        pm.podman("start", name)
        pm.wait_healthy(name)
        assert "(clean shutdown: True)" in pm.logs(name)
        assert consume_all(f"127.0.0.1:{port}", topic) == records
    finally:
        pm.remove(containers=[name], volumes=[volume])

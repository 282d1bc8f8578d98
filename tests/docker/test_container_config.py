"""broker/container.py, the image's entry point: apache/kafka's KAFKA_* rule (KIP-975), the single-dev-node
defaults, and `run`/`healthcheck` as real processes around a real broker (no container engine needed)."""

from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from minikafka.broker.config import KafkaConfig, load_properties
from minikafka.broker.container import (
    IMAGE_DEFAULTS,
    ContainerConfigError,
    container_properties,
    properties_from_env,
    property_name,
    read_rendered,
    render_properties,
)
from minikafka.testing.mini_kafka import free_port
from tests.docker.test_grafana_dashboard import compose_service

pytestmark = pytest.mark.timeout(60)

IMAGE_PROPERTIES = Path(__file__).resolve().parents[2] / "config" / "server.properties"
# docker/examples/docker-compose-files/single-node/plaintext/docker-compose.yml of apache/kafka, its environment
# as Docker Compose hands it to the container.
APACHE_KAFKA_SINGLE_NODE = {
    "KAFKA_NODE_ID": "1",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
    "KAFKA_LISTENERS": "CONTROLLER://:29093,PLAINTEXT_HOST://:9092,PLAINTEXT://:19092",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
}


@pytest.mark.parametrize(("env_name", "expected"), [
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_LOG_CLEANER_BACKOFF_MS", "log.cleaner.backoff.ms"),
    # KafkaDockerWrapperTest.testGetServerConfigsFromEnv
    ("KAFKA_VALID_PROPERTY", "valid.property"),
    ("KAFKA_VALID___PROPERTY__ALL_CASES", "valid-property_all.cases"),
    ("KAFKA_LISTENER_NAME_PLAINTEXT__HOST_SSL_KEYSTORE_LOCATION", "listener.name.plaintext_host.ssl.keystore.location"),
    ("KAFKA_MINIKAFKA_METRICS_PORT", "minikafka.metrics.port"),  # Kafka's replace-everywhere would say minimetrics
    ("KAFKA_TOOLS_LOG4J_LOGLEVEL", None),
    ("KAFKA_HEAP_OPTS", None),
    ("KAFKA_OPTS", None),
    ("SOME_VARIABLE", None),
    ("CLUSTER_ID", None),
    ("KAFKA_", None),
    ("kafka_log_dirs", None),
])
def test_property_name_follows_kip_975(env_name: str, expected: str | None) -> None:
    assert property_name(env_name) == expected


def test_listeners_default_to_the_advertised_ones_on_every_interface() -> None:
    props = properties_from_env({"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:39092,INTERNAL://kafka:19092",
                                 "PATH": "/usr/bin"})
    assert props == {"advertised.listeners": "PLAINTEXT://localhost:39092,INTERNAL://kafka:19092",
                     "listeners": "PLAINTEXT://0.0.0.0:39092,INTERNAL://0.0.0.0:19092"}
    given = properties_from_env({"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:39092",
                                 "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092"})
    assert given["listeners"] == "PLAINTEXT://0.0.0.0:9092"


def test_a_value_on_two_lines_is_refused_with_the_variable_name() -> None:
    with pytest.raises(ContainerConfigError, match="KAFKA_NODE_ID"):
        properties_from_env({"KAFKA_NODE_ID": "1\nlog.dirs=/etc"})


def test_without_settings_the_image_is_a_dev_node_on_9092() -> None:
    props = container_properties(load_properties(IMAGE_PROPERTIES), {}, {})
    config = KafkaConfig(props)
    assert [(e.listener_name, e.host, e.port) for e in config.listeners] == [("PLAINTEXT", "0.0.0.0", 9092)]
    assert config.advertised.connection_string == "PLAINTEXT://localhost:9092"
    assert str(config.log_dir) == "/var/lib/minikafka"
    assert config["minikafka.metrics.host"] == "0.0.0.0"
    assert config.groups.initial_rebalance_delay_ms == 0


def test_configured_listeners_drop_the_default_advertised_listener() -> None:
    """The image's advertised PLAINTEXT://localhost:9092 would name a listener the user's listeners lack."""
    env = {"KAFKA_LISTENERS": "HOST://0.0.0.0:9092", "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "HOST:PLAINTEXT"}
    config = KafkaConfig(container_properties(load_properties(IMAGE_PROPERTIES), {}, env))
    assert set(config.advertised_listeners) == {"HOST"}


def test_environment_wins_over_a_mounted_file_which_wins_over_the_defaults() -> None:
    mounted = {"log.dirs": "/data", "num.partitions": "3", "advertised.listeners": "PLAINTEXT://mounted:9092"}
    props = container_properties(load_properties(IMAGE_PROPERTIES), mounted, {"KAFKA_NUM_PARTITIONS": "6"})
    assert (props["log.dirs"], props["num.partitions"]) == ("/data", "6")
    assert props["advertised.listeners"] == "PLAINTEXT://mounted:9092"
    assert props["listeners"] == IMAGE_DEFAULTS["listeners"]
    assert props["log.cleaner.backoff.ms"] == "15000"  # the image's server.properties underneath


def test_apache_kafka_single_node_compose_runs_as_written() -> None:
    props = container_properties(load_properties(IMAGE_PROPERTIES), {}, APACHE_KAFKA_SINGLE_NODE)
    config = KafkaConfig(props)
    assert [(e.listener_name, e.host, e.port) for e in config.listeners] == [
        ("PLAINTEXT_HOST", "", 9092), ("PLAINTEXT", "", 19092)]  # the KRaft controller's listener is not bound
    assert config.advertised_endpoint("PLAINTEXT_HOST").connection_string == "PLAINTEXT_HOST://localhost:9092"
    assert config.advertised_endpoint("PLAINTEXT").connection_string == "PLAINTEXT://broker:19092"
    assert str(config.log_dir) == "/tmp/kraft-combined-logs"
    assert not {"process.roles", "controller.quorum.voters", "controller.listener.names"} & props.keys()


def compose_environment(service: str) -> dict[str, str]:
    """A service's `environment:` mapping in docker/compose.yaml (plain `KEY: value` lines, read as text)."""
    lines = compose_service(service)
    start = lines.index("    environment:") + 1
    environment: dict[str, str] = {}
    for line in lines[start:]:
        if line.strip().startswith("#"):
            continue
        if not line.startswith("      "):
            break
        key, _, value = line.strip().partition(": ")
        environment[key] = value.strip().strip("\"'")
    return environment


def test_the_compose_file_s_two_listeners() -> None:
    """docs/docker.md's setup: minikafka:19092 for other containers, localhost:9092 published for the host."""
    environment = compose_environment("minikafka")
    assert environment and all(name.startswith("KAFKA_") for name in environment)
    config = KafkaConfig(container_properties(load_properties(IMAGE_PROPERTIES), {}, environment))
    assert {name: endpoint.connection_string for name, endpoint in config.advertised_listeners.items()} == {
        "PLAINTEXT": "PLAINTEXT://minikafka:19092", "PLAINTEXT_HOST": "PLAINTEXT_HOST://localhost:9092"}
    assert "9092:9092" in "\n".join(compose_service("minikafka"))


def test_the_compose_file_publishes_the_admin_port_on_loopback_and_lets_prometheus_scrape() -> None:
    """The admin port listens on every interface of the container (Prometheus reaches it as minikafka:9404), is
    published on the host's 127.0.0.1 only, and, without credentials, answers the console and /admin/* to loopback
    peers only (tests/integration/test_admin_http_attacks.py); Prometheus's Host header passes the Host check."""
    from minikafka.broker.admin_guard import BrowserGuard

    ports = [line.strip().strip("- \"") for line in compose_service("minikafka") if "9404" in line and '"' in line]
    assert ports == ["127.0.0.1:9404:9404"]
    config = KafkaConfig(container_properties(load_properties(IMAGE_PROPERTIES), {}, compose_environment("minikafka")))
    guard = BrowserGuard.from_config(str(config["minikafka.metrics.host"]),
                                     config["minikafka.metrics.allowed.hosts"], credentials_configured=False)
    assert guard.host_allowed("minikafka:9404") and guard.host_allowed("localhost:9404")
    assert not guard.host_allowed("rebind.attacker.example:9404")
    assert config["minikafka.metrics.host"] == "0.0.0.0"


@pytest.mark.parametrize(("env", "message"), [
    ({"KAFKA_PROCESS_ROLES": "controller"}, "must include broker"),
    ({"KAFKA_LISTENERS": "CONTROLLER://:9093", "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER"},
     "every listener is a controller listener"),
])
def test_what_a_broker_cannot_be_is_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ContainerConfigError, match=message):
        container_properties({}, {}, env)


def test_rendered_properties_read_back_by_both_readers(tmp_path: Path) -> None:
    props = container_properties(load_properties(IMAGE_PROPERTIES), {}, APACHE_KAFKA_SINGLE_NODE)
    path = tmp_path / "server.properties"
    path.write_text(render_properties(props))
    assert load_properties(path) == props == read_rendered(path)


# ------------------------------------------------------------------------------------------ the entry point


def container_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "minikafka.broker.container", *args]


def healthcheck(final: Path) -> int:
    return subprocess.run(container_command("healthcheck", "--config", str(final)), capture_output=True,
                          timeout=30).returncode


def test_run_serves_with_the_environment_and_healthcheck_follows_it(tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    final = tmp_path / "run" / "server.properties"
    env = {**os.environ, "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
           "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}", "KAFKA_LOG_DIRS": str(tmp_path / "data"),
           "KAFKA_MINIKAFKA_METRICS_HOST": "127.0.0.1", "KAFKA_MINIKAFKA_METRICS_PORT": str(metrics_port)}
    command = container_command("run", "--image-config", str(IMAGE_PROPERTIES), "--mounted-config",
                                str(tmp_path / "absent.properties"), "--output", str(final))
    with (tmp_path / "broker.log").open("wb") as output:
        broker = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while healthcheck(final) != 0:
                assert broker.poll() is None, (tmp_path / "broker.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "broker.log").read_text()
                time.sleep(0.2)
            assert read_rendered(final)["listeners"] == f"PLAINTEXT://127.0.0.1:{port}"
            broker.send_signal(signal.SIGTERM)
            assert broker.wait(30) == 0
        finally:
            if broker.poll() is None:
                broker.kill()
                broker.wait()
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert healthcheck(final) == 1, "unhealthy once the broker is gone"


def test_run_refuses_a_bad_setting_with_exit_code_2(tmp_path: Path) -> None:
    env = {**os.environ, "KAFKA_PROCESS_ROLES": "controller"}
    result = subprocess.run(container_command("run", "--image-config", str(IMAGE_PROPERTIES), "--output",
                                              str(tmp_path / "out.properties")),
                            env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "KAFKA_PROCESS_ROLES must include broker" in result.stderr
    assert not (tmp_path / "out.properties").exists()


# ------------------------------------------------------------------------------------------ the build context


def test_the_build_context_keeps_every_package_folder() -> None:
    """docker/Dockerfile copies the context as .dockerignore filters it: nothing pip needs may be ignored."""
    repo = IMAGE_PROPERTIES.parents[1]
    patterns = [line.strip() for line in (repo / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    package_dirs = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    needed = [*package_dirs, "pyproject.toml", "README.md", "config", "config/server.properties"]
    ignored = [path for path in needed for pattern in patterns
               if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, pattern.removeprefix("**/"))]
    assert not ignored, f".dockerignore leaves out {ignored}"
    assert {".git", ".venv", ".cache", "data"} <= set(patterns), "the context stays small"
    dockerfile = (repo / "docker" / "Dockerfile").read_text()
    assert "COPY . ." in dockerfile

"""Group configs (GROUP config resources, issue 30) with Apache Kafka's own `kafka-configs --entity-type groups`,
side by side: the same commands against Apache Kafka 4.3.1 and minikafka print the same lines (describe with every
key, sources and synonyms; alterations; Kafka's validation messages). Then what the configs change: a KIP-848
member's heartbeat interval on both brokers, and on minikafka that they survive a restart."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin import DescribeConfigsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from minikafka.protocol.schemas import ConsumerGroupHeartbeatRequest
from tests.broker_process import BrokerProcess
from tests.kafka_jars import find_main_class, java_command
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(400)]

CONFIG_COMMAND = ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand")
RESOURCE_GROUP = 32


@pytest.fixture(scope="module")
def minikafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp_path_factory.mktemp("minikafka"), {"offsets.topic.num.partitions": "1"})
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def kafka_configs(lib_dir: Path, bootstrap: str, args: list[str]) -> str:
    """One kafka-configs run; its stdout and stderr, minus stack frames, with the bootstrap replaced."""
    command = java_command(lib_dir, find_main_class(lib_dir, *CONFIG_COMMAND),
                           ["--bootstrap-server", bootstrap, *args], heap="256m")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if not line.lstrip().startswith("at ") and " WARN " not in line]
    return "\n".join(lines).replace(bootstrap, "BOOTSTRAP")


def scenario(lib_dir: Path, bootstrap: str, group: str) -> list[str]:
    groups = ["--entity-type", "groups", "--entity-name", group]
    return [kafka_configs(lib_dir, bootstrap, args) for args in (
        ["--describe", "--all", *groups],
        ["--alter", *groups, "--add-config",
         "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000,share.isolation.level=read_committed"],
        ["--alter", *groups, "--add-config", "consumer.session.timeout.ms=70000"],
        ["--alter", *groups, "--add-config", "consumer.heartbeat.interval.ms=1000,no.such.config=1"],
        ["--alter", *groups, "--add-config", "consumer.heartbeat.interval.ms=50000"],
        ["--alter", *groups, "--delete-config", "share.isolation.level"],
        ["--describe", *groups],
    )]


def test_kafka_configs_for_groups_answer_as_on_apache_kafka(
    apache_kafka: object, minikafka: BrokerProcess, kafka_lib_dir: Path
) -> None:
    group = f"configs-{uuid.uuid4().hex[:8]}"
    on_kafka = scenario(kafka_lib_dir, apache_kafka.bootstrap, group)  # type: ignore[attr-defined]
    on_minikafka = scenario(kafka_lib_dir, minikafka.bootstrap, group)
    assert on_minikafka == on_kafka
    described, altered, too_long, unknown, too_slow, deleted, dynamic = on_kafka
    assert described.count("sensitive=false") == 17
    assert ("consumer.session.timeout.ms=45000 sensitive=false "
            "synonyms={DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}") in described
    assert f"Completed updating config for group {group}." in altered and deleted
    assert "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms" in too_long
    assert "Unknown group config name: no.such.config" in unknown
    assert "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat" in too_slow
    assert dynamic.splitlines()[1:] == [
        "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}",
    ]


def join_heartbeat_interval_ms(bootstrap: str, group: str) -> int:
    """A KIP-848 member joins `group`: the heartbeat interval the coordinator gives it."""
    with WireClient(bootstrap) as client:
        deadline = time.monotonic() + 30
        while True:
            found = client.request(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
            if found.coordinators[0].error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        join = ConsumerGroupHeartbeatRequest[0](
            group_id=group, member_id=uuid.uuid4().hex, member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout_ms=30_000, subscribed_topic_names=["some-topic"], server_assignor=None,
            topic_partitions=[])
        while True:  # a fresh Apache Kafka answers NOT_COORDINATOR while it loads __consumer_offsets
            joined = client.request(join)
            if joined.error_code not in (14, 15, 16) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert joined.error_code == 0, joined
        interval_ms: int = joined.heartbeat_interval_ms
        return interval_ms


@pytest.mark.parametrize("target", ["apache", "minikafka"])
def test_a_group_config_sets_the_heartbeat_interval_of_its_members(
    target: str, request: pytest.FixtureRequest, kafka_lib_dir: Path
) -> None:
    bootstrap = request.getfixturevalue("apache_kafka" if target == "apache" else "minikafka").bootstrap
    group, other = f"hb-{uuid.uuid4().hex[:8]}", f"hb-{uuid.uuid4().hex[:8]}"
    output = kafka_configs(kafka_lib_dir, bootstrap, [
        "--alter", "--entity-type", "groups", "--entity-name", group, "--add-config",
        "consumer.heartbeat.interval.ms=7000"])
    assert f"Completed updating config for group {group}." in output
    assert join_heartbeat_interval_ms(bootstrap, group) == 7000
    assert join_heartbeat_interval_ms(bootstrap, other) == 5000


def describe_group(bootstrap: str, group: str) -> dict[str, tuple[str, int]]:
    with WireClient(bootstrap) as client:
        response = client.request(DescribeConfigsRequest[4](
            resources=[(RESOURCE_GROUP, group, None)], include_synonyms=False, include_documentation=False))
    [result] = response.results
    assert result.error_code == 0, result
    return {config.name: (config.value, config.config_source) for config in result.configs}


def test_group_configs_survive_a_restart(minikafka: BrokerProcess) -> None:
    from kafka.protocol.admin import IncrementalAlterConfigsRequest

    group = f"restart-{uuid.uuid4().hex[:8]}"
    with WireClient(minikafka.bootstrap) as client:
        altered = client.request(IncrementalAlterConfigsRequest[1](
            resources=[(RESOURCE_GROUP, group, [("consumer.session.timeout.ms", 0, "55000")])], validate_only=False))
    assert altered.responses[0].error_code == 0, altered
    minikafka.restart()
    described = describe_group(minikafka.bootstrap, group)
    assert described["consumer.session.timeout.ms"] == ("55000", 8)  # GROUP_CONFIG
    assert described["consumer.heartbeat.interval.ms"] == ("5000", 5)  # DEFAULT_CONFIG


def broker_scenario(lib_dir: Path, bootstrap: str, topic: str) -> list[str]:
    """kafka-configs on the broker resources: a Kerberos key (stored, not used by minikafka) and a topic default
    (applied) on broker 1, then what Kafka refuses; the lines about other keys (each broker's own set-up) dropped."""
    node = ["--entity-type", "brokers", "--entity-name", "1"]
    ours = ("sasl.kerberos.min.time.before.relogin", "log.retention.ms", "log.segment.bytes", "segment.bytes=",
            "log.cleaner.backoff.ms", "ssl.keystore.password", "sasl.jaas.config")
    default = ["--entity-type", "brokers", "--entity-default"]
    outputs = [kafka_configs(lib_dir, bootstrap, args) for args in (
        ["--alter", *node, "--add-config",
         "sasl.kerberos.min.time.before.relogin=120000,log.retention.ms=7200000,log.segment.bytes=50000000"],
        ["--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "sasl.kerberos.kinit.cmd=/k"],
        ["--alter", *node, "--add-config", "num.partitions=3"],
        ["--alter", *node, "--add-config", "ssl.keystore.password=secret"],
        ["--alter", *node, "--add-config", "background.threads=1"],
        ["--alter", *node, "--add-config", "num.io.threads=many"],
        ["--describe", *node],
        ["--describe", "--all", "--entity-type", "topics", "--entity-name", topic],
        ["--alter", *node, "--delete-config",
         "sasl.kerberos.min.time.before.relogin,log.retention.ms,log.segment.bytes"],
        ["--describe", *node],
        ["--describe", "--all", *node],  # sensitive keys: listed, value null
        ["--alter", *default, "--add-config", "log.cleaner.backoff.ms=20000"],
        ["--describe", *default],
        ["--alter", *default, "--delete-config", "log.cleaner.backoff.ms"],
    )]
    return ["\n".join(line for line in output.splitlines()
                      if not line.startswith("  ") or line.lstrip().startswith(ours)) for output in outputs]


def test_kafka_configs_for_dynamic_broker_configs_answer_as_on_apache_kafka(
    apache_kafka: object, minikafka: BrokerProcess, kafka_lib_dir: Path
) -> None:
    from tests.integration.client_drivers import create_topic

    topic = f"dynamic-{uuid.uuid4().hex[:8]}"
    kafka_bootstrap: str = apache_kafka.bootstrap  # type: ignore[attr-defined]
    for bootstrap in (kafka_bootstrap, minikafka.bootstrap):
        create_topic(bootstrap, topic, 1)
    on_kafka = broker_scenario(kafka_lib_dir, kafka_bootstrap, topic)
    on_minikafka = broker_scenario(kafka_lib_dir, minikafka.bootstrap, topic)
    assert on_minikafka == on_kafka
    (added, per_broker_only, static, unprefixed, threads, not_int, described, topic_configs, _deleted, after,
     everything, _default_added, default_described, _default_deleted) = on_kafka
    assert "Completed updating config for broker 1." in added
    assert "broker id must be specified: [sasl.kerberos.kinit.cmd]" in per_broker_only
    assert "Cannot update these configs dynamically: [num.partitions]" in static
    assert "only per-listener using the listener prefix: [ssl.keystore.password]" in unprefixed
    assert "value should be at least half the current value" in threads
    assert "Invalid value many for configuration num.io.threads: Not a number of type INT" in not_int
    assert ("  sasl.kerberos.min.time.before.relogin=120000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
            "sasl.kerberos.min.time.before.relogin=120000, DEFAULT_CONFIG:sasl.kerberos.min.time.before.relogin=60000}"
            ) in described
    assert ("  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=7200000, "
            "DEFAULT_CONFIG:log.retention.hours=168}") in described
    # applied: the topic's segment.bytes follows the broker's new default
    assert ("  segment.bytes=50000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.segment.bytes=50000000, "
            "DEFAULT_CONFIG:log.segment.bytes=1073741824}") in topic_configs
    assert "sasl.kerberos" not in after and "log.retention.ms" not in after
    assert "  ssl.keystore.password=null sensitive=true synonyms={}" in everything
    assert "  sasl.jaas.config=null sensitive=true synonyms={}" in everything
    assert ("  log.cleaner.backoff.ms=20000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
            "log.cleaner.backoff.ms=20000}") in default_described


def loggers_and_client_metrics_scenario(lib_dir: Path, bootstrap: str, subscription: str) -> list[str]:
    """kafka-configs on the BROKER_LOGGER (only `root` is named alike in Java and Python) and CLIENT_METRICS
    resources. (`--describe` of client-metrics without `--all` needs ListConfigResources, not served here.)"""
    loggers = ["--entity-type", "broker-loggers", "--entity-name", "1"]
    metrics = ["--entity-type", "client-metrics", "--entity-name", subscription]
    outputs = [kafka_configs(lib_dir, bootstrap, args) for args in (
        ["--alter", *loggers, "--add-config", "root=WARN"],
        ["--describe", *loggers],
        ["--alter", *loggers, "--add-config", "root=LOUD"],
        ["--alter", *loggers, "--delete-config", "root"],
        ["--alter", *loggers, "--add-config", "root=INFO"],
        ["--describe", "--all", *metrics],
        ["--alter", *metrics, "--add-config", "metrics=org.apache.kafka.producer.,interval.ms=60000,"
                                              "match=[client_id=app.*]"],
        ["--describe", "--all", *metrics],
        ["--alter", *metrics, "--add-config", "interval.ms=5"],
        ["--alter", *metrics, "--add-config", "match=[bogus=x]"],
    )]
    outputs[1] = "\n".join(line for line in outputs[1].splitlines()
                            if not line.startswith("  ") or line.startswith("  root="))  # Java's and Python's names
    return outputs


def test_kafka_configs_for_broker_loggers_and_client_metrics_answer_as_on_apache_kafka(
    apache_kafka: object, minikafka: BrokerProcess, kafka_lib_dir: Path
) -> None:
    subscription = f"sub-{uuid.uuid4().hex[:8]}"
    kafka_bootstrap: str = apache_kafka.bootstrap  # type: ignore[attr-defined]
    on_kafka = loggers_and_client_metrics_scenario(kafka_lib_dir, kafka_bootstrap, subscription)
    on_minikafka = loggers_and_client_metrics_scenario(kafka_lib_dir, minikafka.bootstrap, subscription)
    assert on_minikafka == on_kafka
    set_root, loggers, bad_level, delete_root, _reset, defaults, _altered, altered, bad_interval, bad_match = on_kafka
    assert "Completed updating config for broker-logger 1." in set_root
    assert "  root=WARN sensitive=false synonyms={}" in loggers
    assert "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN" in bad_level
    assert "Removing the log level of the root logger is not allowed" in delete_root
    assert "  interval.ms=300000 sensitive=false synonyms={}" in defaults
    assert "  match=client_id=app.* sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:match=client_id=app.*}" \
        in altered
    assert "interval must be between 100 and 3600000 (1 hour)" in bad_interval
    assert "Illegal client matching pattern: bogus=x" in bad_match

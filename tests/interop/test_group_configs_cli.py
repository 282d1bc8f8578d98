"""Group configs (GROUP config resources, issue 30) with Apache Kafka's own `kafka-configs --entity-type groups`,
side by side: the same commands against Apache Kafka 4.3.1 and minikafka print the same lines (describe with every
key, sources and synonyms; alterations; Kafka's validation messages). Then what the configs change: a KIP-848
member's heartbeat interval on both brokers, and on minikafka that they survive a restart. Also per-broker dynamic
configs, broker loggers, client-metrics subscriptions, and ListConfigResources (key 74): what kafka-configs and
kafka-client-metrics list without an entity name, and the API's own answers.

Every kafka-configs run goes through one warm JVM (`kafka_configs_tool`, tests/interop/tool_batch.py): the same
ConfigCommand main and output as a process per run, without dozens of JVM starts."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import DescribeConfigsRequest, ListConfigResourcesRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from minikafka.protocol.schemas import ConsumerGroupHeartbeatRequest
from tests.broker_process import BrokerProcess
from tests.interop.config_side import module_minikafka
from tests.interop.tool_batch import CLIENT_METRICS_COMMAND, ToolBatch
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(400)]

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_CLIENT_METRICS = 16
RESOURCE_GROUP = 32
UNSUPPORTED_VERSION = 35


minikafka = pytest.fixture(scope="module", name="minikafka")(module_minikafka)


def kafka_configs(tool: ToolBatch, bootstrap: str, args: list[str]) -> str:
    """One kafka-configs run; its stdout and stderr, minus stack frames, with the bootstrap replaced."""
    done = tool.run(["--bootstrap-server", bootstrap, *args])
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if not line.lstrip().startswith("at ") and " WARN " not in line]
    return "\n".join(lines).replace(bootstrap, "BOOTSTRAP")


def scenario(tool: ToolBatch, bootstrap: str, group: str) -> list[str]:
    groups = ["--entity-type", "groups", "--entity-name", group]
    return [kafka_configs(tool, bootstrap, args) for args in (
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
    apache_kafka: object, minikafka: BrokerProcess, kafka_configs_tool: ToolBatch
) -> None:
    group = f"configs-{uuid.uuid4().hex[:8]}"
    on_kafka = scenario(kafka_configs_tool, apache_kafka.bootstrap, group)  # type: ignore[attr-defined]
    on_minikafka = scenario(kafka_configs_tool, minikafka.bootstrap, group)
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
        client.request_until_ready(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group]))
        # a fresh Apache Kafka answers NOT_COORDINATOR while it loads __consumer_offsets
        joined = client.request_until_ready(ConsumerGroupHeartbeatRequest[0](
            group_id=group, member_id=uuid.uuid4().hex, member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout_ms=30_000, subscribed_topic_names=["some-topic"], server_assignor=None,
            topic_partitions=[]))
        assert joined.error_code == 0, joined
        interval_ms: int = joined.heartbeat_interval_ms
        return interval_ms


@pytest.mark.parametrize("target", ["apache", "minikafka"])
def test_a_group_config_sets_the_heartbeat_interval_of_its_members(
    target: str, request: pytest.FixtureRequest, kafka_configs_tool: ToolBatch
) -> None:
    bootstrap = request.getfixturevalue("apache_kafka" if target == "apache" else "minikafka").bootstrap
    group, other = f"hb-{uuid.uuid4().hex[:8]}", f"hb-{uuid.uuid4().hex[:8]}"
    output = kafka_configs(kafka_configs_tool, bootstrap, [
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


def broker_scenario(tool: ToolBatch, bootstrap: str, topic: str) -> list[str]:
    """kafka-configs on the broker resources: a Kerberos key (stored, not used by minikafka) and a topic default
    (applied) on broker 1, then what Kafka refuses; the lines about other keys (each broker's own set-up) dropped."""
    node = ["--entity-type", "brokers", "--entity-name", "1"]
    ours = ("sasl.kerberos.min.time.before.relogin", "log.retention.ms", "log.segment.bytes", "segment.bytes=",
            "log.cleaner.backoff.ms", "ssl.keystore.password", "sasl.jaas.config")
    default = ["--entity-type", "brokers", "--entity-default"]
    outputs = [kafka_configs(tool, bootstrap, args) for args in (
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
    apache_kafka: object, minikafka: BrokerProcess, kafka_configs_tool: ToolBatch
) -> None:
    from tests.integration.client_drivers import create_topic

    topic = f"dynamic-{uuid.uuid4().hex[:8]}"
    kafka_bootstrap: str = apache_kafka.bootstrap  # type: ignore[attr-defined]
    for bootstrap in (kafka_bootstrap, minikafka.bootstrap):
        create_topic(bootstrap, topic, 1)
    on_kafka = broker_scenario(kafka_configs_tool, kafka_bootstrap, topic)
    on_minikafka = broker_scenario(kafka_configs_tool, minikafka.bootstrap, topic)
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


def loggers_and_client_metrics_scenario(tool: ToolBatch, bootstrap: str, subscription: str) -> list[str]:
    """kafka-configs on the BROKER_LOGGER (only `root` is named alike in Java and Python) and CLIENT_METRICS
    resources."""
    loggers = ["--entity-type", "broker-loggers", "--entity-name", "1"]
    metrics = ["--entity-type", "client-metrics", "--entity-name", subscription]
    outputs = [kafka_configs(tool, bootstrap, args) for args in (
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
    apache_kafka: object, minikafka: BrokerProcess, kafka_configs_tool: ToolBatch
) -> None:
    subscription = f"sub-{uuid.uuid4().hex[:8]}"
    kafka_bootstrap: str = apache_kafka.bootstrap  # type: ignore[attr-defined]
    on_kafka = loggers_and_client_metrics_scenario(kafka_configs_tool, kafka_bootstrap, subscription)
    on_minikafka = loggers_and_client_metrics_scenario(kafka_configs_tool, minikafka.bootstrap, subscription)
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


# -- ListConfigResources (key 74) ---------------------------------------------------------------------------------
def only_named(output: str, names: set[str]) -> list[str]:
    """The lines of a listing about `names` (a header naming one, the indented lines under it, or the bare name):
    the shared Apache Kafka also holds other tests' groups and subscriptions."""
    kept, keep = [], False
    for line in output.splitlines():
        if not line.startswith("  "):
            keep = any(name in line.replace("'", " ").split() for name in names)
        if keep:
            kept.append(line)
    return kept


def listing_scenario(configs: ToolBatch, client_metrics: ToolBatch, bootstrap: str, suffix: str) -> list[Any]:
    """What kafka-configs and kafka-client-metrics list without an entity name (ListConfigResources v1 for GROUP
    and CLIENT_METRICS), and how they tell an unknown name from a known one."""
    group, dropped, subscription = f"lcr-g-{suffix}", f"lcr-d-{suffix}", f"lcr-s-{suffix}"
    names = {group, dropped, subscription, f"{subscription}-ghost"}

    def configs_run(*args: str) -> str:
        return kafka_configs(configs, bootstrap, list(args))

    def client_metrics_run(*args: str) -> list[str]:
        done = client_metrics.run(["--bootstrap-server", bootstrap, *args])
        return [f"exit {done.status}", *only_named(done.stdout + done.stderr, names)]

    groups, metrics = ("--entity-type", "groups"), ("--entity-type", "client-metrics")
    heartbeat = "consumer.heartbeat.interval.ms"
    return [
        configs_run("--alter", *groups, "--entity-name", group, "--add-config", "consumer.session.timeout.ms=50000"),
        configs_run("--alter", *groups, "--entity-name", dropped, "--add-config", f"{heartbeat}=6000"),
        configs_run("--alter", *groups, "--entity-name", dropped, "--delete-config", heartbeat),
        configs_run("--alter", *metrics, "--entity-name", subscription, "--add-config",
                    "interval.ms=60000,metrics=org.apache.kafka.producer."),
        only_named(configs_run("--describe", *groups), names),
        only_named(configs_run("--describe", *metrics), names),
        configs_run("--describe", *groups, "--entity-name", dropped),
        configs_run("--describe", *metrics, "--entity-name", f"{subscription}-ghost"),
        configs_run("--describe", *metrics, "--entity-name", subscription),
        client_metrics_run("--list"),
        client_metrics_run("--describe"),
        client_metrics_run("--describe", "--name", f"{subscription}-ghost"),
        configs_run("--alter", *metrics, "--entity-name", subscription, "--delete-config", "interval.ms,metrics"),
        configs_run("--describe", *metrics, "--entity-name", subscription),
        client_metrics_run("--list"),
    ]


def test_config_resources_listed_by_kafka_configs_and_kafka_client_metrics_as_on_apache_kafka(
    apache_kafka: object, minikafka: BrokerProcess, kafka_configs_tool: ToolBatch, kafka_lib_dir: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    kafka_bootstrap: str = apache_kafka.bootstrap  # type: ignore[attr-defined]
    with ToolBatch(kafka_lib_dir, CLIENT_METRICS_COMMAND) as client_metrics:
        on_kafka = listing_scenario(kafka_configs_tool, client_metrics, kafka_bootstrap, suffix)
        on_minikafka = listing_scenario(kafka_configs_tool, client_metrics, minikafka.bootstrap, suffix)
    assert on_minikafka == on_kafka
    (*_altered, all_groups, all_subscriptions, dropped_group, ghost, known, listed, described, ghost_described,
     _deleted, deleted_described, listed_after) = on_kafka
    group, dropped, subscription = f"lcr-g-{suffix}", f"lcr-d-{suffix}", f"lcr-s-{suffix}"
    # a group with configs is listed although no member ever joined it; one whose configs were deleted is not
    assert all_groups == [
        f"Dynamic configs for group {group} are:",
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}"]
    assert all_subscriptions[0] == f"Dynamic configs for client-metric {subscription} are:"
    assert "  interval.ms=60000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=60000}" \
        in all_subscriptions
    assert dropped_group == f"The group '{dropped}' doesn't exist and doesn't have dynamic config."
    assert ghost == f"The client-metric '{subscription}-ghost' doesn't exist and doesn't have dynamic config."
    assert f"Dynamic configs for client-metric {subscription} are:" in known
    assert listed == ["exit 0", subscription]
    assert described[:2] == ["exit 0", f"Client metrics configs for {subscription} are:"]
    assert "  interval.ms=60000" in described
    assert ghost_described[1] == f"The client metric resource {subscription}-ghost doesn't exist and doesn't have " \
                                 "dynamic config."
    assert deleted_described == f"The client-metric '{subscription}' doesn't exist and doesn't have dynamic config."
    assert listed_after == ["exit 0"]


Resource = tuple[str, "int | None"]  # name, type (None in v0, which has no type field)


def list_config_resources(client: WireClient, version: int, resource_types: list[int]) -> tuple[int, list[Resource]]:
    fields = {"resource_types": resource_types} if version >= 1 else {}
    response = client.request(ListConfigResourcesRequest[version](**fields))
    return response.error_code, [(r.resource_name, r.resource_type if version >= 1 else None)
                                 for r in response.config_resources]


def wire_listing(bootstrap: str, suffix: str) -> list[object]:
    """ListConfigResources v0 and v1 after a group config, a client-metrics subscription and a topic were made;
    listings filtered to those (and the broker's own entries), in the broker's order."""
    from kafka.protocol.admin import IncrementalAlterConfigsRequest

    from tests.integration.client_drivers import create_topic

    group, subscription, topic = f"wire-g-{suffix}", f"wire-s-{suffix}", f"wire-t-{suffix}"
    create_topic(bootstrap, topic, 1)
    with WireClient(bootstrap) as client:
        altered = client.request(IncrementalAlterConfigsRequest[1](resources=[
            (RESOURCE_GROUP, group, [("consumer.session.timeout.ms", 0, "50000")]),
            (RESOURCE_CLIENT_METRICS, subscription, [("interval.ms", 0, "60000")])], validate_only=False))
        assert [r.error_code for r in altered.responses] == [0, 0], altered
        # Kafka's broker applies the controller's config records to its metadata image a moment after the alter
        # returns; minikafka lists them at once, so this returns at the first try there
        deadline = time.monotonic() + 15
        while {group, subscription} - {name for name, _ in list_config_resources(
                client, 1, [RESOURCE_GROUP, RESOURCE_CLIENT_METRICS])[1]} and time.monotonic() < deadline:
            time.sleep(0.1)
        ours = {group, subscription, topic, "1"}

        def listed(version: int, resource_types: list[int]) -> tuple[int, list[Resource]]:
            error, resources = list_config_resources(client, version, resource_types)
            return error, [resource for resource in resources if resource[0] in ours]

        every = listed(1, [])
        all_topics = list_config_resources(client, 1, [RESOURCE_TOPIC])
        return [
            every,
            listed(1, [RESOURCE_BROKER, RESOURCE_BROKER_LOGGER]),
            listed(1, [RESOURCE_GROUP, RESOURCE_CLIENT_METRICS]),
            (all_topics[0], (topic, RESOURCE_TOPIC) in all_topics[1],
             all(kind == RESOURCE_TOPIC for _name, kind in all_topics[1])),
            listed(1, [RESOURCE_CLIENT_METRICS, 3]),
            listed(1, [RESOURCE_TOPIC, 64]),
            listed(0, []),
        ]


def test_list_config_resources_answers_as_on_apache_kafka(apache_kafka: object, minikafka: BrokerProcess) -> None:
    suffix = uuid.uuid4().hex[:8]
    on_kafka = wire_listing(apache_kafka.bootstrap, suffix)  # type: ignore[attr-defined]
    on_minikafka = wire_listing(minikafka.bootstrap, suffix)
    assert on_minikafka == on_kafka
    group, subscription, topic = f"wire-g-{suffix}", f"wire-s-{suffix}", f"wire-t-{suffix}"
    every, brokers, configured, topics, unsupported, unknown, version_0 = on_kafka
    # no types asked: every supported type, groups first and topics last, as Kafka's KafkaApis lists them
    assert every == (0, [(group, RESOURCE_GROUP), (subscription, RESOURCE_CLIENT_METRICS),
                         ("1", RESOURCE_BROKER_LOGGER), ("1", RESOURCE_BROKER), (topic, RESOURCE_TOPIC)])
    assert brokers == (0, [("1", RESOURCE_BROKER_LOGGER), ("1", RESOURCE_BROKER)])
    assert configured == (0, [(group, RESOURCE_GROUP), (subscription, RESOURCE_CLIENT_METRICS)])
    assert topics == (0, True, True)
    # a type v1 does not list (3 is no config resource type, 64 none yet) fails the whole request
    assert unsupported == unknown == (UNSUPPORTED_VERSION, [])
    # v0, the former ListClientMetricsResources: client-metrics subscriptions only, without a type field
    assert version_0 == (0, [(subscription, None)])

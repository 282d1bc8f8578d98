"""Dynamic broker configs for the LogCleaner over the wire (Kafka's LogCleaner.reconfigure) against a broker
subprocess: spec scenario S54 black-box, the other reconfigurable keys, persistence across a restart.

The cluster default (resource name "", `kafka-configs --entity-default`) goes through kafka-python's generated
IncrementalAlterConfigs v1 / DescribeConfigs v4 messages on a raw socket (`WireClient`): confluent-kafka and
kafka-python's admin clients both refuse an empty broker resource name client-side. This node's own configs
(`--entity-name <node.id>`) go through confluent-kafka's AdminClient.

S54's other half, "force the cleaner threads to die => DeadThreadCount = thread count, and a reconfiguration
revives them", has no wire path (Kafka tests it in-process too): it stays in-process in
tests/cleaner/test_scenarios_s39_s54.py::test_S54_dead_threads_counted_and_revived_by_reconfiguration.

Kafka answers a broker config that fails validation with INVALID_REQUEST, not INVALID_CONFIG (ConfigAdminManager,
KAFKA-13609), and so do we.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.protocol.admin import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

from minikafka.protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import checkpoint_of, consume_all, produce, scrape, wait_for
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(180)

BrokerFactory = Callable[..., BrokerProcess]
TIMEOUT_S = 30
CLEANER = {
    "log.cleaner.threads": "1",
    "log.cleaner.backoff.ms": "300",
    "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
    "minikafka.log.roll.check.interval.ms": "200",
}
THREADS = "log.cleaner.threads"
DEFAULT_FILE = "dynamic-broker-default-config.properties"
BROKER_FILE = "dynamic-broker-config.properties"


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _alter(admin: AdminClient, configs: dict[str, str | None], resource_name: str) -> Any:
    """confluent-kafka IncrementalAlterConfigs on this node's BROKER resource: SET each value, DELETE each None."""
    resource = ConfigResource(ResourceType.BROKER, resource_name, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET if value is not None
                    else AlterConfigOpType.DELETE)
        for name, value in configs.items()])
    return admin.incremental_alter_configs([resource])[resource]


def _alter_default(broker: BrokerProcess, configs: dict[str, str], resource_name: str = "",
                   validate_only: bool = False) -> tuple[int, str | None]:
    """IncrementalAlterConfigs v1 SET on a BROKER resource (default: the cluster default ""), over a raw socket."""
    request_class = IncrementalAlterConfigsRequest[1]
    resource_class = request_class.AlterConfigsResource
    request = request_class(validate_only=validate_only, resources=[resource_class(
        resource_type=4, resource_name=resource_name, configs=[
            resource_class.AlterableConfig(name=name, config_operation=0, value=value)
            for name, value in configs.items()])])
    with WireClient(broker.bootstrap) as client:
        result = client.request(request).responses[0]
    return result.error_code, result.error_message


def _describe_default(broker: BrokerProcess) -> dict[str, tuple[str, int, bool]]:
    """DescribeConfigs v4 of the BROKER resource "": name -> (value, source, read_only)."""
    request_class = DescribeConfigsRequest[4]
    request = request_class(include_synonyms=True, include_documentation=False, resources=[
        request_class.DescribeConfigsResource(resource_type=4, resource_name="", configuration_keys=None)])
    with WireClient(broker.bootstrap) as client:
        result = client.request(request).results[0]
    assert result.error_code == 0, result
    return {c.name: (c.value, c.config_source, c.read_only) for c in result.configs}


def _error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=TIMEOUT_S)
    error: KafkaError = raised.value.args[0]
    return error


def _broker_configs(admin: AdminClient, resource_name: str) -> dict[str, Any]:
    resource = ConfigResource(ResourceType.BROKER, resource_name)
    entries: dict[str, Any] = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
    return entries


def _node_id(admin: AdminClient) -> str:
    return str(admin.list_topics(timeout=TIMEOUT_S).controller_id)


def _worker_processes_started(broker: BrokerProcess, since: int = 0) -> set[str]:
    """Cleaner threads whose worker process started (each idle thread starts one: `clean_worker.CleanWorker`)."""
    return set(re.findall(r"Started cleaner worker process kafka-log-cleaner-worker-(\d+)", broker.read_log()[since:]))


def test_S54_log_cleaner_threads_reconfigured_over_the_wire(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(CLEANER)
    admin = _admin(broker)
    node = _node_id(admin)
    entry = _broker_configs(admin, node)[THREADS]
    assert (entry.value, entry.source, entry.is_read_only) == ("1", ConfigSource.STATIC_BROKER_CONFIG.value, False)
    wait_for(lambda: _worker_processes_started(broker) == {"0"}, 20, "the one cleaner thread's worker process")
    dynamic_default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    # the only cluster default of a fresh broker: Kafka 4.3's ELR min.insync.replicas
    elr_default = {"min.insync.replicas": ("1", dynamic_default, False)}
    assert _describe_default(broker) == elr_default, "no dynamic default yet"

    log_before = len(broker.read_log())
    assert _alter_default(broker, {THREADS: "2"}) == (ErrorCode.NONE, None)  # within 1/2x..2x of 1
    assert _describe_default(broker) == {**elr_default, THREADS: ("2", dynamic_default, False)}
    entry = _broker_configs(admin, node)[THREADS]
    assert (entry.value, entry.source) == ("2", dynamic_default)
    # two fresh cleaner threads run now: each started its worker process
    wait_for(lambda: _worker_processes_started(broker, log_before) == {"0", "1"}, 20, "two cleaner threads")
    assert "Reconfigured the log cleaner: 2 threads" in broker.read_log()[log_before:]

    for threads, rule in (("5", "cannot be increased to more than double the current value 2"),
                          ("0", "should be at least 1")):
        code, message = _alter_default(broker, {THREADS: threads})
        assert code == ErrorCode.INVALID_REQUEST and message is not None and rule in message, (code, message)
    code, message = _alter_default(broker, {THREADS: "two"})
    assert (code, message) == (ErrorCode.INVALID_REQUEST,
                               "Invalid value two for configuration log.cleaner.threads: Not a number of type INT")
    code, message = _alter_default(broker, {"log.cleaner.enable": "false", "num.partitions": "1"})
    assert (code, message) == (ErrorCode.INVALID_REQUEST,
                               "Cannot update these configs dynamically: [log.cleaner.enable, num.partitions]")
    code, message = _alter_default(broker, {THREADS: "2"}, resource_name=str(int(node) + 7))
    assert code == ErrorCode.INVALID_REQUEST and message is not None and "Unexpected broker id" in message
    error = _error_of(_alter(admin, {THREADS: "5"}, node))  # the per-broker resource, through confluent-kafka
    assert error.code() == KafkaError.INVALID_REQUEST and "more than double" in error.str()
    assert _alter_default(broker, {THREADS: "3"}, validate_only=True) == (ErrorCode.NONE, None)
    assert _describe_default(broker)[THREADS][0] == "2", "validate_only changed the config"
    assert "log.cleaner.threads=2" in (broker.data_dir / DEFAULT_FILE).read_text()

    # compaction still works with the reconfigured threads
    topic = "after-reconfigure"
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "compact", "max.compaction.lag.ms": "1000",
                                              "min.cleanable.dirty.ratio": "0.01"})
    keys, versions = 30, 3
    for version in range(versions):
        produce(broker.bootstrap, topic, [(b"k%02d" % k, b"v%d" % version) for k in range(keys)])
    wait_for(lambda: checkpoint_of(broker.data_dir, topic) == keys * versions, 30, "cleaning of the whole log")
    assert [(key, value) for _, key, value in consume_all(broker.bootstrap, topic)] == [
        (b"k%02d" % k, b"v%d" % (versions - 1)) for k in range(keys)]
    assert scrape(broker)[("kafka_log_logcleaner_deadthreadcount", ())] == 0

    log_before = len(broker.read_log())
    broker.restart()
    admin = _admin(broker)
    entry = _broker_configs(admin, node)[THREADS]
    assert (entry.value, entry.source) == ("2", dynamic_default), "lost on restart"
    wait_for(lambda: _worker_processes_started(broker, log_before) == {"0", "1"}, 20, "two threads after restart")
    # the bounds now count from the restored 2 threads
    code, message = _alter_default(broker, {THREADS: "5"})
    assert message is not None and "more than double the current value 2" in message


def test_backoff_io_rate_and_message_max_bytes_applied(broker_factory: BrokerFactory) -> None:
    broker = broker_factory({**CLEANER, "log.cleaner.backoff.ms": "15000"})
    admin = _admin(broker)
    node = _node_id(admin)
    since_last_run = ("kafka_log_logcleanermanager_time_since_last_run_ms", ())
    # a 15 s backoff: the idle threads look for work rarely
    wait_for(lambda: scrape(broker)[since_last_run] > 3000, 20, "an idle gap longer than 3 s")

    _alter(admin, {"log.cleaner.backoff.ms": "100", "log.cleaner.io.max.bytes.per.second": "5000000.0"},
           node).result(timeout=TIMEOUT_S)
    entries = _broker_configs(admin, node)
    for name, value in (("log.cleaner.backoff.ms", "100"), ("log.cleaner.io.max.bytes.per.second", "5000000.0")):
        assert (entries[name].value, entries[name].source) == (value, ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert set(_describe_default(broker)) == {"min.insync.replicas"}, "a per-broker config is not a cluster default"
    assert "log.cleaner.backoff.ms=100" in (broker.data_dir / BROKER_FILE).read_text()
    # the new threads wake every 100 ms
    wait_for(lambda: scrape(broker)[since_last_run] < 1000, 10, "a cleaner run after the change")
    assert max(scrape(broker)[since_last_run] for _ in range(10)) < 2000

    # message.max.bytes: the default of every topic's max.message.bytes, applied to existing logs
    create_topic(broker.bootstrap, "sized", 1)
    assert _alter_default(broker, {"message.max.bytes": "2000"}) == (ErrorCode.NONE, None)
    resource = ConfigResource(ResourceType.TOPIC, "sized")
    topic_entry = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)["max.message.bytes"]
    assert (topic_entry.value, topic_entry.source) == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0,
                         "message.max.bytes": 1_000_000})
    errors: list[KafkaError | None] = []
    producer.produce("sized", value=b"x" * 5000, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    assert [e.code() if e is not None else None for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]

    # DELETE reverts to the static value; a per-broker value outranks the cluster default
    _alter(admin, {"log.cleaner.backoff.ms": None}, node).result(timeout=TIMEOUT_S)
    entry = _broker_configs(admin, node)["log.cleaner.backoff.ms"]
    assert (entry.value, entry.source) == ("15000", ConfigSource.STATIC_BROKER_CONFIG.value)
    _alter(admin, {"message.max.bytes": "3000"}, node).result(timeout=TIMEOUT_S)
    entry = _broker_configs(admin, node)["message.max.bytes"]
    assert (entry.value, entry.source) == ("3000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    # legacy AlterConfigs replaces the resource's whole dynamic set (message.max.bytes=3000 goes)
    request_class = AlterConfigsRequest[2]
    resource_class = request_class.AlterConfigsResource
    request = request_class(validate_only=False, resources=[resource_class(
        resource_type=4, resource_name=node, configs=[
            resource_class.AlterableConfig(name="log.cleaner.backoff.ms", value="300")])])
    with WireClient(broker.bootstrap) as client:
        assert client.request(request).responses[0].error_code == ErrorCode.NONE
    entries = _broker_configs(admin, node)
    assert (entries["log.cleaner.backoff.ms"].value, entries["log.cleaner.backoff.ms"].source) == (
        "300", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert (entries["message.max.bytes"].value, entries["message.max.bytes"].source) == (
        "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert "message.max.bytes" not in (broker.data_dir / BROKER_FILE).read_text()

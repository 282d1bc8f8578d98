"""The Java client (kafka-clients 4.x) fetches in incremental fetch sessions (KIP-227, Fetch v18 by topic id):
small batches and fetch sizes make it consume over hundreds of fetches, against Apache Kafka and minikafka alike,
and minikafka's fetch-session metrics show the sessions were used; and a consumer whose session is evicted
recovers and still consumes exactly."""

from __future__ import annotations

import threading
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.broker.test_fetch_sessions_wire import fetch
from tests.broker_process import BrokerProcess
from tests.interop.java_client import run_java_client
from tests.interop.test_admin_cli import run_tool
from tests.kafka_jars import KafkaHarnessError, ensure_kafka_jars
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("java_client")]

COUNT = 3_000
PARTITIONS = 3
PRODUCER_CONFIG = {"batch.size": "600", "linger.ms": "0"}
CONSUMER_CONFIG = {"max.partition.fetch.bytes": "700", "fetch.max.bytes": "1400"}


def _metrics(broker: BrokerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as response:
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def _contexts(broker: BrokerProcess) -> dict[str, float]:
    samples = _metrics(broker)
    contexts = {labels[0][1]: value for (name, labels), value in samples.items()
                if name == "minikafka_fetch_context_requests_total"}
    contexts["evictions"] = samples[("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total", ())]
    contexts["sessions"] = samples[("kafka_server_fetchsessioncache_numincrementalfetchsessions", ())]
    return contexts


def _run(bootstrap: str, prefix: str) -> dict[str, Any]:
    return run_java_client(bootstrap, f"{prefix}-{uuid.uuid4().hex[:8]}", COUNT, partitions=PARTITIONS,
                           producer_config=PRODUCER_CONFIG, consumer_config=CONSUMER_CONFIG, timeout_ms=60_000)


def _assert_exact(summary: dict[str, Any]) -> None:
    assert summary["produced"] == COUNT and summary["consumed"] == COUNT, summary
    assert summary["digest"] == summary["produced_digest"], "keys, values or headers changed on the way"
    assert summary["out_of_order"] == 0
    for partition, stats in summary["produced_partitions"].items():
        assert stats["first_offset"] == 0 and stats["last_offset"] == stats["count"] - 1
        assert summary["last_offset"][partition] == stats["last_offset"]


def test_java_consumer_consumes_exactly_over_many_fetches_in_a_session(
        target: str, target_bootstrap: str, request: pytest.FixtureRequest) -> None:
    summary = _run(target_bootstrap, "java-sessions")
    _assert_exact(summary)
    if target == "minikafka":
        contexts = _contexts(request.getfixturevalue("broker"))
        assert contexts["full"] >= 1 and contexts["incremental"] >= 50, contexts
        assert contexts["session_error"] == 0, contexts
        assert contexts["sessions"] == 0, "the consumer closes its session (epoch -1) when it closes"


def test_java_consumer_recovers_when_its_session_is_evicted(broker_factory: Any) -> None:
    """One cache slot and no eviction grace: while the Java consumer reads, another fetcher opens a session every
    20 ms, evicting the consumer's (stale after 1 ms). The consumer gets FETCH_SESSION_ID_NOT_FOUND, falls back to
    a full fetch that opens a new session, and still reads every record once, in order."""
    broker = broker_factory({"max.incremental.fetch.session.cache.slots": "1",
                             "minikafka.incremental.fetch.session.eviction.ms": "0"})
    topic = f"evicted-{uuid.uuid4().hex[:8]}"
    produced = run_java_client(broker.bootstrap, topic, COUNT, mode="produce", partitions=PARTITIONS,
                               producer_config=PRODUCER_CONFIG)
    stop = threading.Event()

    def intrude() -> int:
        opened = 0
        with WireClient(broker.bootstrap) as client:
            while not stop.wait(0.02):
                opened += fetch(client, 0, 0, [(topic, 0, 0)]).session_id != 0
        return opened

    with ThreadPoolExecutor(1) as pool:
        intruder = pool.submit(intrude)
        try:
            consumed = run_java_client(broker.bootstrap, topic, COUNT, mode="consume", partitions=PARTITIONS,
                                       consumer_config=CONSUMER_CONFIG, timeout_ms=60_000)
        finally:
            stop.set()
        assert intruder.result() >= 1
    assert consumed["consumed"] == COUNT and consumed["out_of_order"] == 0, consumed
    assert consumed["digest"] == produced["produced_digest"]
    assert consumed["last_offset"] == {p: s["last_offset"] for p, s in produced["produced_partitions"].items()}
    contexts = _contexts(broker)
    assert contexts["evictions"] >= 2 and contexts["session_error"] >= 1, contexts
    assert contexts["incremental"] >= 1, contexts


def test_kafka_broker_api_versions_shows_fetch_as_apache_kafka_advertises_it(
        target_bootstrap: str, apache_kafka: Any) -> None:
    """`kafka-broker-api-versions` prints the same Fetch line for both brokers: Fetch(1): 4 to 18 [usable: 18]."""
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka tools unavailable: {exc}")

    def fetch_line(bootstrap: str) -> str:
        (line,) = [line for line in _api_version_lines(lib_dir, bootstrap) if line.startswith("Fetch(1)")]
        return line

    assert fetch_line(target_bootstrap) == fetch_line(apache_kafka.bootstrap) == "Fetch(1): 4 to 18 [usable: 18]"


#: APIs Apache Kafka 4.3 advertises that minikafka does not, none of which a Kafka 4 producer, consumer (classic or
#: consumer protocol) or transactional client sends in normal operation. Implementing one means removing it here.
NOT_USED_IN_NORMAL_OPERATION = {
    "WriteTxnMarkers": "inter-broker: minikafka's transaction coordinator writes the markers itself",
    "AlterReplicaLogDirs": "admin: moves replicas between log dirs",
    "CreateDelegationToken": "admin: delegation tokens are not implemented",
    "RenewDelegationToken": "admin: delegation tokens",
    "ExpireDelegationToken": "admin: delegation tokens",
    "DescribeDelegationToken": "admin: delegation tokens",
    "AlterPartitionReassignments": "admin: one node, nothing to reassign",
    "ListPartitionReassignments": "admin: one node, nothing to reassign",
    "DescribeQuorum": "KRaft: no controller quorum",
    "UpdateFeatures": "admin: finalized features are fixed (transaction.version via minikafka.transaction.version)",
    "UnregisterBroker": "KRaft: no controller quorum",
    "AddRaftVoter": "KRaft: no controller quorum",
    "RemoveRaftVoter": "KRaft: no controller quorum",
    "InitializeShareGroupState": "inter-broker: minikafka's share coordinator runs in the broker's own process",
    "ReadShareGroupState": "inter-broker: the share coordinator is in-process",
    "WriteShareGroupState": "inter-broker: the share coordinator is in-process",
    "DeleteShareGroupState": "inter-broker: the share coordinator is in-process",
    "ReadShareGroupStateSummary": "inter-broker: the share coordinator is in-process",
    "StreamsGroupHeartbeat": "KIP-1071 streams groups (Kafka Streams with group.protocol=streams), not implemented",
    "StreamsGroupDescribe": "KIP-1071 streams groups",
}


def _api_version_lines(lib_dir: Any, bootstrap: str) -> list[str]:
    main_classes = ("org.apache.kafka.tools.BrokerApiVersionsCommand", "kafka.admin.BrokerApiVersionsCommand")
    done = run_tool(lib_dir, main_classes, ["--bootstrap-server", bootstrap])
    return [line.strip().rstrip(",") for line in done.stdout.splitlines() if "(" in line and "):" in line]


def test_kafka_broker_api_versions_lists_no_normally_used_api_as_unsupported(
        target_bootstrap: str, apache_kafka: Any) -> None:
    """Every API `kafka-broker-api-versions` shows as UNSUPPORTED on minikafka but not on Apache Kafka is one a
    Kafka 4 client does not use in normal operation (the telemetry APIs are unsupported on both: a broker without a
    client-metrics plugin does not advertise them)."""
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka tools unavailable: {exc}")

    def unsupported(bootstrap: str) -> set[str]:
        lines = _api_version_lines(lib_dir, bootstrap)
        assert any(line.startswith("Produce(0)") for line in lines), lines
        return {line.split("(", 1)[0] for line in lines if line.endswith("UNSUPPORTED")}

    ours, apache = unsupported(target_bootstrap), unsupported(apache_kafka.bootstrap)
    assert {"GetTelemetrySubscriptions", "PushTelemetry"} <= apache
    expected = set() if target_bootstrap == apache_kafka.bootstrap else set(NOT_USED_IN_NORMAL_OPERATION)
    assert ours - apache == expected

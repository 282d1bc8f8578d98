"""Apache Kafka's own admin CLI tools (from its official 4.x jars) against Apache Kafka and minikafka:
`kafka-cluster cluster-id` (DescribeCluster), `kafka-log-dirs --describe` (DescribeLogDirs),
`kafka-transactions describe-producers` (DescribeProducers) and `kafka-topics --describe`
(DescribeTopicPartitions). Each runs once per target so the outputs are proven to match in shape; on minikafka
the request metrics also prove that the tool used the new API rather than a Metadata fallback."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.protocol.metadata.metadata import MetadataRequest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.client_drivers import create_topic
from tests.kafka_jars import find_main_class, java_command
from tests.segment_files import batch_bytes
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

TOOL_TIMEOUT_S = 120


@dataclass(frozen=True)
class Target:
    """The broker under test: where clients connect, where its partition directories are, its metrics port."""

    name: str
    bootstrap: str
    log_dir: Path
    metrics_port: int | None  # minikafka only

    def requests_served(self, api: str) -> float:
        """minikafka's `kafka_network_requestmetrics_requests_total{request=api}`."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                   if sample.name == "kafka_network_requestmetrics_requests_total"
                   and sample.labels.get("request") == api)



@pytest.fixture
def target_broker(target: str, request: pytest.FixtureRequest) -> Target:
    if target == "apache":
        kafka = request.getfixturevalue("apache_kafka")
        return Target(target, kafka.bootstrap, Path(kafka.log_dir), None)
    broker = request.getfixturevalue("broker")
    return Target(target, broker.bootstrap, Path(broker.data_dir), broker.metrics_port)


def run_tool(lib_dir: Path, candidates: tuple[str, ...], args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run one Kafka command-line tool; it must succeed and log no warning or error (e.g. about telemetry)."""
    command = java_command(lib_dir, find_main_class(lib_dir, *candidates), args, heap="256m")
    done = subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    noisy = [line for line in done.stderr.splitlines() if " WARN " in line or " ERROR " in line]
    assert noisy == [], done.stderr[-3000:]
    return done


def fresh_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def metadata(bootstrap: str, topics: list[str]) -> Any:
    with WireClient(bootstrap) as client:
        return client.request(MetadataRequest[12](
            topics=[MetadataRequest.MetadataRequestTopic(name=name) for name in topics],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))


def topic_id_of(bootstrap: str, topic: str, timeout_s: float = 30.0) -> Any:
    """The topic's id once Metadata lists it: Apache Kafka's broker learns a topic CreateTopics just made from its
    controller a moment later (until then Metadata answers UNKNOWN_TOPIC_OR_PARTITION, with no id)."""
    deadline = time.monotonic() + timeout_s
    while True:
        (found,) = metadata(bootstrap, [topic]).topics
        if found.error_code == 0 and found.topic_id is not None:
            return found.topic_id
        assert time.monotonic() < deadline, f"{topic} is not in Metadata after {timeout_s} s (error {found.error_code})"
        time.sleep(0.05)


def produce_idempotent(bootstrap: str, topic: str, partition: int, count: int) -> int:
    """Send `count` records with kafka-python's idempotent producer; returns its producer id."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5)
    try:
        for i in range(count):
            producer.send(topic, key=b"k%d" % i, value=b"v" * 50, partition=partition)
        producer.flush(30)
        producer_id: int = producer._transaction_manager.producer_id_and_epoch.producer_id  # no public accessor
        return producer_id
    finally:
        producer.close(5)


def test_kafka_cluster_prints_the_cluster_id_metadata_returns(target_broker: Target, kafka_lib_dir: Path) -> None:
    done = run_tool(kafka_lib_dir, ("org.apache.kafka.tools.ClusterTool", "kafka.admin.ClusterTool"),
                    ["cluster-id", "--bootstrap-server", target_broker.bootstrap])
    cluster_id = metadata(target_broker.bootstrap, []).cluster_id
    assert done.stdout == f"Cluster ID: {cluster_id}\n"
    if target_broker.metrics_port is not None:
        assert target_broker.requests_served("DescribeCluster") >= 1


def test_kafka_log_dirs_prints_the_segment_sizes_on_disk(target_broker: Target, kafka_lib_dir: Path) -> None:
    topic = fresh_topic("logdirs")
    create_topic(target_broker.bootstrap, topic, 3)
    produce_idempotent(target_broker.bootstrap, topic, 0, 20)
    produce_idempotent(target_broker.bootstrap, topic, 1, 3)
    done = run_tool(kafka_lib_dir, ("org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand"),
                    ["--describe", "--bootstrap-server", target_broker.bootstrap, "--topic-list", topic])
    lines = done.stdout.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 1"]
    described = json.loads(lines[2])
    ((log_dir,),) = [broker["logDirs"] for broker in described["brokers"]]
    assert [broker["broker"] for broker in described["brokers"]] == [1] and described["version"] == 1
    assert (log_dir["logDir"], log_dir["error"]) == (os.path.abspath(target_broker.log_dir), None)

    def on_disk(partition: int) -> int:
        return sum(batch_bytes(path) for path in (target_broker.log_dir / f"{topic}-{partition}").glob("*.log"))

    partitions = sorted(log_dir["partitions"], key=lambda entry: entry["partition"])
    assert partitions == [{"partition": f"{topic}-{p}", "size": on_disk(p), "offsetLag": 0, "isFuture": False}
                          for p in range(3)]
    assert partitions[0]["size"] > partitions[1]["size"] > partitions[2]["size"] == 0
    if target_broker.metrics_port is not None:
        assert target_broker.requests_served("DescribeLogDirs") >= 1


def test_kafka_transactions_describe_producers_lists_the_idempotent_producer(
    target_broker: Target, kafka_lib_dir: Path
) -> None:
    topic = fresh_topic("producers")
    create_topic(target_broker.bootstrap, topic, 1)
    started_ms = int(time.time() * 1000)
    producer_id = produce_idempotent(target_broker.bootstrap, topic, 0, 10)
    done = run_tool(kafka_lib_dir, ("org.apache.kafka.tools.TransactionsCommand",),
                    ["--bootstrap-server", target_broker.bootstrap, "describe-producers", "--topic", topic,
                     "--partition", "0"])
    header, *rows = [line.split() for line in done.stdout.splitlines()]
    assert header == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                      "CurrentTransactionStartOffset"]
    assert len(rows) == 1
    pid, epoch, coordinator_epoch, last_sequence, last_timestamp, txn_start = rows[0]
    assert (int(pid), epoch, coordinator_epoch, last_sequence, txn_start) == (producer_id, "0", "-1", "9", "None")
    assert started_ms <= int(last_timestamp) <= int(time.time() * 1000)
    if target_broker.metrics_port is not None:
        assert target_broker.requests_served("DescribeProducers") >= 1


@pytest.mark.parametrize("page_limit", [None, 1])
def test_kafka_topics_describe_lists_every_partition(
    target_broker: Target, kafka_lib_dir: Path, page_limit: int | None
) -> None:
    topic = fresh_topic("topics")
    create_topic(target_broker.bootstrap, topic, 3)
    topic_id = topic_id_of(target_broker.bootstrap, topic)
    before = target_broker.requests_served("DescribeTopicPartitions") if target_broker.metrics_port else 0.0
    args = ["--bootstrap-server", target_broker.bootstrap, "--describe", "--topic", topic]
    if page_limit is not None:
        args += ["--partition-size-limit-per-response", str(page_limit)]
    done = run_tool(kafka_lib_dir, ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"), args)
    summary, *partitions = done.stdout.splitlines()
    kafka_topic_id = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")  # Kafka's Uuid.toString()
    # Configs lists non-default topic configs: the cluster-level min.insync.replicas Kafka 4.3 sets (ELR)
    assert summary == (f"Topic: {topic}\tTopicId: {kafka_topic_id}\tPartitionCount: 3\tReplicationFactor: 1"
                       "\tConfigs: min.insync.replicas=1")
    assert partitions == [f"\tTopic: {topic}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: "
                          for p in range(3)]
    if target_broker.metrics_port is not None:  # one request per page: the cursor was followed
        served = target_broker.requests_served("DescribeTopicPartitions") - before
        assert served >= (3 if page_limit == 1 else 1)

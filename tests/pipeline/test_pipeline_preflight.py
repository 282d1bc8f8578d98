"""`snapshot`, `audit` and `compact --exact` check the broker, the topic and its policy before Spark starts: a
missing topic or a broker that is down fails in seconds with one line and leaves nothing on disk."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.testing.mini_kafka import free_port
from tests.pipeline.kafka_data import Message, create_topic, produce, unique_topic
from tests.pipeline.pipeline_cli import run_pipeline_command, run_pipeline_command_in_process

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.broker_process import BrokerProcess

#: the issue's bound; Spark alone takes longer than this to start and fail
FAST_S = 20.0


def one_line(result: Any) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return str(lines[0])


def test_snapshot_of_a_missing_topic_fails_in_seconds_and_leaves_nothing(broker: BrokerProcess,
                                                                        tmp_path: Path) -> None:
    table = tmp_path / "tables" / "customers"
    started = time.monotonic()
    result = run_pipeline_command("snapshot", "--bootstrap-servers", broker.bootstrap, "--topic", "no-such-topic",
                                  "--table", str(table), timeout_s=120)
    elapsed_s = time.monotonic() - started
    assert result.returncode == 2
    assert one_line(result) == f"minikafka snapshot: topic no-such-topic does not exist on {broker.bootstrap}"
    assert elapsed_s < FAST_S
    assert not table.parent.exists()


def test_snapshot_with_the_broker_down_fails_in_seconds(tmp_path: Path) -> None:
    down = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = run_pipeline_command("snapshot", "--bootstrap-servers", down, "--topic", "orders",
                                  "--table", str(tmp_path / "table"), timeout_s=120)
    assert time.monotonic() - started < FAST_S
    assert result.returncode == 2
    assert one_line(result).startswith(f"minikafka snapshot: no broker answers at {down} (--bootstrap-servers)")
    assert list(tmp_path.iterdir()) == []


def test_audit_of_a_missing_topic_fails_before_spark(broker: BrokerProcess) -> None:
    started = time.monotonic()
    result = run_pipeline_command("audit", "--bootstrap-servers", broker.bootstrap, "--topic", "no-such-topic",
                                  "--admin-url", broker.admin_url, timeout_s=120)
    assert time.monotonic() - started < FAST_S
    assert result.returncode == 2
    assert one_line(result) == f"minikafka audit: topic no-such-topic does not exist on {broker.bootstrap}"


def test_exact_compaction_of_a_delete_topic_is_refused_before_spark(broker: BrokerProcess) -> None:
    topic = unique_topic("exact-delete")
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "delete"})
    started = time.monotonic()
    result = run_pipeline_command("compact", topic, "--exact", "--bootstrap-servers", broker.bootstrap,
                                  "--admin-url", broker.admin_url, timeout_s=120)
    assert time.monotonic() - started < FAST_S
    assert result.returncode == 2
    assert one_line(result).startswith(f"minikafka compact --exact: {topic} has cleanup.policy=delete")


def test_audit_of_a_delete_topic_says_compaction_guarantees_do_not_apply(spark: SparkSession,
                                                                        broker: BrokerProcess) -> None:
    topic = unique_topic("audit-delete")
    create_topic(broker.bootstrap, topic, 1, {"cleanup.policy": "delete", "max.compaction.lag.ms": "1000"})
    produce(broker.bootstrap, topic, [Message(b"k", b"v1", partition=0), Message(b"k", b"v2", partition=0)])
    result = run_pipeline_command_in_process("audit", "--bootstrap-servers", broker.bootstrap, "--topic", topic,
                                             "--admin-url", broker.admin_url)
    assert result.returncode == 0, result.stderr
    assert (f"minikafka audit: {topic} has cleanup.policy=delete: compaction guarantees do not apply; only the "
            "offset order is checked") in result.stderr
    assert '"overdue_value": "not applicable: cleanup.policy=delete, no compaction guarantee"' in result.stdout

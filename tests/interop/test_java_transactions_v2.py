"""Kafka 4's Java producer uses transaction version 2 against minikafka when it is finalized, and the classic
protocol when it is not: the same TxnInteropClient scenario (commit, abort, sendOffsetsToTransaction, a zombie
fenced) with the broker's request counters and DescribeTransactions showing which protocol ran, and Apache
Kafka's kafka-dump-log --transaction-log-decoder reading the v1 `__transaction_state` records it left."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Callable

import pytest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest

from tests.broker_process import BrokerProcess
from tests.interop.java_client import JAR, LIB_DIR, ensure_built
from tests.kafka_jars import KafkaHarnessError, ensure_kafka_jars, find_main_class, java_command
from tests.wire_client import WireClient

pytestmark = pytest.mark.interop

TXN_ID = "java-txn-id"


def run_scenario(broker: BrokerProcess) -> dict[str, object]:
    command = ["java", "-Xmx256m", "-cp", f"{JAR}:{LIB_DIR}/*", "minikafka.interop.TxnInteropClient",
               broker.bootstrap, "java-txn", "java-txn-group", TXN_ID]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    summary: dict[str, object] = json.loads(lines[-1])
    assert summary["read_committed"] == ["c0", "c1", "c2", "c3", "c4"]
    assert summary["read_uncommitted"] == ["c0", "c1", "c2", "a0", "a1", "c3", "c4", "zombie"]
    assert summary["group_offset"] == 5
    return summary


def requests_handled(broker: BrokerProcess) -> dict[str, float]:
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as response:
        text = response.read().decode()
    pattern = re.compile(r'^kafka_network_requestmetrics_requests_total\{request="(\w+)"\} (\S+)$', re.MULTILINE)
    return {name: float(value) for name, value in pattern.findall(text)}


def producer_epoch(broker: BrokerProcess) -> int:
    with WireClient(broker.bootstrap) as client:
        state = client.request(DescribeTransactionsRequest[0](transactional_ids=[TXN_ID])).transaction_states[0]
    return int(state.producer_epoch)


@pytest.mark.usefixtures("java_client")
def test_kafka_4_producer_uses_transaction_version_2(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory({"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"})
    ensure_built()
    summary = run_scenario(broker)
    # The zombie's commit after its successor's InitProducerId: fenced (its late produce was, too).
    assert summary["fenced"] in ("ProducerFencedException", "InvalidProducerEpochException")
    handled = requests_handled(broker)
    # TV_2: no AddPartitionsToTxn (Produce v12 adds) and no AddOffsetsToTxn (TxnOffsetCommit v5 adds).
    assert handled.get("AddPartitionsToTxn", 0) == 0 and handled.get("AddOffsetsToTxn", 0) == 0
    assert handled["EndTxn"] >= 3
    # Epochs: 0 at init, +1 per EndTxn (3), +1 for the zombie's init, +2 for fencing and aborting its transaction
    # (TV_2 abort bumps again), +1 for the successor's init.
    assert producer_epoch(broker) == 7
    assert broker.stop() == 0
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"Apache Kafka's jars unavailable for kafka-dump-log: {exc}")
    logs = [str(path) for path in broker.data_dir.glob("__transaction_state-*/*.log") if path.stat().st_size > 0]
    main = find_main_class(lib_dir, "org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
    done = subprocess.run(java_command(lib_dir, main, ["--files", ",".join(logs), "--deep-iteration",
                                                       "--transaction-log-decoder"], heap="256m"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Exception" not in done.stderr, done.stderr[-3000:]
    values = [line for line in done.stdout.splitlines() if f'"transactionalId":"{TXN_ID}"' in line]
    assert values and all('payload: {"version":"1"' in line for line in values), done.stdout[-3000:]
    assert any('"clientTransactionVersion":2' in line for line in values), done.stdout[-3000:]


@pytest.mark.usefixtures("java_client")
def test_kafka_4_producer_keeps_the_classic_protocol_below_level_2(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory({"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
                             "minikafka.transaction.version": "1"})
    ensure_built()
    summary = run_scenario(broker)
    assert summary["fenced"] in ("ProducerFencedException", "InvalidProducerEpochException")
    handled = requests_handled(broker)
    assert handled["AddPartitionsToTxn"] >= 3 and handled["AddOffsetsToTxn"] == 1
    assert producer_epoch(broker) == 3  # only InitProducerId calls and the fence bump the epoch

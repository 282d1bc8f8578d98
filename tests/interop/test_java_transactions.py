"""The Java client (kafka-clients) runs a transactional producer, sendOffsetsToTransaction, zombie fencing and
read_committed/read_uncommitted consumers against minikafka (TxnInteropClient in tests/interop/java)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from tests.broker_process import BrokerProcess
from tests.interop.java_client import JAR, LIB_DIR, ensure_built

pytestmark = pytest.mark.interop


@pytest.mark.usefixtures("java_client")
def test_java_transactions(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory({"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"})
    ensure_built()
    command = ["java", "-Xmx256m", "-cp", f"{JAR}:{LIB_DIR}/*", "minikafka.interop.TxnInteropClient",
               broker.bootstrap, "java-txn", "java-txn-group", "java-txn-id"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    summary = json.loads(lines[-1])
    assert summary["read_committed"] == ["c0", "c1", "c2", "c3", "c4"]
    assert summary["read_uncommitted"] == ["c0", "c1", "c2", "a0", "a1", "c3", "c4", "zombie"]
    assert summary["group_offset"] == 5
    assert summary["fenced"] in ("ProducerFencedException", "InvalidProducerEpochException")

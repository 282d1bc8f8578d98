"""`__transaction_state` holds Kafka-layout records: Apache Kafka's own kafka-dump-log
--transaction-log-decoder decodes the states a real transactional producer drove minikafka through."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.integration.client_drivers import create_topic
from tests.kafka_jars import find_main_class, java_command

pytestmark = pytest.mark.interop


# The finalized transaction.version picks the value layout, as in Kafka 4: v0 below 2, the flexible v1 from 2 (with
# PreviousProducerId, the id the transition left; librdkafka is a TV_0 client, so no ClientTransactionVersion).
LAYOUTS = {
    "0": '{"version":"0","data":{"producerId":0,"producerEpoch":0,"transactionTimeoutMs":45000,',
    "2": '{"version":"1","data":{"producerId":0,"previousProducerId":0,"producerEpoch":0,"transactionTimeoutMs":45000,',
}


@pytest.mark.parametrize("transaction_version", sorted(LAYOUTS))
def test_kafka_transaction_log_decoder_reads_our_transaction_states(
    broker_factory: Any, apache_kafka: Any, transaction_version: str
) -> None:
    from confluent_kafka import Producer

    broker = broker_factory({"transaction.state.log.num.partitions": "3",
                             "minikafka.transaction.version": transaction_version})
    create_topic(broker.bootstrap, "layout", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "layout-txn",
                         "transaction.timeout.ms": 45_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("layout", value=b"v", partition=0)
    producer.produce("layout", value=b"v", partition=1)
    producer.commit_transaction(30)
    assert broker.stop() == 0

    logs = [path for path in broker.data_dir.glob("__transaction_state-*/*.log") if path.stat().st_size > 0]
    assert len(logs) == 1  # one transactional id -> one partition by Kafka's hash rule
    main = find_main_class(apache_kafka.lib_dir, "org.apache.kafka.tools.DumpLogSegments",
                           "kafka.tools.DumpLogSegments")
    command = java_command(apache_kafka.lib_dir, main, ["--files", str(logs[0]), "--deep-iteration",
                                                        "--transaction-log-decoder"], heap="256m")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    states = [line for line in out.splitlines() if 'key: {"type":"0","data":{"transactionalId":"layout-txn"}}' in line]
    expected = [  # Empty (InitProducerId), Ongoing (AddPartitionsToTxn), PrepareCommit, CompleteCommit
        '"transactionStatus":0,"transactionPartitions":null,',
        '"transactionStatus":1,"transactionPartitions":[{"topic":"layout","partitionIds":[0,1]}],',
        '"transactionStatus":2,"transactionPartitions":[{"topic":"layout","partitionIds":[0,1]}],',
        '"transactionStatus":4,"transactionPartitions":[],',
    ]
    assert len(states) == len(expected), out[-3000:]
    for line, fragment in zip(states, expected, strict=True):
        assert LAYOUTS[transaction_version] in line, line
        assert fragment in line, line

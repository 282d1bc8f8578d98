"""An offset-commit and transaction-commit cycle under a failing disk (issue 13, item 2).

The broker runs in this process (so the `disk_fault` seam reaches its writes) with real clients: a consumer group
commits offsets, and a transactional producer writes records and the group's offsets in one transaction. Every
write, fsync and rename of that cycle fails in turn (EIO at every third one unless MINIKAFKA_FULL_FAULT_MATRIX=1).
ENOSPC is retried by the clients and the cycle completes; EIO takes the log dir offline and the clients give up.
Either way, after a restart:
- the group's plain commit is what the client was told (its acknowledged offset, or the one before);
- the transaction is atomic: its records are visible read_committed exactly once if and only if the group's
  transactional offset is there too, and they are there whenever commit_transaction() returned.
The cleaner is off and the broker's timers are slow, so the seam counts only the cycle's own calls.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from minikafka.testing.mini_kafka import free_port
from tests.disk_faults import DiskFault
from tests.in_process_broker import InProcessBroker
from tests.integration.client_drivers import create_topic, read_committed_values

#: EIO always ends the same way (the log dir offline, then a restart), so the suite injects it at every third call
#: to stay within its time budget; MINIKAFKA_FULL_FAULT_MATRIX=1 injects it at every call (BENCHMARKS.md: 30 of 30).
FULL_MATRIX = os.environ.get("MINIKAFKA_FULL_FAULT_MATRIX") == "1"
EIO_STRIDE = 3
TOPIC = "orders"
RECORDS = 5
PROPS = {
    "num.partitions": "1", "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
    "log.cleaner.enable": "false", "minikafka.metrics.port": "-1", "log.segment.bytes": "2000",
    "log.flush.offset.checkpoint.interval.ms": "3600000", "log.flush.start.offset.checkpoint.interval.ms": "3600000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def run_cycle(bootstrap: str, attempt_s: float, offline: Callable[[], bool]) -> tuple[bool, bool]:
    """Commit offset 3 for group `plain` and a transaction of RECORDS records + offset 7 for group `txn`;
    (plain commit acknowledged, transaction committed). Stops early once the broker's log dir is `offline`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "plain", "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 3)], asynchronous=False)
        plain_ok = True
    except KafkaException:
        plain_ok = False
    finally:
        consumer.close()
    if offline():
        return plain_ok, False
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx", "transaction.timeout.ms": 10_000,
                         "message.timeout.ms": 10_000, "socket.timeout.ms": 2000})
    try:
        producer.init_transactions(attempt_s)
        producer.begin_transaction()
        if offline():
            return plain_ok, False
        for n in range(RECORDS):
            producer.produce(TOPIC, value=b"txn-%d" % n, partition=0)
        producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 7)],
                                             Consumer({"bootstrap.servers": bootstrap, "group.id": "txn"})
                                             .consumer_group_metadata(), attempt_s)
        if offline():
            return plain_ok, False
        producer.commit_transaction(attempt_s)
        return plain_ok, True
    except KafkaException:
        return plain_ok, False


def committed(bootstrap: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (partition,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=30)
        return int(partition.offset)
    finally:
        consumer.close()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("error_number", [errno.ENOSPC, errno.EIO])
def test_every_write_fsync_and_rename_of_a_commit_cycle(tmp_path: Path, disk_fault: DiskFault,
                                                        error_number: int) -> None:
    fail_at, calls_in_cycle = 1, None
    stride = 1 if error_number == errno.ENOSPC or FULL_MATRIX else EIO_STRIDE
    while calls_in_cycle is None or fail_at <= calls_in_cycle:
        broker = InProcessBroker(tmp_path / f"fault-{fail_at}", free_port(), PROPS).start()
        create_topic(broker.bootstrap, TOPIC, 1)
        armed = calls_in_cycle is not None
        disk_fault.fail_at, disk_fault.calls, disk_fault.fired, disk_fault.error_number = (
            fail_at if armed else None, 0, None, error_number)
        plain_ok, txn_ok = run_cycle(broker.bootstrap, 20.0 if error_number == errno.ENOSPC else 3.0,
                                     broker.offline)
        disk_fault.fail_at = None
        where = f"fault at call {fail_at} of {calls_in_cycle} ({disk_fault.fired}, {errno.errorcode[error_number]})"
        if not armed:
            calls_in_cycle = disk_fault.calls
            assert plain_ok and txn_ok and calls_in_cycle > 10, calls_in_cycle
        elif error_number == errno.ENOSPC:
            assert plain_ok and txn_ok, f"{where}: the clients did not get through after retrying"
            assert not broker.offline(), where
        else:
            assert broker.offline() or (plain_ok and txn_ok), f"{where}: EIO neither failed nor took the dir offline"
        broker.stop()

        restarted = InProcessBroker(broker.data_dir, broker.port, PROPS).start()
        try:
            values = read_committed_values(restarted.bootstrap, TOPIC, 0)
            txn_offset = committed(restarted.bootstrap, "txn")
            plain_offset = committed(restarted.bootstrap, "plain")
        finally:
            restarted.stop()
        assert values in ([], [b"txn-%d" % n for n in range(RECORDS)]), f"{where}: {values}"
        assert (txn_offset == 7) == bool(values), f"{where}: records {values} but offset {txn_offset}"
        if txn_ok:
            assert values, f"{where}: a committed transaction was lost"
        assert plain_offset == 3 if plain_ok else plain_offset in (3, -1001), f"{where}: plain {plain_offset}"
        fail_at += stride
    print(f"commit cycle: {calls_in_cycle} fault points, every {stride} injected with "
          f"{errno.errorcode[error_number]}, all consistent")

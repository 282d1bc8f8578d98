"""ReplicaManager's describe accessors on a real LogManager: DescribeLogDirs sizes and the offline log dir,
DescribeProducers copies of the producer state."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikafka.broker.replica_manager import ReplicaManager
from minikafka.protocol.errors import ErrorCode, KafkaStorageError, UnknownTopicOrPartitionError
from minikafka.protocol.records import Record, build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from tests.segment_files import batch_bytes

T0 = 1_700_000_000_000


@pytest.fixture
def replica_manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    log_manager = LogManager(tmp_path / "logs", {}, FakeClock(T0))
    log_manager.startup()
    log_manager.create_topic("t", 2, {})
    yield ReplicaManager(log_manager)
    log_manager.shutdown()


def idempotent_batch(producer_id: int, sequence: int, count: int) -> bytes:
    return build_batch([Record(i, T0 + i, b"k", b"v") for i in range(count)], base_offset=0,
                       producer_id=producer_id, producer_epoch=0, base_sequence=sequence)


def test_describe_log_dir_sizes_and_the_offline_dir(replica_manager: ReplicaManager, tmp_path: Path) -> None:
    replica_manager.append("t", 1, idempotent_batch(7, 0, 3))
    described = replica_manager.describe_log_dir([("t", 1), ("t", 5), ("other", 0)])
    assert described.error is None and described.log_dir == os.path.abspath(tmp_path / "logs")
    segment = tmp_path / "logs" / "t-1" / f"{0:020d}.log"
    assert batch_bytes(segment) == len(idempotent_batch(7, 0, 3))
    assert described.partition_sizes == {("t", 1): batch_bytes(segment)}
    assert described.total_bytes >= described.usable_bytes > 0
    assert set(replica_manager.describe_log_dir(None).partition_sizes) == {("t", 0), ("t", 1)}

    replica_manager.log_manager.mark_log_dir_offline("test")
    offline = replica_manager.describe_log_dir(None)
    assert offline.error is not None and offline.error.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert (offline.partition_sizes, offline.total_bytes, offline.usable_bytes) == ({}, -1, -1)
    with pytest.raises(KafkaStorageError):
        replica_manager.active_producers("t", 1)


def test_active_producers_are_copies_by_producer_id(replica_manager: ReplicaManager) -> None:
    replica_manager.append("t", 0, idempotent_batch(9, 0, 2))
    replica_manager.append("t", 0, idempotent_batch(3, 0, 1))
    entries = replica_manager.active_producers("t", 0)
    assert [(e.producer_id, e.last_sequence, e.last_timestamp_ms) for e in entries] == [(3, 0, T0), (9, 1, T0 + 1)]
    replica_manager.append("t", 0, idempotent_batch(9, 2, 1))
    assert entries[1].last_sequence == 1  # a snapshot, not the live entry
    assert replica_manager.active_producers("t", 0)[1].last_sequence == 2
    with pytest.raises(UnknownTopicOrPartitionError):
        replica_manager.active_producers("t", 2)

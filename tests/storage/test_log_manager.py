"""LogManager: topic lifecycle, registry persistence, checkpoints, clean shutdown."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest

from minikafka.protocol.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicExceptionError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from minikafka.storage.checkpoint import OffsetCheckpointFile
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from tests.storage.conftest import batch


@pytest.fixture
def manager(tmp_path: Path, clock: FakeClock) -> LogManager:
    m = LogManager(tmp_path, {"log.segment.bytes": "100000"}, clock)
    m.startup()
    return m


def test_create_produce_reload(tmp_path: Path, clock: FakeClock, manager: LogManager) -> None:
    meta = manager.create_topic("orders", 3, {"cleanup.policy": "compact"})
    assert meta.num_partitions == 3 and manager.topic("orders") == meta
    log = manager.get_log("orders", 1)
    assert log is not None and log.config.compact and log.config.segment_bytes == 100000
    log.append_as_leader(batch(b"v"))
    text = (tmp_path / "orders-1" / "partition.metadata").read_text()
    encoded = base64.urlsafe_b64encode(meta.topic_id.bytes).decode().rstrip("=")
    assert text == f"version: 0\ntopic_id: {encoded}\n" and len(encoded) == 22
    assert "node.id=" in (tmp_path / "meta.properties").read_text()
    manager.shutdown()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").read()[("orders", 1)] == 1

    again = LogManager(tmp_path, {}, clock)
    again.startup()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert again.topics()["orders"].topic_id == meta.topic_id
    reloaded = again.get_log("orders", 1)
    assert reloaded is not None and reloaded.log_end_offset == 1
    assert len(again.all_logs()) == 3


def test_create_topic_errors(manager: LogManager) -> None:
    manager.create_topic("t", 1, {})
    with pytest.raises(TopicAlreadyExistsError):
        manager.create_topic("t", 1, {})
    for bad in ["", ".", "..", "a" * 250, "bad name", "x/y"]:
        with pytest.raises(InvalidTopicExceptionError):
            manager.create_topic(bad, 1, {})
    with pytest.raises(InvalidPartitionsError):
        manager.create_topic("zero", 0, {})
    with pytest.raises(InvalidConfigError, match=r"segment\.bytes"):
        manager.create_topic("cfg", 1, {"segment.bytes": "-5"})
    with pytest.raises(InvalidConfigError):
        manager.create_topic("cfg", 1, {"no.such.config": "1"})
    assert manager.topic("cfg") is None and manager.topic("zero") is None


def test_validate_only_creates_nothing(tmp_path: Path, manager: LogManager) -> None:
    manager.create_topic("dry", 2, {}, validate_only=True)
    assert manager.topic("dry") is None and not (tmp_path / "dry-0").exists()


def test_delete_topic(tmp_path: Path, clock: FakeClock, manager: LogManager) -> None:
    manager.create_topic("gone", 2, {})
    manager.get_log("gone", 0).append_as_leader(batch(b"x"))  # type: ignore[union-attr]
    manager.delete_topic("gone")
    assert manager.topic("gone") is None and manager.get_log("gone", 0) is None
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("gone")]
    with pytest.raises(UnknownTopicOrPartitionError):
        manager.delete_topic("gone")
    # recreating starts empty
    manager.create_topic("gone", 1, {})
    assert manager.get_log("gone", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_create_partitions(manager: LogManager) -> None:
    manager.create_topic("p", 2, {})
    with pytest.raises(InvalidPartitionsError):
        manager.create_partitions("p", 1)
    with pytest.raises(InvalidPartitionsError):
        manager.create_partitions("p", 2)
    with pytest.raises(UnknownTopicOrPartitionError):
        manager.create_partitions("nope", 5)
    manager.create_partitions("p", 4, validate_only=True)
    assert manager.get_log("p", 3) is None
    manager.create_partitions("p", 4)
    assert manager.get_log("p", 3) is not None and manager.topics()["p"].num_partitions == 4


def test_alter_topic_config(tmp_path: Path, clock: FakeClock, manager: LogManager) -> None:
    manager.create_topic("a", 1, {"retention.ms": "1000"})
    with pytest.raises(InvalidConfigError, match="conflict"):
        manager.alter_topic_config("a", {"min.compaction.lag.ms": "200", "max.compaction.lag.ms": "100"})
    manager.alter_topic_config("a", {"cleanup.policy": "compact"}, validate_only=True)
    assert not manager.get_log("a", 0).config.compact  # type: ignore[union-attr]
    manager.alter_topic_config("a", {"cleanup.policy": "compact"})
    log = manager.get_log("a", 0)
    assert log is not None and log.config.compact and log.config.retention_ms == 604_800_000
    manager.shutdown()
    again = LogManager(tmp_path, {}, clock)
    again.startup()
    assert again.topics()["a"].config_overrides == {"cleanup.policy": "compact"}


def test_retention_and_rolls_across_logs(manager: LogManager, clock: FakeClock) -> None:
    manager.create_topic("r", 1, {"segment.bytes": "200", "retention.ms": "1000", "segment.ms": "5000"})
    log = manager.get_log("r", 0)
    assert log is not None
    for _ in range(5):
        log.append_as_leader(batch(b"x" * 40))
    manager.enforce_retention(clock.time_ms() + 10_000)
    assert len(log.segments()) == 1 and log.log_start_offset > 0
    start_cp = OffsetCheckpointFile(manager.log_dir / "log-start-offset-checkpoint").read()
    assert start_cp[("r", 0)] == log.log_start_offset
    manager.roll_due_segments(clock.time_ms() + 5000)
    assert log.active_segment.is_empty


def test_flush_dirty_logs(manager: LogManager, clock: FakeClock) -> None:
    manager.create_topic("f", 1, {"flush.messages": "2"})
    log = manager.get_log("f", 0)
    assert log is not None
    log.append_as_leader(batch(b"a"))
    manager.flush_dirty_logs(clock.time_ms())
    assert log.recovery_point == 0
    log.append_as_leader(batch(b"b"))
    manager.flush_dirty_logs(clock.time_ms())
    assert log.recovery_point == 2


def test_orphan_dir_of_unregistered_topic_is_removed(tmp_path: Path, clock: FakeClock) -> None:
    m = LogManager(tmp_path, {}, clock)
    m.startup()
    m.create_topic("keep", 1, {})
    orphan = tmp_path / "ghost-0"
    orphan.mkdir()
    (orphan / "partition.metadata").write_text(f"version: 0\ntopic_id: {uuid.uuid4()}\n")
    m.shutdown()
    again = LogManager(tmp_path, {}, clock)
    again.startup()
    assert not orphan.exists() and (tmp_path / "keep-0").exists()
    assert again.producer_ids().next_producer_id() >= 0

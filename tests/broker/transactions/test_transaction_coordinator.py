"""TransactionCoordinator state machine, driven synchronously: an in-memory `__transaction_state` holding
real v2 batches, a FakeClock, a ManualScheduler, and a marker sink that records (or refuses) markers."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from minikafka.broker.groups.offsets_topic import MemoryOffsetsTopic
from minikafka.broker.groups.scheduler import ManualScheduler
from minikafka.broker.transactions.config import TransactionConfig
from minikafka.broker.transactions.transaction_coordinator import InitProducerIdResult, TransactionCoordinator
from minikafka.broker.transactions.transaction_log import decode_key, decode_value
from minikafka.broker.transactions.transaction_metadata import (
    InvalidTransitionError,
    TransactionMetadata,
    TransactionState,
    is_valid_transition,
)
from minikafka.broker.transactions.transaction_state_manager import TransactionStateManager
from minikafka.protocol.errors import ErrorCode, KafkaStorageError
from minikafka.storage.clock import FakeClock

S = TransactionState


class MarkerSink:
    """Collects markers as (topic, partition, producer_id, epoch, commit); refuses while `fail_with` is set."""

    def __init__(self) -> None:
        self.markers: list[tuple[str, int, int, int, bool]] = []
        self.fail_with: Exception | None = None

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                     coordinator_epoch: int, commit: bool) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.markers.append((topic, partition, producer_id, producer_epoch, commit))


class Harness:
    def __init__(self, topic: MemoryOffsetsTopic | None = None, **config: int) -> None:
        self.clock = FakeClock()
        self.scheduler = ManualScheduler(self.clock)
        self.config = TransactionConfig(state_log_num_partitions=3, **config)
        self.topic = topic or MemoryOffsetsTopic()
        self.topic.create_now(3)
        self.markers = MarkerSink()
        self.ids = itertools.count(1000)
        self.manager = TransactionStateManager(self.config, self.topic, self.clock)
        self.coordinator = TransactionCoordinator(self.config, self.manager, self.markers, self._allocate,
                                                  self.scheduler, self.clock)
        asyncio.run(self.coordinator.startup())

    async def _allocate(self) -> int:
        return next(self.ids)

    def init(self, txn_id: str = "tx", timeout_ms: int = 60_000, producer_id: int = -1,
             epoch: int = -1) -> InitProducerIdResult:
        return asyncio.run(self.coordinator.handle_init_producer_id(txn_id, timeout_ms, producer_id, epoch))

    def begin(self, txn_id: str = "tx", timeout_ms: int = 60_000) -> tuple[int, int]:
        result = self.init(txn_id, timeout_ms)
        assert result.error is ErrorCode.NONE
        return result.producer_id, result.producer_epoch

    def states_written(self, txn_id: str = "tx") -> list[TransactionState]:
        partition = self.manager.partition_for(txn_id)
        return [decode_value(value).state for key, value in self.topic.records(partition)
                if decode_key(key) == txn_id and value is not None]


def test_transitions_follow_kafka() -> None:
    assert is_valid_transition(S.ONGOING, S.PREPARE_COMMIT)
    assert is_valid_transition(S.COMPLETE_ABORT, S.ONGOING)
    assert not is_valid_transition(S.EMPTY, S.PREPARE_COMMIT)
    assert not is_valid_transition(S.PREPARE_COMMIT, S.COMPLETE_ABORT)
    metadata = TransactionMetadata.new("x", 1, 1000, 0)
    with pytest.raises(InvalidTransitionError):
        metadata.prepare_complete(0)


def test_new_id_gets_a_producer_id_at_epoch_0_and_reinit_bumps_the_epoch() -> None:
    h = Harness()
    first = h.init()
    assert first == InitProducerIdResult(ErrorCode.NONE, 1000, 0)
    assert h.init() == InitProducerIdResult(ErrorCode.NONE, 1000, 1)
    assert h.states_written() == [S.EMPTY, S.EMPTY]


def test_invalid_timeout_and_empty_id_are_refused() -> None:
    h = Harness()
    assert h.init(timeout_ms=900_001).error is ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout_ms=0).error is ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert h.init(txn_id="").error is ErrorCode.INVALID_REQUEST


def test_commit_writes_prepare_markers_then_complete() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 0), ("t", 1)]) is ErrorCode.NONE
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 1)) is ErrorCode.NONE
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 2)) is ErrorCode.INVALID_TXN_STATE
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.NONE
    assert h.markers.markers == [("t", 0, pid, epoch, True), ("t", 1, pid, epoch, True)]
    assert h.states_written() == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    metadata = h.manager.get("tx")
    assert metadata is not None and metadata.topic_partitions == set()
    # A retried EndTxn(commit) succeeds; abort now is a state error; so is any EndTxn with nothing begun.
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.NONE
    assert h.coordinator.handle_end_txn("tx", pid, epoch, False) is ErrorCode.INVALID_TXN_STATE
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0)) is ErrorCode.INVALID_TXN_STATE


def test_add_partitions_checks_producer_id_and_epoch() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.coordinator.handle_add_partitions("nope", pid, epoch, [("t", 0)]) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.coordinator.handle_add_partitions("tx", pid + 1, epoch, [("t", 0)]) is \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.coordinator.handle_add_partitions("tx", pid, epoch + 1, [("t", 0)]) is ErrorCode.PRODUCER_FENCED
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.INVALID_TXN_STATE  # Empty


def test_second_producer_fences_the_first_and_aborts_its_transaction() -> None:
    h = Harness()
    pid, epoch = h.begin()
    h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 0)])
    second = h.init()
    # The ongoing transaction was aborted under the fenced epoch (epoch + 1), then the new producer bumped again.
    assert h.markers.markers == [("t", 0, pid, epoch + 1, False)]
    assert second == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 2)
    assert h.states_written()[-3:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT, S.EMPTY]
    # The zombie is fenced on its next call.
    assert h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 1)]) is ErrorCode.PRODUCER_FENCED
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.PRODUCER_FENCED
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0)) is ErrorCode.INVALID_PRODUCER_EPOCH


def test_kip_360_bump_with_the_current_or_last_epoch_and_fencing_otherwise() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.init(producer_id=pid, epoch=epoch) == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 1)
    # A retry of that bump (same expected epoch, now the "last" epoch) returns the same epoch again.
    assert h.init(producer_id=pid, epoch=epoch) == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 1)
    assert h.init(producer_id=pid, epoch=epoch + 7).error is ErrorCode.PRODUCER_FENCED
    assert h.init(producer_id=pid + 5, epoch=0).error is ErrorCode.PRODUCER_FENCED


def test_exhausted_epoch_rotates_to_a_new_producer_id() -> None:
    h = Harness()
    pid, _epoch = h.begin()
    metadata = h.manager.get("tx")
    assert metadata is not None
    metadata.producer_epoch = 32_766
    result = h.init(producer_id=pid, epoch=32_766)
    assert result == InitProducerIdResult(ErrorCode.NONE, 1001, 0)
    assert metadata.last_producer_id == pid


def test_marker_failure_leaves_prepare_state_and_the_timer_retries() -> None:
    h = Harness(abort_timed_out_transaction_cleanup_interval_ms=1000)
    pid, epoch = h.begin()
    h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 0)])
    h.markers.fail_with = KafkaStorageError("disk")
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.NONE  # PrepareCommit is durable
    assert h.manager.get("tx").state is S.PREPARE_COMMIT  # type: ignore[union-attr]
    assert h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 1)]) is ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.init().error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.markers.fail_with = None
    h.scheduler.advance_ms(1000)
    assert h.manager.get("tx").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]
    assert h.markers.markers == [("t", 0, pid, epoch, True)]


def test_timed_out_transaction_is_aborted_with_an_epoch_bump() -> None:
    h = Harness(abort_timed_out_transaction_cleanup_interval_ms=1000)
    pid, epoch = h.begin(timeout_ms=2000)
    h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 0)])
    h.scheduler.advance_ms(2000)
    assert h.manager.get("tx").state is S.ONGOING  # type: ignore[union-attr]
    h.scheduler.advance_ms(1000)
    assert h.manager.get("tx").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    assert h.markers.markers == [("t", 0, pid, epoch + 1, False)]
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.PRODUCER_FENCED


def test_reload_restores_ids_and_completes_prepared_transactions() -> None:
    h = Harness()
    pid, epoch = h.begin("a")
    h.coordinator.handle_add_partitions("a", pid, epoch, [("t", 0)])
    b_pid, b_epoch = h.begin("b")
    h.coordinator.handle_add_partitions("b", b_pid, b_epoch, [("t", 1)])
    h.markers.fail_with = KafkaStorageError("disk")
    h.coordinator.handle_end_txn("b", b_pid, b_epoch, False)  # stays PrepareAbort
    restarted = Harness(topic=h.topic)
    a = restarted.manager.get("a")
    assert a is not None and (a.producer_id, a.producer_epoch, a.state) == (pid, epoch, S.ONGOING)
    assert a.topic_partitions == {("t", 0)} and a.txn_timeout_ms == 60_000
    b = restarted.manager.get("b")
    assert b is not None and b.state is S.COMPLETE_ABORT
    assert restarted.markers.markers == [("t", 1, b_pid, b_epoch, False)]
    assert restarted.init("a") == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 2)  # fence + abort + bump


def test_expired_ids_are_tombstoned() -> None:
    h = Harness(transactional_id_expiration_ms=5000, remove_expired_transaction_cleanup_interval_ms=1000)
    h.init()
    h.scheduler.advance_ms(5000)
    assert h.manager.get("tx") is None
    partition = h.manager.partition_for("tx")
    assert h.topic.records(partition)[-1] == (h.topic.records(partition)[0][0], None)
    assert Harness(topic=h.topic).manager.get("tx") is None


def test_log_append_failure_keeps_the_cached_state() -> None:
    h = Harness()
    pid, epoch = h.begin()
    h.topic.fail_with = KafkaStorageError("disk")
    assert h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 0)]) is ErrorCode.NOT_COORDINATOR
    assert h.manager.get("tx").state is S.EMPTY  # type: ignore[union-attr]

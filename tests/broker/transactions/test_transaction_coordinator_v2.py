"""Transaction version 2 (KIP-890 part 2) in the coordinator: the implicit AddPartitionsToTxn of a TV_2 produce,
the epoch bump of every EndTxn v5 (markers carry the bumped epoch), its retries, epoch overflow onto a new
producer id, fencing, and the v1 `__transaction_state` layout — driven like test_transaction_coordinator."""

from __future__ import annotations

import asyncio
import struct

from minikafka.broker.transactions.transaction_coordinator import EndTxnResult, InitProducerIdResult
from minikafka.broker.transactions.transaction_log import decode_key, decode_value, encode_value
from minikafka.broker.transactions.transaction_metadata import TransactionState, TxnTransitMetadata
from minikafka.broker.transactions.transaction_version import SupportedOperation
from minikafka.protocol.errors import ErrorCode, KafkaStorageError
from tests.broker.transactions.test_transaction_coordinator import Harness

S = TransactionState
ADD = SupportedOperation.ADD_PARTITION


def end(h: Harness, pid: int, epoch: int, commit: bool, txn_id: str = "tx") -> EndTxnResult:
    return asyncio.run(h.coordinator.handle_end_txn_tv2(txn_id, pid, epoch, commit))


def values_written(h: Harness, txn_id: str = "tx") -> list[bytes]:
    partition = h.manager.partition_for(txn_id)
    return [value for key, value in h.topic.records(partition) if decode_key(key) == txn_id and value is not None]


def test_produce_adds_its_partition_and_end_txn_bumps_the_epoch() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD) is ErrorCode.NONE
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD) is ErrorCode.NONE  # already in: no write
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 1), ADD) is ErrorCode.NONE
    assert end(h, pid, epoch, True) == EndTxnResult(ErrorCode.NONE, pid, epoch + 1)
    assert h.markers.markers == [("t", 0, pid, epoch + 1, True), ("t", 1, pid, epoch + 1, True)]
    assert h.states_written() == [S.EMPTY, S.ONGOING, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    values = [decode_value(value) for value in values_written(h)]
    assert [struct.unpack(">h", value[:2])[0] for value in values_written(h)] == [1] * 5  # the v1 layout
    assert [value.client_transaction_version for value in values] == [0, 2, 2, 2, 2]
    assert [value.producer_epoch for value in values] == [0, 0, 0, 1, 1]
    # The next transaction runs at the bumped epoch; the old epoch is fenced.
    assert h.coordinator.verify_partition("tx", pid, epoch + 1, ("t", 2), ADD) is ErrorCode.NONE
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 2), ADD) is ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(h, pid, epoch + 1, False) == EndTxnResult(ErrorCode.NONE, pid, epoch + 2)
    assert h.markers.markers[-1] == ("t", 2, pid, epoch + 2, False)


def test_end_txn_retries_and_aborts_of_nothing_follow_kafkas_table() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert end(h, pid, epoch, True) == EndTxnResult(ErrorCode.INVALID_TXN_STATE)  # Empty: commit of nothing
    assert end(h, pid, epoch, False) == EndTxnResult(ErrorCode.NONE, pid, epoch + 1)  # Empty: abort bumps
    assert h.markers.markers == []
    assert end(h, pid, epoch, False) == EndTxnResult(ErrorCode.NONE, pid, epoch + 1)  # a retry: no second bump
    assert end(h, pid, epoch, True) == EndTxnResult(ErrorCode.INVALID_TXN_STATE)
    h.coordinator.verify_partition("tx", pid, epoch + 1, ("t", 0), ADD)
    assert end(h, pid, epoch + 1, True) == EndTxnResult(ErrorCode.NONE, pid, epoch + 2)
    assert end(h, pid, epoch + 1, True) == EndTxnResult(ErrorCode.NONE, pid, epoch + 2)  # retried commit
    assert end(h, pid, epoch + 1, False) == EndTxnResult(ErrorCode.INVALID_TXN_STATE)  # abort "retry" of a commit
    assert end(h, pid, epoch + 2, True) == EndTxnResult(ErrorCode.INVALID_TXN_STATE)  # nothing to commit
    assert end(h, pid, epoch + 5, True) == EndTxnResult(ErrorCode.PRODUCER_FENCED)
    assert end(h, pid + 1, epoch + 2, True) == EndTxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    assert h.states_written()[-2:] == [S.PREPARE_COMMIT, S.COMPLETE_COMMIT]


def test_epoch_overflow_continues_under_a_new_producer_id() -> None:
    h = Harness()
    pid, _epoch = h.begin()
    metadata = h.manager.get("tx")
    assert metadata is not None
    metadata.producer_epoch = 32_766  # Short.MAX_VALUE - 1: exhausted
    h.coordinator.verify_partition("tx", pid, 32_766, ("t", 0), ADD)
    assert end(h, pid, 32_766, True) == EndTxnResult(ErrorCode.NONE, 1001, 0)
    assert h.markers.markers == [("t", 0, pid, 32_767, True)]
    assert (metadata.producer_id, metadata.producer_epoch, metadata.last_producer_id) == (1001, 0, pid)
    assert end(h, pid, 32_766, True) == EndTxnResult(ErrorCode.NONE, 1001, 0)  # the retry with the old id
    prepare, complete = (decode_value(value) for value in values_written(h)[-2:])
    assert (prepare.state, prepare.producer_id, prepare.producer_epoch, prepare.next_producer_id) == (
        S.PREPARE_COMMIT, pid, 32_767, 1001)
    assert (complete.state, complete.producer_id, complete.producer_epoch, complete.previous_producer_id,
            complete.next_producer_id) == (S.COMPLETE_COMMIT, 1001, 0, pid, -1)


def test_overflow_with_pending_markers_completes_after_a_restart() -> None:
    h = Harness()
    pid, _epoch = h.begin()
    metadata = h.manager.get("tx")
    assert metadata is not None
    metadata.producer_epoch = 32_766
    h.coordinator.verify_partition("tx", pid, 32_766, ("t", 0), ADD)
    h.markers.fail_with = KafkaStorageError("disk")
    assert end(h, pid, 32_766, True) == EndTxnResult(ErrorCode.NONE, 1001, 0)  # PrepareCommit is durable
    restarted = Harness(topic=h.topic)
    reloaded = restarted.manager.get("tx")
    assert reloaded is not None and (reloaded.state, reloaded.producer_id, reloaded.producer_epoch) == (
        S.COMPLETE_COMMIT, 1001, 0)
    assert restarted.markers.markers == [("t", 0, pid, 32_767, True)]


def test_a_new_producer_fences_a_tv2_transaction_with_one_more_bump() -> None:
    h = Harness()
    pid, epoch = h.begin()
    h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD)
    # Fence (epoch + 1), then the TV_2 abort bumps again: the markers carry epoch + 2, the new producer gets + 3.
    assert h.init() == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 3)
    assert h.markers.markers == [("t", 0, pid, epoch + 2, False)]
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD) is ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(h, pid, epoch, True) == EndTxnResult(ErrorCode.PRODUCER_FENCED)


def test_timed_out_tv2_transaction_is_aborted_and_its_producer_fenced() -> None:
    h = Harness(abort_timed_out_transaction_cleanup_interval_ms=1000)
    pid, epoch = h.begin(timeout_ms=2000)
    h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD)
    h.scheduler.advance_ms(3000)
    assert h.manager.get("tx").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    assert h.markers.markers == [("t", 0, pid, epoch + 2, False)]
    assert end(h, pid, epoch, False) == EndTxnResult(ErrorCode.PRODUCER_FENCED)


def test_verification_errors_by_request_version() -> None:
    h = Harness()
    pid, epoch = h.begin()
    generic = SupportedOperation.GENERIC_ERROR_SUPPORTED
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), generic) is ErrorCode.TRANSACTION_ABORTABLE
    assert h.coordinator.verify_partition("tx", pid, epoch, ("t", 0)) is ErrorCode.INVALID_TXN_STATE
    assert h.coordinator.verify_partition("tx", pid + 9, epoch, ("t", 0), ADD) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.coordinator.verify_partitions_in_transaction("tx", pid, epoch, [("t", 0)]) == {
        ("t", 0): ErrorCode.TRANSACTION_ABORTABLE}
    h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD)
    assert h.coordinator.verify_partitions_in_transaction("tx", pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.TRANSACTION_ABORTABLE}
    assert h.coordinator.verify_partitions_in_transaction("tx", pid, epoch + 1, [("t", 0)]) == {
        ("t", 0): ErrorCode.PRODUCER_FENCED}


def test_finalized_level_0_writes_the_v0_layout_and_tv1_clients_keep_their_epoch() -> None:
    h = Harness(transaction_version=0)
    pid, epoch = h.begin()
    assert h.coordinator.handle_add_partitions("tx", pid, epoch, [("t", 0)]) is ErrorCode.NONE
    assert h.coordinator.handle_end_txn("tx", pid, epoch, True) is ErrorCode.NONE
    assert h.markers.markers == [("t", 0, pid, epoch, True)]
    assert {struct.unpack(">h", value[:2])[0] for value in values_written(h)} == {0}
    # An EndTxn v5 client is TV_2 whatever the finalized level (Kafka's transactionVersionForEndTxn).
    h.coordinator.verify_partition("tx", pid, epoch, ("t", 0), ADD)
    assert end(h, pid, epoch, True) == EndTxnResult(ErrorCode.NONE, pid, epoch + 1)


def test_v1_value_layout_is_kafkas() -> None:
    transit = TxnTransitMetadata(7, 6, 3, 2, 60_000, S.PREPARE_COMMIT, frozenset({("t", 1), ("t", 0)}), 100, 200,
                                 next_producer_id=9, client_transaction_version=2)
    expected = (struct.pack(">hqhib", 1, 7, 3, 60_000, 2) + bytes([2, 2]) + b"t" + bytes([3])
                + struct.pack(">ii", 0, 1) + bytes([0]) + struct.pack(">qq", 200, 100)
                + bytes([3, 0, 8]) + struct.pack(">q", 6) + bytes([1, 8]) + struct.pack(">q", 9)
                + bytes([2, 2]) + struct.pack(">h", 2))
    assert encode_value(transit, 1) == expected
    value = decode_value(expected)
    assert (value.producer_id, value.previous_producer_id, value.next_producer_id, value.client_transaction_version,
            value.topic_partitions) == (7, 6, 9, 2, frozenset({("t", 0), ("t", 1)}))
    empty = TxnTransitMetadata(7, -1, 0, -1, 60_000, S.EMPTY, frozenset(), -1, 200)
    assert encode_value(empty, 1) == struct.pack(">hqhib", 1, 7, 0, 60_000, 0) + bytes([0]) + struct.pack(
        ">qq", 200, -1) + bytes([0])

"""Transactions in the partition log: LSO, COMMIT/ABORT markers, the `.txnindex`, restart and crash recovery."""

from __future__ import annotations

import os

import pytest

from minikafka.protocol.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from minikafka.protocol.records import CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT, iter_batches, parse_control_record_type
from minikafka.protocol.records.builder import build_control_batch
from minikafka.storage.producer_state import ProducerStateManager
from minikafka.storage.transaction_index import AbortedTransaction
from minikafka.storage.unified_log import UnifiedLog
from tests.storage.conftest import T0, LogFactory, batch


class Producer:
    """A transactional producer's data batches, with its own sequence numbers."""

    def __init__(self, log: UnifiedLog, producer_id: int, epoch: int = 0) -> None:
        self.log, self.producer_id, self.epoch, self.sequence = log, producer_id, epoch, 0

    def send(self, *values: bytes, transactional: bool = True) -> int:
        info = self.log.append_as_leader(batch(*values, producer_id=self.producer_id, producer_epoch=self.epoch,
                                               base_sequence=self.sequence, is_transactional=transactional))
        self.sequence += len(values)
        return info.first_offset

    def end(self, commit: bool, coordinator_epoch: int = 0) -> int:
        return self.log.append_transaction_marker(self.producer_id, self.epoch, coordinator_epoch, commit).first_offset


def txn_index_files(log: UnifiedLog) -> list[str]:
    return sorted(p.name for p in log.dir.glob("*.txnindex*"))


def all_aborted(log: UnifiedLog) -> list[AbortedTransaction]:
    return [txn for segment in log.segments() for txn in segment.txn_index.all_aborted_transactions()]


def test_open_transaction_holds_the_lso_until_commit(make_log: LogFactory) -> None:
    log = make_log()
    producer = Producer(log, 1)
    log.append_as_leader(batch(b"plain"))
    assert log.last_stable_offset == 1
    assert producer.send(b"a", b"b") == 1
    log.append_as_leader(batch(b"plain again"))
    assert (log.last_stable_offset, log.high_watermark) == (1, 4)
    assert producer.end(commit=True) == 4
    assert log.last_stable_offset == log.log_end_offset == 5
    assert txn_index_files(log) == []  # commits are not indexed
    marker = next(iter(iter_batches(log.read(4, 1000).records)))
    assert marker.is_control and marker.is_transactional and marker.base_sequence == -1
    record = next(iter(marker.records()))
    assert parse_control_record_type(record.key) == CONTROL_TYPE_COMMIT


def test_abort_indexes_the_transaction_with_the_lso_after_it(make_log: LogFactory) -> None:
    log = make_log()
    first, second = Producer(log, 1), Producer(log, 2)
    first.send(b"a")          # 0
    second.send(b"b")         # 1
    first.send(b"c")          # 2
    assert log.last_stable_offset == 0
    assert first.end(commit=False) == 3
    # producer 2's transaction (from offset 1) is still open: that is the LSO once producer 1's is complete
    assert all_aborted(log) == [AbortedTransaction(1, 0, 3, 1)]
    assert log.last_stable_offset == 1
    second.send(b"d")         # 4
    assert second.end(commit=False) == 5
    assert all_aborted(log) == [AbortedTransaction(1, 0, 3, 1), AbortedTransaction(2, 1, 5, 6)]
    assert log.last_stable_offset == 6
    marker = next(iter(iter_batches(log.read(5, 1000).records)))
    assert parse_control_record_type(next(iter(marker.records())).key) == CONTROL_TYPE_ABORT
    assert txn_index_files(log) == ["00000000000000000000.txnindex"]
    assert log.collect_aborted_transactions(0, 6) == all_aborted(log)
    assert log.collect_aborted_transactions(4, 6) == [AbortedTransaction(2, 1, 5, 6)]


def test_marker_without_an_open_transaction_is_written_but_not_indexed(make_log: LogFactory) -> None:
    log = make_log()
    assert log.append_transaction_marker(9, 0, 0, commit=False).first_offset == 0
    assert log.log_end_offset == 1 and log.last_stable_offset == 1
    assert txn_index_files(log) == []


def test_transactional_rules(make_log: LogFactory) -> None:
    log = make_log()
    producer = Producer(log, 1, epoch=3)
    producer.send(b"a")
    with pytest.raises(InvalidTxnStateError):
        producer.send(b"not transactional", transactional=False)
    with pytest.raises(InvalidProducerEpochError):
        log.append_transaction_marker(1, 2, 0, commit=True)
    producer.end(commit=True, coordinator_epoch=5)
    producer.send(b"b")
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_transaction_marker(1, 3, 4, commit=True)
    # a bumped producer epoch on the marker (KIP-360 abort) is accepted and fences the old epoch
    log.append_transaction_marker(1, 4, 5, commit=False)
    with pytest.raises(InvalidProducerEpochError):
        producer.send(b"zombie")
    with pytest.raises(InvalidRecordError, match="producer id"):
        log.append_as_leader(batch(b"x", is_transactional=True))
    control = build_control_batch(base_offset=0, producer_id=1, producer_epoch=4, commit=True, coordinator_epoch=5,
                                  timestamp_ms=T0)
    with pytest.raises(InvalidRecordError, match="control"):
        log.append_as_leader(control)


def test_aborted_transactions_are_collected_across_segments(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "250"})
    long_txn, short_txn = Producer(log, 1), Producer(log, 2)
    long_txn.send(b"x" * 50)
    for _i in range(6):
        log.append_as_leader(batch(b"y" * 50))
    short_txn.send(b"z" * 50)
    short_marker = short_txn.end(commit=False)
    for _i in range(6):
        log.append_as_leader(batch(b"y" * 50))
    long_marker = long_txn.end(commit=False)
    segments = log.segments()
    assert len(segments) >= 4
    long_entry = AbortedTransaction(1, 0, long_marker, long_marker + 1)
    short_entry = AbortedTransaction(2, short_marker - 1, short_marker, 0)
    assert all_aborted(log) == [short_entry, long_entry]
    assert segments[0].txn_index.entries == 0  # entries live with their marker, not the first offset
    assert log.collect_aborted_transactions(0, 3) == [long_entry]
    assert log.collect_aborted_transactions(short_marker, short_marker + 1) == [short_entry, long_entry]
    assert log.collect_aborted_transactions(long_marker + 1, log.log_end_offset) == []
    data = log.read(0, 1 << 20, include_aborted_transactions=True)
    assert data.aborted_transactions == [short_entry, long_entry]
    first_batch = log.read(0, 1, max_offset=log.last_stable_offset, include_aborted_transactions=True)
    assert first_batch.aborted_transactions == [long_entry]
    assert log.read(log.log_end_offset, 1000, include_aborted_transactions=True).aborted_transactions == []


def test_restart_keeps_an_open_transaction_and_its_lso(make_log: LogFactory) -> None:
    log = make_log()
    log.append_as_leader(batch(b"before"))
    producer = Producer(log, 1)
    producer.send(b"open")
    log.append_as_leader(batch(b"after"))
    log.close()
    reopened = make_log(clean_shutdown=True)
    assert (reopened.last_stable_offset, reopened.log_end_offset) == (1, 3)
    reopened.append_transaction_marker(1, 0, 0, commit=False)
    assert all_aborted(reopened) == [AbortedTransaction(1, 1, 3, 4)]
    assert reopened.last_stable_offset == 4


def test_unclean_restart_replays_the_open_transaction(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "300"})
    producer = Producer(log, 1)
    for i in range(8):
        log.append_as_leader(batch(b"v%d" % i))
    producer.send(b"open")
    log.flush()  # no close: no snapshot at the log end
    reopened = make_log({"segment.bytes": "300"}, recovery_point=0, clean_shutdown=False)
    assert reopened.last_stable_offset == 8
    assert reopened.log_end_offset == 9


def test_crash_recovery_rebuilds_the_txn_index(make_log: LogFactory) -> None:
    log = make_log()
    a, b = Producer(log, 1), Producer(log, 2)
    a.send(b"a")      # 0
    b.send(b"b")      # 1
    a.end(False)      # 2
    b.end(False)      # 3
    log.flush()
    expected = [AbortedTransaction(1, 0, 2, 1), AbortedTransaction(2, 1, 3, 4)]
    assert all_aborted(log) == expected
    index_path = log.dir / "00000000000000000000.txnindex"
    index_path.unlink()
    reopened = make_log(recovery_point=0, clean_shutdown=False)
    assert all_aborted(reopened) == expected
    assert index_path.stat().st_size == 2 * 34


def test_torn_abort_marker_reopens_the_transaction(make_log: LogFactory) -> None:
    log = make_log()
    producer = Producer(log, 1)
    producer.send(b"a")
    producer.send(b"b")
    producer.end(False)  # marker at 2
    log.flush()
    path = log.dir / "00000000000000000000.log"
    with open(path, "r+b") as f:  # kill -9 halfway through the marker's write
        f.truncate(log.active_segment.size_bytes - 10)  # the file runs on: zeros filled ahead
    reopened = make_log(recovery_point=0, clean_shutdown=False)
    assert reopened.log_end_offset == 2
    assert all_aborted(reopened) == []
    assert txn_index_files(reopened) == []
    assert reopened.last_stable_offset == 0  # open again until the coordinator retries the marker
    reopened.append_transaction_marker(1, 0, 0, commit=False)
    assert all_aborted(reopened) == [AbortedTransaction(1, 0, 2, 3)]


def test_corrupt_txn_index_is_rebuilt_at_load(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200"})
    producer = Producer(log, 1)
    for _i in range(6):
        log.append_as_leader(batch(b"x" * 40))
    producer.send(b"t" * 40)
    producer.end(False)
    for _i in range(6):
        log.append_as_leader(batch(b"x" * 40))
    expected = all_aborted(log)
    assert len(expected) == 1
    log.close()
    [index_path] = log.dir.glob("*.txnindex")
    with open(index_path, "ab") as f:
        f.write(b"\x00" * 7)  # torn entry
    reopened = make_log({"segment.bytes": "200"}, clean_shutdown=True)
    assert all_aborted(reopened) == expected
    assert index_path.stat().st_size == 34


def test_snapshot_round_trip_keeps_an_ongoing_transaction(make_log: LogFactory) -> None:
    log = make_log()
    producer = Producer(log, 7, epoch=2)
    log.append_as_leader(batch(b"plain"))
    producer.send(b"a", b"b")
    path = log.producer_state.take_snapshot(log.log_end_offset)
    loaded = ProducerStateManager(log.dir)
    assert loaded.load_latest_snapshot(log.log_end_offset) == 3
    assert loaded.producers[7].current_txn_first_offset == 1
    assert loaded.first_unstable_offset() == 1
    # an entry whose batches were cleared (epoch bump on the marker) but with an open transaction is kept
    entry = log.producer_state.producers[7]
    entry.batches.clear()
    log.producer_state.take_snapshot(log.log_end_offset)
    reread = ProducerStateManager.read_snapshot(path)
    assert reread[7].current_txn_first_offset == 1 and not reread[7].batches


def test_retention_drops_txn_index_files_with_their_segments(make_log: LogFactory) -> None:
    log = make_log({"segment.bytes": "200", "retention.bytes": "0", "file.delete.delay.ms": "0"})
    producer = Producer(log, 1)
    producer.send(b"t" * 40)
    producer.end(False)
    for _i in range(8):
        log.append_as_leader(batch(b"x" * 40))
    assert txn_index_files(log) == ["00000000000000000000.txnindex"]
    assert log.delete_retention_segments(T0) > 0
    assert txn_index_files(log) == []
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    assert os.path.isdir(log.dir)

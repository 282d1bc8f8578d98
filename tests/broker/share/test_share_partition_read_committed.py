"""`SharePartition` with `share.isolation.level`: read_committed archives the batches of aborted transactions
(Kafka 4.3.1's `SharePartition.filterAbortedTransactionalAcquiredRecords`), read_uncommitted delivers them."""

from __future__ import annotations

from minikafka.broker.share.share_types import (
    AbortedTransaction,
    AcquiredRecords,
    FetchedBatch,
    IsolationLevel,
    PersisterStateBatch,
    RecordState,
)
from tests.broker.share.test_share_partition import BATCH_SIZE, MEMBER_ID, make

ARCHIVED = RecordState.ARCHIVED


def test_read_committed_archives_aborted_transactions() -> None:
    partition = make(isolation_level=IsolationLevel.READ_COMMITTED)
    batches = [
        FetchedBatch(0, 4, producer_id=7, is_transactional=True),
        FetchedBatch(5, 5, producer_id=7, is_transactional=True, is_control=True, is_abort_marker=True),
        FetchedBatch(6, 9, producer_id=8, is_transactional=True),
        FetchedBatch(10, 10, producer_id=8, is_transactional=True, is_control=True),
    ]
    result = partition.acquire(
        MEMBER_ID,
        0,
        batches,
        max_fetch_records=100,
        batch_size=BATCH_SIZE,
        aborted_transactions=[AbortedTransaction(7, 0)],
    )
    assert result.acquired_records == [AcquiredRecords(5, 10, 1)]
    assert result.count == 6
    assert result.archived == [PersisterStateBatch(0, 4, int(ARCHIVED), 1)]
    assert partition.start_offset == 5


def test_read_uncommitted_delivers_aborted_transactions() -> None:
    partition = make()
    batches = [FetchedBatch(0, 4, producer_id=7, is_transactional=True)]
    result = partition.acquire(
        MEMBER_ID,
        0,
        batches,
        max_fetch_records=100,
        batch_size=BATCH_SIZE,
        aborted_transactions=[AbortedTransaction(7, 0)],
    )
    assert result.count == 5

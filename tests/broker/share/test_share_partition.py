"""`SharePartition` against the cases of Apache Kafka 4.3.1's `SharePartitionTest` (names kept; Kafka's
`memoryRecords(start, n)` is one log batch [start, start + n - 1] here, its MockTimer our clock)."""

from __future__ import annotations

import pytest

from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_types import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    PersisterStateBatch,
    RecordState,
    ShareAcknowledgeError,
    ShareAcquireMode,
    ShareGroupConfig,
    validate_acknowledgement_batches,
)

MEMBER_ID = "member-1"
BATCH_SIZE = 500
MAX_FETCH_RECORDS = 2**31 - 1
LOCK_MS = 30_000
ACCEPT, RELEASE, REJECT, RENEW, GAP = (
    int(t)
    for t in (
        AcknowledgeType.ACCEPT,
        AcknowledgeType.RELEASE,
        AcknowledgeType.REJECT,
        AcknowledgeType.RENEW,
        AcknowledgeType.GAP,
    )
)
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = (
    RecordState.AVAILABLE,
    RecordState.ACQUIRED,
    RecordState.ACKNOWLEDGED,
    RecordState.ARCHIVED,
)


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def make(clock: Clock | None = None, **config: object) -> SharePartition:
    partition = SharePartition(
        "group",
        b"\x01" * 16,
        0,
        config=ShareGroupConfig(**config),  # type: ignore[arg-type]
        clock_ms=clock or Clock(),
    )
    partition.initialize(0, 0, [])
    return partition


def records(start: int, count: int | None = None) -> list[FetchedBatch]:
    """Kafka's memoryRecords(n) / memoryRecords(start, n): one batch."""
    if count is None:
        start, count = 0, start
    return [FetchedBatch(start, start + count - 1)]


def fetch(
    partition: SharePartition,
    batches: list[FetchedBatch],
    expected_count: int,
    *,
    member: str = MEMBER_ID,
    fetch_offset: int | None = None,
    max_fetch_records: int = MAX_FETCH_RECORDS,
    mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED,
) -> list[AcquiredRecords]:
    result = partition.acquire(
        member,
        batches[0].base_offset if fetch_offset is None else fetch_offset,
        batches,
        max_fetch_records=max_fetch_records,
        batch_size=BATCH_SIZE,
        acquire_mode=mode,
    )
    assert result.count == expected_count
    return result.acquired_records


def ack(partition: SharePartition, *batches: tuple[int, int, list[int]], member: str = MEMBER_ID) -> None:
    partition.acknowledge(member, [AcknowledgementBatch(f, last, tuple(t)) for f, last, t in batches])


def refused(partition: SharePartition, *batches: tuple[int, int, list[int]], member: str = MEMBER_ID) -> int:
    with pytest.raises(ShareAcknowledgeError) as caught:
        ack(partition, *batches, member=member)
    return caught.value.error_code


def states(partition: SharePartition, first: int, last: int) -> list[tuple[RecordState, int, str]]:
    return [partition.offset_state(o) for o in range(first, last + 1)]  # type: ignore[misc]


# ---- initialisation ------------------------------------------------------------------------------------------


def test_testMaybeInitialize() -> None:
    partition = SharePartition("group", b"\x01" * 16, 0, clock_ms=Clock())
    partition.initialize(
        5, 3, [PersisterStateBatch(5, 10, int(AVAILABLE), 2), PersisterStateBatch(11, 15, int(ARCHIVED), 3)]
    )
    assert partition.initialized and partition.state_epoch == 3
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (5, 15, 5)
    assert partition.offset_state(5) == (AVAILABLE, 2, "")
    assert partition.offset_state(11) == (ARCHIVED, 3, "")
    assert [(b.first_offset, b.last_offset) for b in partition.in_flight_batches()] == [(5, 10), (11, 15)]


def test_testMaybeInitializeWithEmptyStateBatches() -> None:
    partition = SharePartition("group", b"\x01" * 16, 0, clock_ms=Clock())
    partition.initialize(10, 5, [])
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (10, 10, 10)
    assert partition.in_flight_batches() == []


@pytest.mark.parametrize(
    "batches",
    [
        [PersisterStateBatch(5, 10, 0, 2)],  # before the start offset
        [PersisterStateBatch(16, 10, 0, 2)],  # reversed
        [PersisterStateBatch(15, 20, 0, 1), PersisterStateBatch(18, 25, 2, 1)],  # overlapping
        [PersisterStateBatch(15, 20, int(ACQUIRED), 1)],  # never persisted
    ],
)
def test_testMaybeInitializeWithInvalidStartOffsetStateBatches(batches: list[PersisterStateBatch]) -> None:
    partition = SharePartition("group", b"\x01" * 16, 0, clock_ms=Clock())
    with pytest.raises(ValueError):
        partition.initialize(10, 0, batches)
    assert not partition.initialized
    assert partition.acquire(MEMBER_ID, 10, records(10, 5), max_fetch_records=5, batch_size=BATCH_SIZE).count == 0


def test_testMaybeInitializeWhenReadStateRpcReturnsZeroAvailableRecords() -> None:
    partition = SharePartition("group", b"\x01" * 16, 0, clock_ms=Clock())
    partition.initialize(
        10, 1, [PersisterStateBatch(10, 14, int(ACKNOWLEDGED), 1), PersisterStateBatch(15, 19, int(ARCHIVED), 5)]
    )
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (20, 20, 20)


def test_initialize_with_gaps_fetches_the_gaps_first() -> None:
    # Kafka's persister read gap window: offsets the coordinator has no state for are delivered again.
    partition = SharePartition("group", b"\x01" * 16, 0, clock_ms=Clock())
    partition.initialize(
        10, 1, [PersisterStateBatch(15, 19, int(ACKNOWLEDGED), 1), PersisterStateBatch(25, 29, int(AVAILABLE), 2)]
    )
    assert partition.next_fetch_offset() == 10
    acquired = fetch(partition, records(10, 30), 25)
    assert acquired == [
        AcquiredRecords(10, 14, 1),
        AcquiredRecords(20, 24, 1),
        AcquiredRecords(25, 29, 3),
        AcquiredRecords(30, 39, 1),
    ]


# ---- acquisition -------------------------------------------------------------------------------------------


def test_testAcquireSingleRecord() -> None:
    partition = make()
    assert fetch(partition, records(1), 1) == [AcquiredRecords(0, 0, 1)]
    assert partition.next_fetch_offset() == 1
    assert partition.offset_state(0) == (ACQUIRED, 1, MEMBER_ID)


def test_testAcquireMultipleRecords() -> None:
    partition = make()
    assert fetch(partition, records(10, 5), 5, fetch_offset=3) == [AcquiredRecords(10, 14, 1)]
    assert partition.next_fetch_offset() == 15
    assert (partition.start_offset, partition.end_offset) == (10, 14)
    assert [(b.first_offset, b.last_offset) for b in partition.in_flight_batches()] == [(10, 14)]


def test_testAcquireWithMaxFetchRecords() -> None:
    partition = make()
    assert fetch(partition, records(5), 5, max_fetch_records=10) == [AcquiredRecords(0, 4, 1)]
    # More records than the maximum, read from 0: 0-4 are in flight, the rest of the log batch is acquired whole.
    assert fetch(partition, records(25), 20, max_fetch_records=10) == [AcquiredRecords(5, 24, 1)]
    assert partition.next_fetch_offset() == 25
    assert [(b.first_offset, b.last_offset) for b in partition.in_flight_batches()] == [(0, 4), (5, 24)]


def test_testAcquireWithMultipleBatchesAndMaxFetchRecords() -> None:
    partition = make()
    batches = records(10, 5) + records(15, 15) + records(30, 15)
    # max 10 reaches into the second batch, which is acquired whole; the third is not.
    assert fetch(partition, batches, 20, max_fetch_records=10) == [AcquiredRecords(10, 29, 1)]
    assert partition.next_fetch_offset() == 30


def test_testAcquireSameBatchAgain() -> None:
    partition = make()
    fetch(partition, records(10, 5), 5)
    assert fetch(partition, records(10, 5), 0) == []
    assert partition.offset_state(12) == (ACQUIRED, 1, MEMBER_ID)


def test_testAcquireWithEmptyFetchRecords() -> None:
    partition = make()
    assert partition.acquire(MEMBER_ID, 0, [], max_fetch_records=10, batch_size=BATCH_SIZE).count == 0
    assert partition.next_fetch_offset() == 0


def test_testAcquireMultipleRecordsWithOverlapAndNewBatch() -> None:
    partition = make()
    fetch(partition, records(0, 5), 5)
    # 0-4 are acquired; a read of 0-9 acquires only 5-9.
    assert fetch(partition, records(0, 10), 5) == [AcquiredRecords(5, 9, 1)]


def test_testAcquireReleasedRecord() -> None:
    partition = make()
    fetch(partition, records(10, 5), 5)
    ack(partition, (12, 13, [RELEASE]))
    assert partition.next_fetch_offset() == 12
    assert fetch(partition, records(10, 5), 2) == [AcquiredRecords(12, 13, 2)]
    assert states(partition, 10, 14) == [
        (ACQUIRED, 1, MEMBER_ID),
        (ACQUIRED, 1, MEMBER_ID),
        (ACQUIRED, 2, MEMBER_ID),
        (ACQUIRED, 2, MEMBER_ID),
        (ACQUIRED, 1, MEMBER_ID),
    ]


def test_batch_size_splits_a_new_acquisition_at_log_batch_bases() -> None:
    # Kafka's createBatches: with batch size 10, [0-4][5-14][15-19] become 0-14 and 15-19.
    partition = make()
    batches = records(0, 5) + records(5, 10) + records(15, 5)
    result = partition.acquire(MEMBER_ID, 0, batches, max_fetch_records=100, batch_size=10)
    assert result.acquired_records == [AcquiredRecords(0, 14, 1), AcquiredRecords(15, 19, 1)]


def test_record_limit_mode_acquires_exactly_max_records() -> None:
    partition = make()
    assert fetch(partition, records(10, 10), 5, max_fetch_records=5, mode=ShareAcquireMode.RECORD_LIMIT) == [
        AcquiredRecords(10, 14, 1)
    ]
    # The rest of the log batch is in flight but AVAILABLE: the next read starts there.
    assert partition.offset_state(15) == (AVAILABLE, 0, "")
    assert partition.next_fetch_offset() == 15
    assert fetch(
        partition,
        records(10, 10),
        3,
        fetch_offset=15,
        max_fetch_records=3,
        mode=ShareAcquireMode.RECORD_LIMIT,
        member="member-2",
    ) == [AcquiredRecords(15, 17, 1)]


def test_testCanAcquireRecordsWithCachedDataAndLimitReached() -> None:
    partition = make(partition_max_record_locks=20)
    fetch(partition, records(0, 15), 15)
    fetch(partition, records(15, 15), 15)  # the limit is soft: the whole log batch
    assert partition.in_flight_count() == 30
    assert fetch(partition, records(30, 10), 0) == []


def test_testMaybeUpdateCachedStateWhenAcknowledgementsInBetween() -> None:
    partition = make(partition_max_record_locks=20)
    fetch(partition, records(15), 15)
    fetch(partition, records(15, 15), 15)
    ack(partition, (10, 14, [REJECT]))
    assert partition.offset_state(9) == (ACQUIRED, 1, MEMBER_ID)
    assert partition.offset_state(10) == (ARCHIVED, 1, "")
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (0, 29, 30)


def test_testNextFetchOffsetWithMultipleConsumers() -> None:
    partition = make(partition_max_record_locks=100)
    fetch(partition, records(3), 3)
    assert partition.next_fetch_offset() == 3
    ack(partition, (0, 2, [RELEASE]))
    assert partition.next_fetch_offset() == 0
    fetch(partition, records(3, 2), 2, member="member-2", fetch_offset=3)
    assert partition.next_fetch_offset() == 0
    fetch(partition, records(3), 3)
    assert partition.next_fetch_offset() == 5
    ack(partition, (3, 4, [RELEASE]), member="member-2")
    assert partition.next_fetch_offset() == 3


# ---- acknowledgement ---------------------------------------------------------------------------------------


def test_testAcknowledgeSingleRecordBatch() -> None:
    partition = make()
    fetch(partition, records(1), 1)
    ack(partition, (0, 0, [ACCEPT]))
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (1, 1, 1)
    assert partition.in_flight_batches() == []


def test_testAcknowledgeMultipleRecordBatch() -> None:
    partition = make()
    fetch(partition, records(5, 10), 10)
    writes = partition.acknowledge(MEMBER_ID, [AcknowledgementBatch(5, 14, (ACCEPT,))])
    assert writes == [PersisterStateBatch(5, 14, int(ACKNOWLEDGED), 1)]
    assert (partition.start_offset, partition.next_fetch_offset()) == (15, 15)


def test_testAcknowledgeMultipleRecordBatchWithGapOffsets() -> None:
    partition = make()
    fetch(partition, records(5, 2), 2)
    # 7-9 untracked; the second read holds 10-14 and 18 (15-17 compacted away) in one batch.
    fetch(partition, [FetchedBatch(10, 18)], 9)
    assert partition.next_fetch_offset() == 19
    ack(partition, (5, 6, [RELEASE]), (10, 18, [RELEASE, RELEASE, RELEASE, RELEASE, RELEASE, GAP, GAP, GAP, ACCEPT]))
    assert partition.next_fetch_offset() == 5
    assert states(partition, 10, 18) == [(AVAILABLE, 1, "")] * 5 + [(ARCHIVED, 1, "")] * 3 + [(ACKNOWLEDGED, 1, "")]


def test_testAcknowledgeOutOfRangeCachedData() -> None:
    partition = make()
    assert refused(partition, (0, 15, [REJECT])) == INVALID_RECORD_STATE
    fetch(partition, records(5, 5), 5)
    assert refused(partition, (20, 25, [REJECT])) == INVALID_REQUEST


def test_acknowledge_past_the_last_acquired_offset_is_an_invalid_request() -> None:
    partition = make()
    fetch(partition, records(5, 5), 5)
    assert refused(partition, (8, 12, [ACCEPT])) == INVALID_REQUEST
    assert partition.offset_state(8) == (ACQUIRED, 1, MEMBER_ID)


def test_testAcknowledgeWithAnotherMember() -> None:
    partition = make()
    fetch(partition, records(5, 5), 5)
    assert refused(partition, (5, 9, [REJECT]), member="member-2") == INVALID_RECORD_STATE


def test_testAcknowledgeWhenOffsetNotAcquired() -> None:
    partition = make()
    fetch(partition, records(5, 5), 5)
    ack(partition, (5, 9, [RELEASE]))
    assert refused(partition, (5, 9, [ACCEPT])) == INVALID_RECORD_STATE
    fetch(partition, records(5, 5), 5)
    ack(partition, (5, 9, [ACCEPT]))
    assert partition.start_offset == 10


def test_testAcknowledgeRollbackWithSubsetError() -> None:
    partition = make()
    for start in (5, 10, 15):
        fetch(partition, records(start, 5), 5)
    assert (
        refused(partition, (5, 9, [RELEASE]), (10, 14, [ACCEPT]), (15, 19, [ACCEPT]), (16, 19, [ACCEPT]))
        == INVALID_RECORD_STATE
    )
    assert all(s == (ACQUIRED, 1, MEMBER_ID) for s in states(partition, 5, 19))


def test_testAcknowledgeWithAnotherMemberRollbackSubsetError() -> None:
    partition = make()
    fetch(partition, records(5, 5), 5)
    fetch(partition, records(10, 5), 5, member="member-2")
    assert refused(partition, (5, 9, [ACCEPT]), (10, 14, [ACCEPT])) == INVALID_RECORD_STATE
    assert partition.offset_state(5) == (ACQUIRED, 1, MEMBER_ID)


@pytest.mark.parametrize("types", [[9], [-1], [], [ACCEPT, ACCEPT]])
def test_invalid_acknowledge_types_are_an_invalid_request(types: list[int]) -> None:
    partition = make()
    fetch(partition, records(0, 5), 5)
    assert refused(partition, (0, 4, types)) == INVALID_REQUEST
    assert partition.offset_state(0) == (ACQUIRED, 1, MEMBER_ID)


def test_acknowledge_below_the_start_offset_is_skipped() -> None:
    partition = make()
    fetch(partition, records(0, 5), 5)
    ack(partition, (0, 4, [ACCEPT]))
    ack(partition, (0, 4, [ACCEPT]))  # already archived: Kafka skips it
    assert partition.start_offset == 5


def test_renew_extends_the_lock_and_can_be_disabled() -> None:
    clock = Clock()
    partition = make(clock)
    fetch(partition, records(0, 5), 5)
    clock.now_ms += LOCK_MS - 1
    assert partition.acknowledge(MEMBER_ID, [AcknowledgementBatch(0, 4, (RENEW,))]) == []
    clock.now_ms += LOCK_MS - 1
    assert partition.expire_acquisition_locks() == []
    assert partition.offset_state(0) == (ACQUIRED, 1, MEMBER_ID)
    clock.now_ms += 1
    assert partition.expire_acquisition_locks() == [PersisterStateBatch(0, 4, int(AVAILABLE), 1)]
    disabled = make(renew_acknowledge_enable=False)
    fetch(disabled, records(0, 5), 5)
    assert refused(disabled, (0, 4, [RENEW])) == INVALID_RECORD_STATE


def test_kafkas_request_checks_of_acknowledgement_batches() -> None:
    # KafkaApis.validateAcknowledgementBatches, run by the handler before SharePartition.acknowledge.
    def check(*batches: tuple[int, int, list[int]], is_renew_ack: bool = False, renew_supported: bool = True) -> None:
        validate_acknowledgement_batches(
            [AcknowledgementBatch(f, last, tuple(t)) for f, last, t in batches],
            is_renew_ack=is_renew_ack,
            renew_supported=renew_supported,
        )

    check((0, 4, [ACCEPT]), (4, 6, [RELEASE]))  # touching at one offset passes here (SharePartition refuses it)
    check((0, 4, [RENEW]), is_renew_ack=True)
    for batches, kwargs in [
        (((0, 4, [RENEW]),), {}),  # RENEW in a request not flagged IsRenewAck
        (((0, 4, [RENEW]),), {"is_renew_ack": True, "renew_supported": False}),  # v1 knows types 0-3 only
        (((5, 9, [ACCEPT]), (0, 4, [ACCEPT])), {}),  # out of order
        (((5, 4, [ACCEPT]),), {}),
        (((0, 4, []),), {}),
        (((0, 4, [ACCEPT, ACCEPT]),), {}),
        (((0, 0, [5]),), {}),
    ]:
        with pytest.raises(ShareAcknowledgeError) as caught:
            check(*batches, **kwargs)  # type: ignore[arg-type]
        assert caught.value.error_code == INVALID_REQUEST


# ---- delivery count limit ------------------------------------------------------------------------------------


def test_testMaxDeliveryCountLimitExceededForRecordBatch() -> None:
    partition = make(delivery_count_limit=2)
    fetch(partition, records(5, 10), 10)
    ack(partition, (5, 14, [RELEASE]))
    fetch(partition, records(5, 10), 10)
    ack(partition, (5, 14, [RELEASE]))
    assert (partition.next_fetch_offset(), partition.start_offset, partition.end_offset) == (15, 15, 15)
    assert partition.in_flight_batches() == []


def test_testMaxDeliveryCountLimitExceededForRecordsSubset() -> None:
    partition = make(delivery_count_limit=2)
    fetch(partition, records(10, 5), 5)
    fetch(partition, records(15, 10), 10)
    ack(partition, (10, 12, [ACCEPT]), (13, 16, [RELEASE]), (17, 19, [ACCEPT]), (20, 24, [RELEASE]))
    assert fetch(partition, records(13, 12), 9) == [
        AcquiredRecords(13, 14, 2),
        AcquiredRecords(15, 16, 2),  # another in-flight batch
        AcquiredRecords(20, 24, 2),
    ]
    ack(partition, (13, 16, [RELEASE]), (20, 24, [RELEASE]))
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (25, 25, 25)


def test_testAcquisitionLockTimeoutCauseMaxDeliveryCountExceed() -> None:
    clock = Clock()
    partition = make(clock, delivery_count_limit=2)
    fetch(partition, records(10), 10)
    fetch(partition, records(10, 10), 10)
    clock.now_ms += LOCK_MS
    partition.expire_acquisition_locks()
    assert partition.next_fetch_offset() == 0
    assert partition.offset_state(10) == (AVAILABLE, 1, "")
    fetch(partition, records(10, 10), 10)
    assert partition.offset_state(10) == (ACQUIRED, 2, MEMBER_ID)
    clock.now_ms += LOCK_MS
    partition.expire_acquisition_locks()
    assert partition.offset_state(10) == (ARCHIVED, 2, "")
    assert partition.next_fetch_offset() == 0


def test_records_near_the_delivery_limit_are_throttled() -> None:
    # Kafka's throttling (limit 5, throttle at ceil(5/2) = 3 deliveries): half the in-flight batch, then one.
    partition = make(delivery_count_limit=5)
    for _ in range(3):
        fetch(partition, records(0, 4), 4, fetch_offset=0)
        ack(partition, (0, 3, [RELEASE]))
    assert fetch(partition, records(0, 4), 2) == [AcquiredRecords(0, 1, 4)]
    ack(partition, (0, 1, [RELEASE]))
    assert fetch(partition, records(0, 4), 1) == [AcquiredRecords(0, 0, 5)]  # its last attempt, alone
    assert partition.acknowledge(MEMBER_ID, [AcknowledgementBatch(0, 0, (RELEASE,))]) == [
        PersisterStateBatch(0, 0, int(ARCHIVED), 5)
    ]
    assert partition.start_offset == 1


# ---- acquisition locks ---------------------------------------------------------------------------------------


def test_testAcquisitionLockForAcquiringSingleRecord() -> None:
    clock = Clock()
    partition = make(clock)
    fetch(partition, records(1), 1)
    assert partition.next_lock_deadline_ms() == clock.now_ms + LOCK_MS
    clock.now_ms += LOCK_MS - 1
    assert partition.expire_acquisition_locks() == []
    clock.now_ms += 1
    assert partition.expire_acquisition_locks() == [PersisterStateBatch(0, 0, int(AVAILABLE), 1)]
    assert partition.next_fetch_offset() == 0
    assert partition.next_lock_deadline_ms() is None


def test_testAcknowledgeAfterAcquisitionLockTimeout() -> None:
    clock = Clock()
    partition = make(clock)
    fetch(partition, records(5, 5), 5)
    clock.now_ms += LOCK_MS
    partition.expire_acquisition_locks()
    assert refused(partition, (5, 9, [ACCEPT])) == INVALID_RECORD_STATE


def test_testScheduleAcquisitionLockTimeoutValueFromGroupConfig() -> None:
    clock = Clock()
    partition = make(clock, record_lock_duration_ms=45_000)
    fetch(partition, records(1), 1)
    assert partition.next_lock_deadline_ms() == clock.now_ms + 45_000


def test_testAcquisitionLockTimeoutCauseSPSOMoveForward() -> None:
    clock = Clock()
    partition = make(clock, delivery_count_limit=1)
    fetch(partition, records(10), 10)
    ack(partition, (0, 4, [ACCEPT]))
    clock.now_ms += LOCK_MS
    partition.expire_acquisition_locks()  # delivery count 1 reached the limit: archived
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (10, 10, 10)


# ---- release on leaving --------------------------------------------------------------------------------------


def test_testReleaseAcquiredRecordsWithAnotherMember() -> None:
    partition = make()
    fetch(partition, records(5, 5), 5)
    fetch(partition, records(10, 5), 5, member="member-2")
    writes = partition.release_acquired_records("member-2")
    assert writes == [PersisterStateBatch(10, 14, int(AVAILABLE), 1)]
    assert partition.offset_state(5) == (ACQUIRED, 1, MEMBER_ID)
    assert partition.next_fetch_offset() == 10


def test_testReleaseAcquiredRecordsForEmptyCachedData() -> None:
    assert make().release_acquired_records(MEMBER_ID) == []


# ---- start offset movement -----------------------------------------------------------------------------------


def test_testMaybeUpdateCachedStateMultipleAcquisitionsAndAcknowledgements() -> None:
    partition = make()
    fetch(partition, records(0, 20), 20)
    ack(partition, (0, 9, [ACCEPT]))
    assert partition.start_offset == 10
    ack(partition, (15, 19, [REJECT]))
    assert partition.start_offset == 10
    ack(partition, (10, 14, [ACCEPT]))
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (20, 20, 20)
    fetch(partition, records(20, 5), 5)
    assert partition.start_offset == 20


def test_testLsoMovementForArchivingOffsets() -> None:
    partition = make()
    fetch(partition, records(2, 5), 5)
    ack(partition, (4, 5, [RELEASE]))
    assert partition.on_log_start_offset(5)
    assert partition.start_offset == 5
    assert partition.offset_state(5) == (AVAILABLE, 1, "")
    assert partition.next_fetch_offset() == 5
    ack(partition, (6, 6, [ACCEPT]))
    assert partition.offset_state(6) == (ACKNOWLEDGED, 1, "")


def test_testLsoMovementAheadOfEndOffset() -> None:
    partition = make()
    fetch(partition, records(2, 5), 5)
    assert partition.on_log_start_offset(14)
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (14, 14, 14)
    ack(partition, (2, 6, [ACCEPT]))  # below the start offset: skipped
    assert not partition.on_log_start_offset(10)


def test_stale_batches_are_archived_when_the_log_skips_them() -> None:
    # Kafka's maybeArchiveStaleBatches: a released range the log no longer has (compaction) is archived.
    partition = make()
    fetch(partition, records(0, 10), 10)
    ack(partition, (0, 9, [RELEASE]))
    assert fetch(partition, records(5, 5), 5, fetch_offset=0) == [AcquiredRecords(5, 9, 2)]
    assert states(partition, 5, 5) == [(ACQUIRED, 2, MEMBER_ID)]
    assert partition.start_offset == 5

"""`ShareCoordinatorState` as Apache Kafka 4.3.1's `ShareCoordinatorShard` behaves (tests named after
ShareCoordinatorShardTest's), and the round trip a restart makes: a SharePartition's writes go through the
coordinator into `__share_group_state` bytes, a fresh coordinator replays them, and a fresh SharePartition loaded
from that state never delivers an acknowledged record again."""

from __future__ import annotations

import uuid

import pytest

from minikafka.broker.share.share_coordinator_state import (
    FENCED_LEADER_EPOCH,
    FENCED_STATE_EPOCH,
    ShareCoordinatorState,
    ShareStateError,
    load_share_partition,
)
from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from minikafka.broker.share.share_types import (
    INVALID_REQUEST,
    AcknowledgementBatch,
    AcknowledgeType,
    FetchedBatch,
    PersisterStateBatch,
    RecordState,
)

GROUP, TOPIC, PARTITION = "group", uuid.UUID("3f2b6c1e-8d4a-4f0e-9b57-2c1d0e6a7f11"), 0
ACKED, ARCHIVED, AVAILABLE = 2, 4, 0


class Log:
    """`__share_group_state` as bytes: what a restart reads back."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def append_and_replay(self, state: ShareCoordinatorState, record: tuple) -> None:
        key, value = record
        self.records.append((encode_key(key), None if value is None else encode_value(value)))
        state.replay(key, value)

    def load(self, per_snapshot: int) -> ShareCoordinatorState:
        state = ShareCoordinatorState(per_snapshot)
        for key_bytes, value_bytes in self.records:
            key = decode_key(key_bytes)
            state.replay(key, None if value_bytes is None else decode_value(key.record_type, value_bytes))
        return state


def write(state: ShareCoordinatorState, batches: list[PersisterStateBatch], start_offset: int = -1, **kw: int) -> tuple:
    return state.write_state(
        GROUP,
        TOPIC,
        PARTITION,
        state_epoch=kw.get("state_epoch", 0),
        leader_epoch=kw.get("leader_epoch", 0),
        start_offset=start_offset,
        delivery_complete_count=kw.get("delivery_complete_count", -1),
        state_batches=batches,
        now_ms=5000,
    )


def initialized(per_snapshot: int = 500, log: Log | None = None) -> ShareCoordinatorState:
    state = ShareCoordinatorState(per_snapshot)
    record = state.initialize_state(GROUP, TOPIC, PARTITION, state_epoch=0, start_offset=0, now_ms=1000)
    (log or Log()).append_and_replay(state, record)
    return state


def test_testWriteFailsOnUninitializedPartition() -> None:
    with pytest.raises(ShareStateError) as caught:
        write(ShareCoordinatorState(), [PersisterStateBatch(0, 9, ACKED, 1)])
    assert caught.value.error_code == INVALID_REQUEST


def test_testInitializeStateSuccess() -> None:
    state = initialized()
    offset = state.state(GROUP, TOPIC, PARTITION)
    assert offset is not None
    assert (offset.snapshot_epoch, offset.state_epoch, offset.start_offset, offset.state_batches) == (0, 0, 0, ())
    assert offset.delivery_complete_count == 0  # a known start offset: lag is countable from there


def test_testWriteStateSuccess() -> None:
    state = initialized()
    key, value = write(state, [PersisterStateBatch(0, 9, ACKED, 1)], start_offset=10, delivery_complete_count=0)
    assert key.record_type == SHARE_UPDATE
    assert (value.snapshot_epoch, value.start_offset) == (0, 10)
    state.replay(key, value)
    offset = state.state(GROUP, TOPIC, PARTITION)
    assert offset is not None and offset.start_offset == 10
    assert offset.state_batches == ()  # below the new start offset


def test_testSnapshotUpdateCountBoundary() -> None:
    state = initialized(per_snapshot=2)
    types = []
    for i in range(5):
        key, value = write(state, [PersisterStateBatch(i, i, ACKED, 1)])
        types.append((key.record_type, value.snapshot_epoch))
        state.replay(key, value)
    assert types == [(SHARE_UPDATE, 0), (SHARE_UPDATE, 0), (SHARE_SNAPSHOT, 1), (SHARE_UPDATE, 1), (SHARE_UPDATE, 1)]
    offset = state.state(GROUP, TOPIC, PARTITION)
    assert offset is not None and offset.state_batches == (PersisterStateBatch(0, 4, ACKED, 1),)


def test_testNonSequentialBatchUpdates() -> None:
    state = initialized(per_snapshot=0)  # every write is a snapshot
    acquired = 1
    for record in (
        write(
            state,
            [
                PersisterStateBatch(100, 109, acquired, 1),
                PersisterStateBatch(110, 119, acquired, 2),
                PersisterStateBatch(120, 129, acquired, 0),
            ],
            start_offset=100,
        ),
    ):
        state.replay(*record)
    state.replay(*write(state, [PersisterStateBatch(100, 109, ACKED, 1)]))
    key, value = write(state, [PersisterStateBatch(120, 129, ACKED, 1)], start_offset=110)
    assert key.record_type == SHARE_SNAPSHOT and value.snapshot_epoch == 3
    assert value.state_batches == (PersisterStateBatch(110, 119, acquired, 2), PersisterStateBatch(120, 129, ACKED, 1))


def test_testWriteStateFencedLeaderEpochError() -> None:
    state = initialized()
    state.replay(*write(state, [], leader_epoch=5))
    with pytest.raises(ShareStateError) as caught:
        write(state, [], leader_epoch=4)
    assert caught.value.error_code == FENCED_LEADER_EPOCH


def test_testWriteStateFencedStateEpochError() -> None:
    state = ShareCoordinatorState()
    state.replay(*state.initialize_state(GROUP, TOPIC, PARTITION, state_epoch=3, start_offset=0, now_ms=0))
    with pytest.raises(ShareStateError) as caught:
        write(state, [], state_epoch=2)
    assert caught.value.error_code == FENCED_STATE_EPOCH
    with pytest.raises(ShareStateError):
        state.initialize_state(GROUP, TOPIC, PARTITION, state_epoch=2, start_offset=0, now_ms=0)


def test_testDeleteStateSuccess() -> None:
    log = Log()
    state = initialized(log=log)
    log.append_and_replay(state, ShareCoordinatorState.delete_state(GROUP, TOPIC, PARTITION))
    assert state.state(GROUP, TOPIC, PARTITION) is None
    assert log.load(500).state(GROUP, TOPIC, PARTITION) is None


def test_testReplayWithShareSnapshot_from_bytes_equals_live_state() -> None:
    log = Log()
    state = initialized(per_snapshot=3, log=log)
    for i in range(10):
        log.append_and_replay(state, write(state, [PersisterStateBatch(i * 2, i * 2 + 1, (ACKED, ARCHIVED)[i % 2], 1)]))
    loaded = log.load(3)
    assert loaded.state(GROUP, TOPIC, PARTITION) == state.state(GROUP, TOPIC, PARTITION)
    assert loaded.update_count(GROUP, TOPIC, PARTITION) == state.update_count(GROUP, TOPIC, PARTITION)


def _partition(clock: list[int]) -> SharePartition:
    return SharePartition(GROUP, TOPIC.bytes, PARTITION, clock_ms=lambda: clock[0])


def test_a_restart_redelivers_nothing_acknowledged() -> None:
    log, clock = Log(), [0]
    coordinator = initialized(per_snapshot=2, log=log)
    partition = _partition(clock)
    load_share_partition(partition, coordinator.state(GROUP, TOPIC, PARTITION), resolved_start_offset=0)  # type: ignore[arg-type]
    log_batches = [FetchedBatch(0, 9), FetchedBatch(10, 19), FetchedBatch(20, 29)]

    def persist(batches: list[PersisterStateBatch]) -> None:
        log.append_and_replay(
            coordinator,
            write(
                coordinator,
                batches,
                start_offset=partition.start_offset,
                delivery_complete_count=partition.delivery_complete_count(),
            ),
        )

    partition.acquire("m1", 0, log_batches, max_fetch_records=100, batch_size=10)
    types = [AcknowledgeType.ACCEPT] * 3 + [AcknowledgeType.RELEASE] * 2 + [AcknowledgeType.REJECT] * 2
    persist(partition.acknowledge("m1", [AcknowledgementBatch(0, 6, tuple(int(t) for t in types))]))
    persist(partition.acknowledge("m1", [AcknowledgementBatch(12, 15, (int(AcknowledgeType.ACCEPT),))]))
    # kill -9: 7-11 and 16-29 were acquired but never acknowledged; nothing of the partition survives but the log
    restarted = _partition(clock)
    state = log.load(2).state(GROUP, TOPIC, PARTITION)
    assert state is not None
    load_share_partition(restarted, state, resolved_start_offset=0)
    assert restarted.start_offset == 3
    assert restarted.offset_state(3) == (RecordState.AVAILABLE, 1, "")  # released before the kill
    assert restarted.offset_state(5) == (RecordState.ARCHIVED, 1, "")
    result = restarted.acquire("m2", restarted.next_fetch_offset(), log_batches, max_fetch_records=100, batch_size=10)
    delivered = {o for r in result.acquired_records for o in range(r.first_offset, r.last_offset + 1)}
    assert delivered == {3, 4, *range(7, 12), *range(16, 30)}
    assert not delivered & {0, 1, 2, 5, 6, 12, 13, 14, 15}
    counts = {o: restarted.offset_state(o)[1] for o in (3, 7)}  # type: ignore[index]
    assert counts == {3: 2, 7: 1}  # released once before; never recorded as delivered


def test_an_uninitialized_start_offset_takes_the_reset_offset() -> None:
    coordinator = ShareCoordinatorState()
    coordinator.replay(*coordinator.initialize_state(GROUP, TOPIC, PARTITION, state_epoch=0, start_offset=-1, now_ms=0))
    offset = coordinator.state(GROUP, TOPIC, PARTITION)
    assert offset is not None and offset.delivery_complete_count == -1
    partition = _partition([0])
    load_share_partition(partition, offset, resolved_start_offset=42)
    assert (partition.start_offset, partition.next_fetch_offset()) == (42, 42)

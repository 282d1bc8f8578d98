"""Restarts at any point lose no acknowledgement: members acquire and acknowledge at random, every state batch a
SharePartition returns goes through `ShareCoordinatorState` into `__share_group_state` bytes (snapshots every few
updates), and at random moments the broker "dies": the coordinator is rebuilt from the bytes alone and a new
SharePartition is loaded from it. No accepted or rejected offset is ever delivered again, and draining after the
last restart leaves every offset ACKNOWLEDGED or ARCHIVED."""

from __future__ import annotations

import uuid

from hypothesis import example, given, settings
from hypothesis import strategies as st

from minikafka.broker.share.share_coordinator_state import ShareCoordinatorState, load_share_partition
from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_state_records import decode_key, decode_value, encode_key, encode_value
from minikafka.broker.share.share_types import (
    AcknowledgementBatch,
    AcknowledgeType,
    FetchedBatch,
    PersisterStateBatch,
    ShareGroupConfig,
)

GROUP, TOPIC = "g", uuid.UUID(int=7)
LOG_END = 40
BATCHES = [FetchedBatch(first, min(first + 4, LOG_END - 1)) for first in range(0, LOG_END, 5)]
LOCK_MS = 1000


class Broker:
    """A SharePartition and its share coordinator over a byte log that survives `restart`."""

    def __init__(self, per_snapshot: int, delivery_limit: int) -> None:
        self.per_snapshot = per_snapshot
        self.config = ShareGroupConfig(record_lock_duration_ms=LOCK_MS, delivery_count_limit=delivery_limit)
        self.clock = [0]
        self.log: list[tuple[bytes, bytes | None]] = []
        self.coordinator = ShareCoordinatorState(per_snapshot)
        self._append(self.coordinator.initialize_state(GROUP, TOPIC, 0, state_epoch=0, start_offset=0, now_ms=0))
        self.partition = self._load()

    def _append(self, record: tuple) -> None:
        key, value = record
        self.log.append((encode_key(key), None if value is None else encode_value(value)))
        self.coordinator.replay(key, value)

    def _load(self) -> SharePartition:
        partition = SharePartition(GROUP, TOPIC.bytes, 0, config=self.config, clock_ms=lambda: self.clock[0])
        state = self.coordinator.state(GROUP, TOPIC, 0)
        assert state is not None
        load_share_partition(partition, state, resolved_start_offset=0)
        return partition

    def persist(self, batches: list[PersisterStateBatch]) -> None:
        if batches:
            self._append(
                self.coordinator.write_state(
                    GROUP,
                    TOPIC,
                    0,
                    state_epoch=0,
                    leader_epoch=0,
                    start_offset=self.partition.start_offset,
                    delivery_complete_count=self.partition.delivery_complete_count(),
                    state_batches=batches,
                    now_ms=self.clock[0],
                )
            )

    def restart(self) -> None:
        self.coordinator = ShareCoordinatorState(self.per_snapshot)
        for key_bytes, value_bytes in self.log:
            key = decode_key(key_bytes)
            self.coordinator.replay(key, None if value_bytes is None else decode_value(key.record_type, value_bytes))
        self.partition = self._load()


operation = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(["m1", "m2"]), st.integers(1, 12)),
    st.tuples(
        st.just("ack"),
        st.sampled_from(["m1", "m2"]),
        st.sampled_from([AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT]),
    ),
    st.tuples(st.just("tick"), st.integers(0, 2 * LOCK_MS)),
    st.tuples(st.just("restart")),
)


@settings(max_examples=200, deadline=None)
@example(  # a later state of offsets above one still held must win over the earlier one in the replayed updates
    operations=[
        ("acquire", "m1", 5),
        ("acquire", "m2", 5),
        ("ack", "m2", AcknowledgeType.RELEASE),
        ("acquire", "m2", 5),
        ("ack", "m2", AcknowledgeType.ACCEPT),
        ("restart",),
        ("acquire", "m1", 12),
    ],
    per_snapshot=4,
    delivery_limit=5,
)
@given(operations=st.lists(operation, max_size=50), per_snapshot=st.integers(0, 4), delivery_limit=st.integers(2, 5))
def test_restarts_lose_no_acknowledgement(operations: list[tuple], per_snapshot: int, delivery_limit: int) -> None:
    broker = Broker(per_snapshot, delivery_limit)
    held: dict[int, str] = {}
    done: set[int] = set()  # accepted or rejected, and persisted

    def acquire(member: str, max_records: int) -> None:
        partition = broker.partition
        fetch_offset = partition.next_fetch_offset()
        batches = [b for b in BATCHES if b.last_offset >= fetch_offset]
        if not batches:
            return
        result = partition.acquire(member, fetch_offset, batches, max_fetch_records=max_records, batch_size=5)
        broker.persist(result.archived)
        for records in result.acquired_records:
            for offset in range(records.first_offset, records.last_offset + 1):
                assert offset not in done, f"offset {offset} delivered again after it was acknowledged"
                assert offset not in held
                held[offset] = member

    def acknowledge(member: str, ack_type: AcknowledgeType) -> None:
        own = sorted(o for o, m in held.items() if m == member)
        if not own:
            return
        last = own[0]
        while last + 1 in held and held[last + 1] == member:
            last += 1
        broker.persist(broker.partition.acknowledge(member, [AcknowledgementBatch(own[0], last, (int(ack_type),))]))
        for offset in range(own[0], last + 1):
            del held[offset]
            if ack_type is not AcknowledgeType.RELEASE:
                done.add(offset)

    for op in operations:
        if op[0] == "acquire":
            acquire(op[1], op[2])
        elif op[0] == "ack":
            acknowledge(op[1], op[2])
        elif op[0] == "tick":
            broker.clock[0] += op[1]
            broker.persist(broker.partition.expire_acquisition_locks())
            held = {
                o: m
                for o, m in held.items()
                if broker.partition.offset_state(o) is not None and broker.partition.offset_state(o)[2] == m
            }  # type: ignore[index]
        else:
            broker.restart()
            held.clear()  # acquisitions do not survive the broker
            assert all(
                o < broker.partition.start_offset or broker.partition.offset_state(o)[0].terminal  # type: ignore[index]
                for o in done
            )

    broker.restart()
    held.clear()
    for _ in range(10 * LOG_END):
        if broker.partition.start_offset >= LOG_END:
            break
        acquire("m1", 10)
        acknowledge("m1", AcknowledgeType.ACCEPT)
    assert broker.partition.start_offset == LOG_END
    broker.restart()
    assert broker.partition.start_offset == LOG_END  # and the log says so too

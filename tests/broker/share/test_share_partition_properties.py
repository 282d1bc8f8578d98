"""Property test of `SharePartition`: whatever three members do (acquire in either mode, acknowledge with any type,
leave, let locks expire), no offset is held by two members at once, an accepted offset is never delivered again,
no record is delivered more than `delivery.count.limit` times, and draining the partition leaves every offset
ACKNOWLEDGED or ARCHIVED (the SPSO passes the whole log)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.broker.share.share_partition import SharePartition
from minikafka.broker.share.share_types import (
    AcknowledgementBatch,
    AcknowledgeType,
    FetchedBatch,
    RecordState,
    ShareAcknowledgeError,
    ShareAcquireMode,
    ShareGroupConfig,
)

LOG_END = 60
MEMBERS = ("m1", "m2", "m3")
LOCK_MS = 1000
ACK_TYPES = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.GAP)


def log_batches(sizes: list[int]) -> list[FetchedBatch]:
    batches, offset = [], 0
    for size in sizes:
        if offset >= LOG_END:
            break
        last = min(offset + size, LOG_END) - 1
        batches.append(FetchedBatch(offset, last))
        offset = last + 1
    if offset < LOG_END:
        batches.append(FetchedBatch(offset, LOG_END - 1))
    return batches


def read(batches: list[FetchedBatch], fetch_offset: int, max_batches: int) -> list[FetchedBatch]:
    """The log read from `fetch_offset`: the batches holding it and after, as Kafka's fetch returns them."""
    return [b for b in batches if b.last_offset >= fetch_offset][:max_batches]


operation = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 25), st.booleans(), st.integers(1, 4)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.sampled_from(ACK_TYPES), st.integers(0, 100)),
    st.tuples(st.just("tick"), st.integers(0, 2 * LOCK_MS)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=12),
    operations=st.lists(operation, max_size=60),
    delivery_limit=st.integers(1, 6),
    max_locks=st.integers(5, 80),
)
def test_no_double_delivery_and_everything_ends_terminal(
    sizes: list[int], operations: list[tuple], delivery_limit: int, max_locks: int
) -> None:
    clock = [0]
    config = ShareGroupConfig(
        record_lock_duration_ms=LOCK_MS, delivery_count_limit=delivery_limit, partition_max_record_locks=max_locks
    )
    partition = SharePartition("g", b"\0" * 16, 0, config=config, clock_ms=lambda: clock[0])
    partition.initialize(0, 0, [])
    batches = log_batches(sizes)
    holder: dict[int, str] = {}  # offset -> member holding it, from what the partition handed out
    deadline: dict[int, int] = {}
    accepted: set[int] = set()
    deliveries: dict[int, int] = {}

    def acquire(member: str, max_records: int, record_limit: bool, max_batches: int) -> None:
        can_acquire = partition.can_acquire_records()
        fetch_offset = partition.next_fetch_offset()
        fetched = read(batches, fetch_offset, max_batches)
        if not fetched:
            return
        mode = ShareAcquireMode.RECORD_LIMIT if record_limit else ShareAcquireMode.BATCH_OPTIMIZED
        result = partition.acquire(
            member, fetch_offset, fetched, max_fetch_records=max_records, batch_size=8, acquire_mode=mode
        )
        if not can_acquire:  # what lets the broker skip the log read must never hide an acquirable record
            assert result.count == 0
        assert result.count == sum(r.count for r in result.acquired_records)
        if record_limit:
            assert result.count <= max_records
        for records in result.acquired_records:
            for offset in range(records.first_offset, records.last_offset + 1):
                assert offset not in holder, f"{offset} acquired by {member} while {holder.get(offset)} holds it"
                assert offset not in accepted, f"{offset} delivered again after it was accepted"
                deliveries[offset] = deliveries.get(offset, 0) + 1
                assert deliveries[offset] == records.delivery_count
                assert records.delivery_count <= delivery_limit
                holder[offset] = member
                deadline[offset] = clock[0] + LOCK_MS

    def acknowledge(member: str, ack_type: AcknowledgeType, pick: int) -> None:
        own = sorted(o for o, m in holder.items() if m == member)
        if not own:
            return
        first = own[pick % len(own)]
        last = first
        while last + 1 in holder and holder[last + 1] == member:
            last += 1
        partition.acknowledge(member, [AcknowledgementBatch(first, last, (int(ack_type),))])
        for offset in range(first, last + 1):
            del holder[offset]
            if ack_type is AcknowledgeType.ACCEPT:
                accepted.add(offset)

    def check_bookkeeping() -> None:
        """The counts and the lock deadline the partition keeps as it goes agree with its offsets' states."""
        states = [(v.first_offset + i, state) for v in partition.in_flight_batches() for i, (state, _c, _m)
                  in enumerate(v.states)]
        assert partition.in_flight_count() == sum(1 for _o, state in states if not state.terminal)
        available = [o for o, state in states if state is RecordState.AVAILABLE]
        assert partition.next_fetch_offset() == (available[0] if available else partition.end_offset + (
            1 if states else 0))
        held = [deadline[o] for o in holder]
        assert partition.next_lock_deadline_ms() == (min(held) if held else None)

    for op in operations:
        if op[0] == "acquire":
            acquire(*op[1:])
        elif op[0] == "ack":
            acknowledge(*op[1:])
        elif op[0] == "tick":
            clock[0] += op[1]
            partition.expire_acquisition_locks()
            for offset in [o for o, d in deadline.items() if d <= clock[0] and o in holder]:
                del holder[offset]
        else:
            partition.release_acquired_records(op[1])
            for offset in [o for o, m in holder.items() if m == op[1]]:
                del holder[offset]
        check_bookkeeping()
        # someone else's acknowledgement of a held offset is always refused
        if holder:
            offset, member = next(iter(holder.items()))
            other = next(m for m in MEMBERS if m != member)
            try:
                partition.acknowledge(other, [AcknowledgementBatch(offset, offset, (int(AcknowledgeType.ACCEPT),))])
                raise AssertionError("another member acknowledged a held offset")
            except ShareAcknowledgeError:
                pass

    # Drain: one member accepts whatever it gets, letting the locks of the others run out.
    clock[0] += LOCK_MS
    partition.expire_acquisition_locks()
    holder.clear()
    for _ in range(4 * LOG_END):
        if partition.start_offset >= LOG_END:
            break
        acquire("m1", 10, False, 3)
        acknowledge("m1", AcknowledgeType.ACCEPT, 0)
    assert partition.start_offset == LOG_END
    assert partition.in_flight_count() == 0
    assert all(count <= delivery_limit for count in deliveries.values())

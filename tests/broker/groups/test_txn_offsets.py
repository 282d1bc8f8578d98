"""Transactional offset commits in the group coordinator: pending until the producer's marker, KIP-447
member checks, and the replay of transactional batches with their markers when `__consumer_offsets` loads."""

from __future__ import annotations

from minikafka.broker.groups.group_offsets import CommitRequest
from minikafka.broker.groups.offsets_topic import MemoryOffsetsTopic, TxnProducer
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import build_control_batch, iter_batches
from tests.broker.groups.test_group_coordinator import Harness

TP = ("t", 0)
PRODUCER = TxnProducer(producer_id=500, producer_epoch=2)


def txn_commit(h: Harness, offset: int, producer: TxnProducer = PRODUCER, group: str = "g",
               member_id: str = "", generation_id: int = -1) -> ErrorCode:
    results = h.offsets.handle_txn_commit_offsets(group, producer, member_id, None, generation_id,
                                                  {TP: CommitRequest(offset, -1, "")})
    return results[TP]


def write_marker(topic: MemoryOffsetsTopic, partition: int, producer: TxnProducer, commit: bool) -> None:
    """What the transaction coordinator's marker writer appends to `__consumer_offsets`."""
    assert topic.partitions is not None
    batches = topic.partitions[partition]
    end = next(iter_batches(batches[-1])).next_offset if batches else 0
    batches.append(build_control_batch(base_offset=end, producer_id=producer.producer_id,
                                       producer_epoch=producer.producer_epoch, commit=commit,
                                       coordinator_epoch=0, timestamp_ms=0))


def fetched(h: Harness, group: str = "g") -> int | None:
    value = h.offsets.handle_fetch_offsets(group, [TP])[1][TP]
    return None if value is None else value.offset


def test_pending_until_commit_marker_and_dropped_on_abort() -> None:
    h = Harness()
    assert txn_commit(h, 10) is ErrorCode.NONE
    assert fetched(h) is None
    assert h.offsets.unstable_partitions("g", [TP, ("t", 1)]) == {TP}
    partition = h.manager.partition_for("g")
    h.offsets.complete_txn_offsets(PRODUCER.producer_id, (partition + 1) % 4, True)  # another partition's marker
    assert fetched(h) is None
    h.offsets.complete_txn_offsets(PRODUCER.producer_id, partition, True)
    assert fetched(h) == 10 and not h.offsets.unstable_partitions("g", [TP])
    assert txn_commit(h, 20) is ErrorCode.NONE
    h.offsets.complete_txn_offsets(PRODUCER.producer_id, partition, False)
    assert fetched(h) == 10 and not h.offsets.unstable_partitions("g", [TP])


def test_written_as_a_transactional_batch_of_the_producer() -> None:
    h = Harness()
    txn_commit(h, 10)
    assert h.topic.partitions is not None
    [batch] = [b for raw in h.topic.partitions[h.manager.partition_for("g")] for b in iter_batches(raw)]
    assert batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch) == (500, 2)


def test_member_checks_apply_only_when_the_request_names_a_member() -> None:
    h = Harness()
    assert txn_commit(h, 1, member_id="ghost", generation_id=1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert txn_commit(h, 1, generation_id=3) is ErrorCode.ILLEGAL_GENERATION
    assert txn_commit(h, 1) is ErrorCode.NONE


def test_reload_replays_committed_and_keeps_open_transactions_pending() -> None:
    h = Harness()
    other = TxnProducer(producer_id=501, producer_epoch=0)
    partition = h.manager.partition_for("g")
    txn_commit(h, 10)
    write_marker(h.topic, partition, PRODUCER, commit=True)
    txn_commit(h, 99, producer=other, group="g")
    write_marker(h.topic, partition, other, commit=False)
    txn_commit(h, 15)  # still open at "restart"

    reloaded = Harness(topic=h.topic)  # loads __consumer_offsets at startup
    assert fetched(reloaded) == 10
    assert reloaded.offsets.unstable_partitions("g", [TP]) == {TP}
    reloaded.offsets.complete_txn_offsets(PRODUCER.producer_id, partition, True)
    assert fetched(reloaded) == 15

"""`__transaction_state` records: Kafka's exact key/value bytes, both value versions, and the partitioner."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.broker.transactions.transaction_log import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from minikafka.broker.transactions.transaction_metadata import TransactionState, TxnTransitMetadata


def transit(state: TransactionState, partitions: frozenset[tuple[str, int]] = frozenset()) -> TxnTransitMetadata:
    return TxnTransitMetadata(
        producer_id=4001, last_producer_id=-1, producer_epoch=3, last_producer_epoch=-1, txn_timeout_ms=60_000,
        state=state, topic_partitions=partitions, txn_start_timestamp_ms=1_700_000_000_000,
        txn_last_update_timestamp_ms=1_700_000_000_500,
    )


def test_key_is_version_0_then_the_transactional_id() -> None:
    assert encode_key("my-txn") == b"\x00\x00" + b"\x00\x06" + b"my-txn"
    assert decode_key(encode_key("my-txn")) == "my-txn"


def test_value_v0_bytes_as_kafka_writes_an_ongoing_transaction() -> None:
    # TransactionLogValue v0, field by field from Kafka's TransactionLogValue.json.
    expected = (
        b"\x00\x00"  # version 0
        + struct.pack(">q", 4001)  # ProducerId
        + struct.pack(">h", 3)  # ProducerEpoch
        + struct.pack(">i", 60_000)  # TransactionTimeoutMs
        + b"\x01"  # TransactionStatus: Ongoing
        + struct.pack(">i", 2)  # TransactionPartitions: two topics
        + struct.pack(">h", 1) + b"a" + struct.pack(">i", 2) + struct.pack(">ii", 0, 3)
        + struct.pack(">h", 1) + b"b" + struct.pack(">i", 1) + struct.pack(">i", 1)
        + struct.pack(">q", 1_700_000_000_500)  # TransactionLastUpdateTimestampMs
        + struct.pack(">q", 1_700_000_000_000)  # TransactionStartTimestampMs
    )
    value = encode_value(transit(TransactionState.ONGOING, frozenset({("a", 3), ("b", 1), ("a", 0)})))
    assert value == expected


def test_empty_state_is_written_with_null_partitions() -> None:
    value = encode_value(transit(TransactionState.EMPTY))
    assert value[2 + 8 + 2 + 4 :][:5] == b"\x00" + b"\xff\xff\xff\xff"
    assert decode_value(value).topic_partitions == frozenset()


def test_state_ids_are_kafkas() -> None:
    ids = {state.state_name: state.id for state in TransactionState}
    assert ids == {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
                   "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}


def test_value_v1_flexible_with_tagged_fields_is_read() -> None:
    # Version 1: compact array/string lengths are length+1 varints; top-level tagged fields carry
    # PreviousProducerId (tag 0) and ClientTransactionVersion (tag 2).
    data = (
        b"\x00\x01"
        + struct.pack(">qhi", 77, 9, 30_000)
        + b"\x02"  # PrepareCommit
        + b"\x02"  # one topic
        + b"\x04" + b"top" + b"\x03" + struct.pack(">ii", 5, 6) + b"\x00"  # topic, 2 partitions, no tags
        + struct.pack(">qq", 222, 111)
        + b"\x02" + b"\x00\x08" + struct.pack(">q", 76) + b"\x02\x02" + struct.pack(">h", 2)
    )
    value = decode_value(data)
    assert (value.producer_id, value.producer_epoch, value.transaction_timeout_ms) == (77, 9, 30_000)
    assert value.state is TransactionState.PREPARE_COMMIT
    assert value.topic_partitions == frozenset({("top", 5), ("top", 6)})
    assert (value.last_update_timestamp_ms, value.start_timestamp_ms) == (222, 111)
    assert value.previous_producer_id == 76


def test_truncated_value_is_refused() -> None:
    data = encode_value(transit(TransactionState.ONGOING, frozenset({("a", 0)})))
    with pytest.raises(ValueError):
        decode_value(data[:-3])


def test_partition_for_uses_javas_string_hash() -> None:
    assert partition_for("hello", 50) == 99162322 % 50  # "hello".hashCode() == 99162322
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Utils.abs maps it to 0.
    assert partition_for("polygenelubricants", 50) == 0


states = st.sampled_from([s for s in TransactionState if s not in (TransactionState.EMPTY,)])
partitions = st.frozensets(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 1000)), max_size=6)


@given(st.integers(0, 2**63 - 1), st.integers(0, 32767), st.integers(1, 900_000), states, partitions,
       st.integers(-1, 2**62), st.integers(-1, 2**62))
def test_value_round_trip(producer_id: int, epoch: int, timeout_ms: int, state: TransactionState,
                          tps: frozenset[tuple[str, int]], start_ms: int, update_ms: int) -> None:
    value = TxnTransitMetadata(producer_id, -1, epoch, -1, timeout_ms, state, tps, start_ms, update_ms)
    decoded = decode_value(encode_value(value))
    assert (decoded.producer_id, decoded.producer_epoch, decoded.transaction_timeout_ms, decoded.state,
            decoded.topic_partitions, decoded.start_timestamp_ms, decoded.last_update_timestamp_ms) == (
        producer_id, epoch, timeout_ms, state, tps, start_ms, update_ms)

"""`combine_state_batches` against every case of Apache Kafka 4.3.1's `PersisterStateBatchCombinerTest`
(extracted from its BatchTestHolder lists: name, batches so far, new batches, expected, start offset). Kafka asserts
only the few cases flagged shouldRun; all 26 expectations here were checked against what Kafka 4.3.1's own
PersisterStateBatchCombiner returns for the inputs (one listed expectation differs from it, see below)."""

from __future__ import annotations

import pytest

from minikafka.broker.share.share_state_combiner import combine_state_batches
from minikafka.broker.share.share_types import PersisterStateBatch

CASES: list[
    tuple[str, list[tuple[int, int, int, int]], list[tuple[int, int, int, int]], list[tuple[int, int, int, int]], int]
] = [
    ("Current batches with start offset midway are pruned.", [(100, 130, 0, 1)], [], [(120, 130, 0, 1)], 120),
    ("New batches with start offset midway are pruned.", [], [(100, 130, 0, 1)], [(120, 130, 0, 1)], 120),
    ("Both current and new batches empty.", [], [], [], 120),
    (
        "Same state. batchSoFar and newBatch have same first and last offset.",
        [(100, 110, 0, 1)],
        [(100, 110, 0, 1)],
        [(100, 110, 0, 1)],
        -1,
    ),
    (
        "Same state. batchSoFar and newBatch have same first offset, newBatch last offset strictly smaller.",
        [(100, 110, 0, 1)],
        [(100, 105, 0, 1)],
        [(100, 110, 0, 1)],
        -1,
    ),
    (
        "Same state. batchSoFar and newBatch have same first offset, newBatch last offset strictly larger.",
        [(100, 110, 0, 1)],
        [(100, 115, 0, 1)],
        [(100, 115, 0, 1)],
        -1,
    ),
    (
        "Same state. newBatch first offset strictly larger and last offset strictly smaller than batchSoFar.",
        [(100, 110, 0, 1)],
        [(105, 108, 0, 1)],
        [(100, 110, 0, 1)],
        -1,
    ),
    (
        "Same state. newBatch first offset strictly larger and last offset equal to batchSoFar.",
        [(100, 110, 0, 1)],
        [(105, 110, 0, 1)],
        [(100, 110, 0, 1)],
        -1,
    ),
    (
        "Same state. newBatch first offset strictly larger and last offset strictly larger than batchSoFar.",
        [(100, 110, 0, 1)],
        [(105, 115, 0, 1)],
        [(100, 115, 0, 1)],
        -1,
    ),
    (
        "Same state. newBatch first offset is batchSoFar first offset + 1 (contiguous).",
        [(100, 110, 0, 1)],
        [(111, 115, 0, 1)],
        [(100, 115, 0, 1)],
        -1,
    ),
    (
        "Handle overlapping batches in newBatches, same state",
        [(100, 110, 0, 1), (121, 130, 0, 1)],
        [(111, 119, 2, 2), (116, 123, 2, 2)],
        # Kafka lists [(100, 110, 0, 1), (111, 123, 2, 2)] but never runs this case (shouldRun is false); its
        # PersisterStateBatchCombiner 4.3.1, run on these inputs, returns 124-130 as well, as here.
        [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)],
        -1,
    ),
    (
        "Handle overlapping batches in newBatches, different priority.",
        [(100, 110, 0, 1)],
        [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)],
        [(100, 100, 0, 1), (101, 120, 3, 2)],
        -1,
    ),
    (
        "Handle overlapping batches in newBatches, with pruning.",
        [(100, 110, 0, 1), (121, 130, 0, 1)],
        [(111, 119, 2, 2), (116, 123, 2, 2)],
        [(120, 123, 2, 2), (124, 130, 0, 1)],
        120,
    ),
    (
        "Multiple higher state batch updates.",
        [(111, 120, 0, 1)],
        [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)],
        [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)],
        -1,
    ),
    (
        "newBatch higher state. newBatch first offset and last offset match batchSoFar.",
        [(100, 110, 0, 1)],
        [(100, 110, 0, 2)],
        [(100, 110, 0, 2)],
        -1,
    ),
    (
        "newBatch lower state. newBatch first offset and last offset match batchSoFar.",
        [(100, 110, 0, 3)],
        [(100, 110, 0, 1)],
        [(100, 110, 0, 3)],
        -1,
    ),
    (
        "newBatch higher state. newBatch first offset same and last offset smaller than batchSoFar.",
        [(100, 110, 0, 1)],
        [(100, 105, 0, 2)],
        [(100, 105, 0, 2), (106, 110, 0, 1)],
        -1,
    ),
    (
        "newBatch lower state. newBatch first offset same and last offset smaller than batchSoFar.",
        [(100, 110, 0, 3)],
        [(100, 105, 0, 1)],
        [(100, 110, 0, 3)],
        -1,
    ),
    (
        "newBatch higher state. newBatch first offset same and last offset strictly larger than batchSoFar.",
        [(100, 110, 0, 1)],
        [(100, 115, 0, 2)],
        [(100, 115, 0, 2)],
        -1,
    ),
    (
        "newBatch lower state. newBatch first offset same and last offset strictly larger than batchSoFar.",
        [(100, 110, 0, 3)],
        [(100, 115, 0, 1)],
        [(100, 110, 0, 3), (111, 115, 0, 1)],
        -1,
    ),
    (
        "newBatch higher state. newBatch first offset strictly larger and last offset strictly smaller than batchSoFar.",  # noqa: E501 - Kafka's test name
        [(100, 115, 0, 1)],
        [(105, 110, 1, 1)],
        [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)],
        -1,
    ),
    (
        "newBatch lower state. newBatch first offset strictly larger and last offset strictly smaller than batchSoFar.",
        [(100, 115, 1, 1)],
        [(105, 110, 0, 1)],
        [(100, 115, 1, 1)],
        -1,
    ),
    (
        "newBatch higher state. newBatch first offset strictly larger and last offset same as batchSoFar.",
        [(100, 110, 0, 1)],
        [(105, 110, 0, 2)],
        [(100, 104, 0, 1), (105, 110, 0, 2)],
        -1,
    ),
    (
        "newBatch lower state. newBatch first offset strictly larger and last offset same as batchSoFar.",
        [(100, 110, 0, 2)],
        [(105, 110, 0, 1)],
        [(100, 110, 0, 2)],
        -1,
    ),
    (
        "newBatch higher state. newBatch first and last offsets strictly larger than batchSoFar.",
        [(100, 110, 0, 1)],
        [(105, 115, 0, 2)],
        [(100, 104, 0, 1), (105, 115, 0, 2)],
        -1,
    ),
    (
        "newBatch lower state. newBatch first and last offsets strictly larger than batchSoFar.",
        [(100, 110, 0, 2)],
        [(105, 115, 0, 1)],
        [(100, 110, 0, 2), (111, 115, 0, 1)],
        -1,
    ),
]


@pytest.mark.parametrize(("name", "so_far", "new", "expected", "start_offset"), CASES, ids=[c[0] for c in CASES])
def test_kafka_combiner_case(
    name: str,
    so_far: list[tuple[int, int, int, int]],
    new: list[tuple[int, int, int, int]],
    expected: list[tuple[int, int, int, int]],
    start_offset: int,
) -> None:
    result = combine_state_batches(
        [PersisterStateBatch(*b) for b in so_far], [PersisterStateBatch(*b) for b in new], start_offset
    )
    assert result == [PersisterStateBatch(*b) for b in expected], name


def test_the_newest_state_wins_whatever_the_order() -> None:
    acked = PersisterStateBatch(0, 9, 2, 2)
    released = PersisterStateBatch(0, 9, 0, 1)
    assert combine_state_batches([acked], [released], -1) == [acked]
    assert combine_state_batches([released], [acked], -1) == [acked]

"""The share groups' simple assignor (Kafka 4.3.1's SimpleAssignor): cases after SimpleAssignorTest, and a
hypothesis test of its promises: every assignable partition assigned, counts within one of each other, a
partition shared only when members outnumber partitions, and a stable group keeps its assignment."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.broker.groups.simple_assignor import simple_assign

T1, T2, T3 = "topic-1", "topic-2", "topic-3"


def counts(assignment: dict[str, dict[str, set[int]]]) -> dict[str, int]:
    return {member: sum(len(p) for p in topics.values()) for member, topics in assignment.items()}


def test_testAssignWithEmptyMembers() -> None:
    assert simple_assign({}, {T1: 3}, {}) == {}


def test_testAssignWithNoSubscribedTopic() -> None:
    assert simple_assign({"m1": set()}, {T1: 3}, {}) == {"m1": {}}


def test_testAssignWithSubscriptionToNonExistentTopic() -> None:
    assert simple_assign({"m1": {"missing"}}, {T1: 3}, {}) == {"m1": {}}


def test_testAssignWithTwoMembersAndTwoTopicsHomogeneous() -> None:
    result = simple_assign({"m1": {T1, T3}, "m2": {T1, T3}}, {T1: 3, T3: 2}, {})
    assert sorted(counts(result).values()) == [2, 3]
    assert {(t, p) for a in result.values() for t, ps in a.items() for p in ps} == {
        (T1, 0),
        (T1, 1),
        (T1, 2),
        (T3, 0),
        (T3, 1),
    }


def test_testAssignWithThreeMembersThreeTopicsHeterogeneous() -> None:
    # Balance per topic: m3 shares T1 with m1 and T2 with m2.
    result = simple_assign({"m1": {T1}, "m2": {T2}, "m3": {T1, T2}}, {T1: 4, T2: 4}, {})
    assert set(result["m1"]) == {T1} and set(result["m2"]) == {T2}
    assert len(result["m3"][T1]) == 2 and len(result["m3"][T2]) == 2
    assert result["m1"][T1] | result["m3"][T1] == {0, 1, 2, 3}


def test_more_members_than_partitions_share_them() -> None:
    result = simple_assign({f"m{i}": {T1} for i in range(5)}, {T1: 2}, {})
    # Kafka's arithmetic: each partition shared by ceil(5 / 2) = 3 members, 6 assignments over 5 members.
    assert sorted(counts(result).values()) == [1, 1, 1, 1, 2]
    per_partition = [sum(1 for a in result.values() if p in a.get(T1, ())) for p in (0, 1)]
    assert per_partition == [3, 3]


def test_testReassignWithMemberLeaving_is_sticky() -> None:
    first = simple_assign({"m1": {T1}, "m2": {T1}, "m3": {T1}}, {T1: 6}, {})
    second = simple_assign({"m1": {T1}, "m2": {T1}}, {T1: 6}, first)
    assert counts(second) == {"m1": 3, "m2": 3}
    assert first["m1"][T1] <= second["m1"][T1] and first["m2"][T1] <= second["m2"][T1]


def test_unassignable_partitions_wait() -> None:
    result = simple_assign({"m1": {T1}}, {T1: 3}, {}, assignable=lambda topic, partition: partition != 1)
    assert result == {"m1": {T1: {0, 2}}}


@settings(max_examples=200, deadline=None)
@given(
    members=st.integers(1, 8),
    partitions=st.dictionaries(st.sampled_from([T1, T2, T3]), st.integers(1, 7), min_size=1),
    seed_assignment=st.booleans(),
)
def test_balanced_complete_and_sticky(members: int, partitions: dict[str, int], seed_assignment: bool) -> None:
    subscriptions = {f"m{i}": set(partitions) for i in range(members)}
    current = (
        simple_assign({f"m{i}": set(partitions) for i in range(members + 1)}, partitions, {}) if seed_assignment else {}
    )
    result = simple_assign(subscriptions, partitions, current)
    total = sum(partitions.values())
    assigned = [(t, p) for a in result.values() for t, ps in a.items() for p in ps]
    assert set(assigned) == {(t, p) for t, n in partitions.items() for p in range(n)}
    sharing = math.ceil(members / total)
    assert max(assigned.count(tp) for tp in set(assigned)) <= sharing
    if members <= total:
        assert len(assigned) == total  # no sharing needed
    values = counts(result).values()
    assert max(values) - min(values) <= 1
    assert simple_assign(subscriptions, partitions, result) == result

"""`ShareGroup` serving ShareGroupHeartbeat as Kafka 4.3.1's group coordinator does (cases after
GroupMetadataManagerTest's share-group tests): join, epochs, fencing, leave, session expiry, validation errors."""

from __future__ import annotations

import uuid

import pytest

from minikafka.broker.groups.share_group import (
    FENCED_MEMBER_EPOCH,
    GROUP_MAX_SIZE_REACHED,
    UNKNOWN_MEMBER_ID,
    ShareGroup,
    ShareGroupError,
    ShareGroupState,
)
from minikafka.broker.share.share_types import INVALID_REQUEST

FOO, BAR = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"foo": (FOO, 6), "bar": (BAR, 3)}


def beat(
    group: ShareGroup,
    member: str,
    epoch: int,
    subscribed: list[str] | None = None,
    now_ms: int = 0,
    topics: dict | None = None,
):  # type: ignore[no-untyped-def]
    return group.heartbeat(member, epoch, subscribed_topic_names=subscribed, topics=topics or TOPICS, now_ms=now_ms)


def error(group: ShareGroup, *args, **kwargs) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(ShareGroupError) as caught:
        beat(group, *args, **kwargs)
    return caught.value.error_code


def test_testShareGroupMemberJoinsEmptyGroupWithAssignments() -> None:
    group = ShareGroup("share-group")
    assert group.state is ShareGroupState.EMPTY
    result = beat(group, "m1", 0, ["foo", "bar"])
    assert (result.member_id, result.member_epoch, result.heartbeat_interval_ms) == ("m1", 1, 5000)
    assert result.assignment == {FOO: frozenset(range(6)), BAR: frozenset(range(3))}
    assert (group.group_epoch, group.assignment_epoch, group.state) == (1, 1, ShareGroupState.STABLE)


def test_a_second_member_gets_half_and_the_first_gives_it_up() -> None:
    group = ShareGroup("g")
    beat(group, "m1", 0, ["foo"])
    second = beat(group, "m2", 0, ["foo"])
    assert second.member_epoch == 2 and len(second.assignment[FOO]) == 3  # type: ignore[index]
    first = beat(group, "m1", 1)
    assert first.member_epoch == 2
    assert first.assignment == {FOO: frozenset(range(6)) - second.assignment[FOO]}  # type: ignore[index]
    assert beat(group, "m1", 2).assignment is None  # nothing changed: not sent again


def test_a_full_request_always_gets_the_assignment() -> None:
    group = ShareGroup("g")
    beat(group, "m1", 0, ["foo"])
    assert beat(group, "m1", 1, ["foo"]).assignment == {FOO: frozenset(range(6))}


def test_testShareGroupUnknownMemberIdJoins() -> None:
    group = ShareGroup("g")
    assert error(group, "m1", 1) == UNKNOWN_MEMBER_ID
    assert error(group, "m1", -1) == UNKNOWN_MEMBER_ID


def test_testShareGroupMemberEpochValidation() -> None:
    group = ShareGroup("g")
    beat(group, "m1", 0, ["foo"])
    beat(group, "m2", 0, ["foo"])
    beat(group, "m1", 1)  # m1 moves to epoch 2, its previous epoch is 1
    assert error(group, "m1", 3) == FENCED_MEMBER_EPOCH  # ahead
    assert beat(group, "m1", 1).member_epoch == 2  # the previous epoch: its response may have been lost
    beat(group, "m3", 0, ["foo"])
    beat(group, "m1", 2)  # epoch 3 now, previous 2
    assert error(group, "m1", 1) == FENCED_MEMBER_EPOCH  # behind and not the previous one


def test_testShareGroupLeavingMemberBumpsGroupEpoch() -> None:
    group = ShareGroup("g")
    beat(group, "m1", 0, ["foo"])
    beat(group, "m2", 0, ["foo"])
    assert len(beat(group, "m1", 1).assignment[FOO]) == 3  # type: ignore[index]
    left = beat(group, "m2", -1)
    assert left.member_epoch == -1
    assert group.group_epoch == 3 and "m2" not in group.members
    result = beat(group, "m1", 2)
    assert (result.member_epoch, result.assignment) == (3, {FOO: frozenset(range(6))})


def test_subscription_change_bumps_the_epoch() -> None:
    group = ShareGroup("g")
    beat(group, "m1", 0, ["foo"])
    result = beat(group, "m1", 1, ["bar"])
    assert result.member_epoch == 2 and result.assignment == {BAR: frozenset(range(3))}


def test_new_partitions_bump_the_epoch() -> None:
    group = ShareGroup("g")
    beat(group, "m1", 0, ["foo"])
    result = beat(group, "m1", 1, topics={"foo": (FOO, 8), "bar": (BAR, 3)})
    assert result.member_epoch == 2 and result.assignment == {FOO: frozenset(range(8))}


def test_testShareGroupHeartbeatRequestValidation() -> None:
    group = ShareGroup("g")
    assert error(group, "", 0, ["foo"]) == INVALID_REQUEST  # MemberId can't be empty.
    assert error(group, "m1", 0, []) == INVALID_REQUEST  # SubscribedTopicNames must be set in first request.
    assert error(group, "m1", -2) == INVALID_REQUEST  # MemberEpoch is invalid.
    with pytest.raises(ShareGroupError, match=r"RackId can't be empty\."):
        group.heartbeat("m1", 0, subscribed_topic_names=["foo"], topics=TOPICS, now_ms=0, rack_id=" ")


def test_testShareGroupMaxSizeReached() -> None:
    group = ShareGroup("g", max_size=1)
    beat(group, "m1", 0, ["foo"])
    assert error(group, "m2", 0, ["foo"]) == GROUP_MAX_SIZE_REACHED


def test_testShareGroupSessionTimeoutExpiration() -> None:
    group = ShareGroup("g", session_timeout_ms=45_000)
    beat(group, "m1", 0, ["foo"], now_ms=0)
    beat(group, "m2", 0, ["foo"], now_ms=10_000)
    assert group.next_session_deadline_ms() == 45_000
    assert group.expire_sessions(44_999, TOPICS) == []
    assert group.expire_sessions(45_000, TOPICS) == ["m1"]
    assert group.target_assignment == {"m2": {FOO: frozenset(range(6))}}
    assert error(group, "m1", 1) == UNKNOWN_MEMBER_ID


def test_unassignable_partitions_are_not_handed_out() -> None:
    # Kafka assigns a partition only once its share-group state is initialised.
    group = ShareGroup("g", assignable=lambda topic_id, partition: partition < 2)
    assert beat(group, "m1", 0, ["foo"]).assignment == {FOO: frozenset({0, 1})}

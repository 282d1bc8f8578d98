"""A share group's `__consumer_offsets` records (Kafka 4.3.1's layouts): whatever heartbeats, leaves and session
expiries happen, the group rebuilt by replaying the records written so far equals the live group and answers the
next heartbeat the same way."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.broker.groups.share_group import ShareGroup, ShareGroupError
from minikafka.broker.groups.share_group_records import (
    CURRENT_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    records_between,
    replay,
    snapshot,
)

FOO, BAR = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"foo": (FOO, 5), "bar": (BAR, 2)}
MEMBERS = ("m1", "m2", "m3")


def rebuilt(log: list[tuple[bytes, bytes | None]], now_ms: int) -> ShareGroup:
    groups: dict[str, ShareGroup] = {}
    for key, value in log:
        replay(groups, key, value)
    groups["g"].on_loaded(now_ms, TOPICS)
    return groups["g"]


def state(group: ShareGroup) -> tuple:
    return group.group_epoch, group.assignment_epoch, group.members, group.target_assignment


def test_a_join_writes_kafkas_records_in_kafkas_order() -> None:
    group = ShareGroup("g")
    group.heartbeat("m1", 0, subscribed_topic_names=["foo"], topics=TOPICS, now_ms=0, client_id="c", client_host="/h")
    records = records_between(None, group)
    kinds = [int.from_bytes(k[:2], "big") for k, _ in records]
    assert kinds == [10, 11, 13, 12, 14]  # subscription, epoch, target member, target epoch, current assignment
    assert MEMBER_METADATA.decode_value(records[0][1]).subscribed_topic_names == ["foo"]
    assert GROUP_METADATA.decode_value(records[1][1]).epoch == 1
    current = CURRENT_ASSIGNMENT.decode_value(records[4][1])
    assert (current.member_epoch, [(t.topic_id, t.partitions) for t in current.assigned_partitions]) == (
        1,
        [(FOO, [0, 1, 2, 3, 4])],
    )


def test_a_leave_writes_tombstones() -> None:
    group = ShareGroup("g")
    group.heartbeat("m1", 0, subscribed_topic_names=["foo"], topics=TOPICS, now_ms=0)
    before = snapshot(group)
    group.heartbeat("m1", -1, subscribed_topic_names=None, topics=TOPICS, now_ms=0)
    records = records_between(before, group)
    assert [(int.from_bytes(k[:2], "big"), v is None) for k, v in records] == [
        (11, False),
        (12, False),
        (14, True),
        (13, True),
        (10, True),
    ]


def test_replay_refuses_other_records() -> None:
    with pytest.raises(ValueError):
        replay({}, b"\x00\x03\x00\x01g", b"")


operation = st.one_of(
    st.tuples(st.just("beat"), st.sampled_from(MEMBERS), st.sampled_from([None, ["foo"], ["bar"], ["foo", "bar"]])),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("tick"), st.integers(0, 30_000)),
)


@settings(max_examples=150, deadline=None)
@given(operations=st.lists(operation, max_size=40))
def test_replayed_group_equals_live_group(operations: list[tuple]) -> None:
    group = ShareGroup("g", session_timeout_ms=45_000)
    log: list[tuple[bytes, bytes | None]] = []
    now_ms = 0
    for op in operations:
        before = snapshot(group) if log else None
        if op[0] == "tick":
            now_ms += op[1]
            group.expire_sessions(now_ms, TOPICS)
        else:
            member = op[1]
            known = group.members.get(member)
            epoch = -1 if op[0] == "leave" else (known.member_epoch if known else 0)
            subscribed = op[2] if op[0] == "beat" else None
            if epoch == 0 and not subscribed:
                subscribed = ["foo"]
            try:
                group.heartbeat(member, epoch, subscribed_topic_names=subscribed, topics=TOPICS, now_ms=now_ms)
            except ShareGroupError:
                continue
        log.extend(records_between(before, group))
        if log:
            copy = rebuilt(log, now_ms)
            assert state(copy) == state(group)
    if group.members:
        member = sorted(group.members)[0]
        epoch = group.members[member].member_epoch
        copy = rebuilt(log, now_ms)
        live = group.heartbeat(member, epoch, subscribed_topic_names=None, topics=TOPICS, now_ms=now_ms)
        again = copy.heartbeat(member, epoch, subscribed_topic_names=None, topics=TOPICS, now_ms=now_ms)
        assert live == again

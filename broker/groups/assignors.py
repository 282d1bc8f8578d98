"""The server-side assignors of KIP-848 consumer groups: `uniform` and `range` (Kafka's UniformAssignor and
RangeAssignor in `org.apache.kafka.coordinator.group.assignor`), selected by `group.consumer.assignors` and a
member's `ServerAssignor`.

An assignor maps every member's subscription (topic ids) and its current target assignment to a new target
assignment. `uniform` is sticky: a member keeps what it had while that stays balanced, free partitions go to
the least-loaded subscribed member, then partitions move from the most- to the least-loaded member until
counts differ by at most one among members sharing the topic. `range` co-partitions: per topic, the
subscribed members sorted by member id get contiguous ranges, the first `partitions % members` one more.
Member iteration is by member id, so results are deterministic (Kafka iterates its hash map: which member
gets which partitions can differ from Kafka, the counts cannot). Pure functions; thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ASSIGNORS", "Assignment", "MemberSubscription", "TopicInfo", "assign"]

#: topic id -> partitions, as KIP-848 records and responses carry them.
Assignment = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: uuid.UUID
    name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What an assignor knows of a member: its subscribed topic ids and its current target assignment."""

    topic_ids: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


def _uniform(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, TopicInfo]) -> dict[str, Assignment]:
    order = sorted(members)
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {member_id: set() for member_id in order}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    all_partitions = sorted(
        ((topic_id, index) for topic_id in set().union(*(m.topic_ids for m in members.values())) if topic_id in topics
         for index in range(topics[topic_id].num_partitions)),
        key=lambda tp: (topics[tp[0]].name, tp[1]),
    )
    subscribers = {
        topic_id: [member_id for member_id in order if topic_id in members[member_id].topic_ids]
        for topic_id in {tp[0] for tp in all_partitions}
    }
    # Stickiness: keep what is still valid, within a fair share of what the member's topics hold.
    for member_id in order:
        subscription = members[member_id]
        share = _fair_share(member_id, subscription, topics, subscribers)
        for topic_id, partitions in sorted(subscription.current.items(), key=lambda item: topics[item[0]].name
                                           if item[0] in topics else ""):
            if topic_id not in subscription.topic_ids or topic_id not in topics:
                continue
            for index in sorted(partitions):
                tp = (topic_id, index)
                if index < topics[topic_id].num_partitions and tp not in owner and len(owned[member_id]) < share:
                    owner[tp] = member_id
                    owned[member_id].add(tp)
    for tp in all_partitions:
        if tp not in owner:
            target = min(subscribers[tp[0]], key=lambda member_id: len(owned[member_id]))
            owner[tp] = target
            owned[target].add(tp)
    _balance(all_partitions, owner, owned, subscribers)
    return {member_id: _as_assignment(owned[member_id]) for member_id in order}


def _fair_share(member_id: str, subscription: MemberSubscription, topics: Mapping[uuid.UUID, TopicInfo],
                subscribers: Mapping[uuid.UUID, list[str]]) -> int:
    """Ceil of the member's share of the partitions of its topics (exact for homogeneous subscriptions)."""
    total = sum(topics[t].num_partitions for t in subscription.topic_ids if t in topics)
    sharing = {other for t in subscription.topic_ids for other in subscribers.get(t, ())} | {member_id}
    return -(-total // len(sharing))


def _balance(all_partitions: list[tuple[uuid.UUID, int]], owner: dict[tuple[uuid.UUID, int], str],
             owned: dict[str, set[tuple[uuid.UUID, int]]], subscribers: Mapping[uuid.UUID, list[str]]) -> None:
    moved = True
    while moved:
        moved = False
        for tp in reversed(all_partitions):
            current = owner[tp]
            target = min(subscribers[tp[0]], key=lambda member_id: len(owned[member_id]))
            if len(owned[target]) < len(owned[current]) - 1:
                owned[current].discard(tp)
                owned[target].add(tp)
                owner[tp] = target
                moved = True


def _range(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, TopicInfo]) -> dict[str, Assignment]:
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {member_id: set() for member_id in members}
    for topic_id, info in topics.items():
        subscribed = sorted(member_id for member_id, sub in members.items() if topic_id in sub.topic_ids)
        if not subscribed:
            continue
        quota, extra = divmod(info.num_partitions, len(subscribed))
        start = 0
        for position, member_id in enumerate(subscribed):
            count = quota + (1 if position < extra else 0)
            owned[member_id].update((topic_id, index) for index in range(start, start + count))
            start += count
    return {member_id: _as_assignment(partitions) for member_id, partitions in owned.items()}


def _as_assignment(partitions: set[tuple[uuid.UUID, int]]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for topic_id, index in partitions:
        out.setdefault(topic_id, set()).add(index)
    return {topic_id: frozenset(indexes) for topic_id, indexes in out.items()}


ASSIGNORS = {"uniform": _uniform, "range": _range}


def assign(name: str, members: Mapping[str, MemberSubscription],
           topics: Mapping[uuid.UUID, TopicInfo]) -> dict[str, Assignment]:
    """The target assignment of every member by assignor `name` (one of `ASSIGNORS`)."""
    if not members:
        return {}
    return ASSIGNORS[name](members, topics)

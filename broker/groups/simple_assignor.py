"""Kafka 4.3.1's `SimpleAssignor` for share groups ("simple", the only share-group assignor Kafka ships).

Balance first, then stickiness: each member gets its desired number of partitions (they differ by at most one),
and when there are more members than partitions, a partition is shared by up to ceil(members / partitions)
members (share groups may hand one partition to several consumers). The existing assignment is kept as far as
balance allows: members subscribed to a topic no longer lose its partitions, overfilled members and overshared
partitions give some up, and what is left unassigned goes to members below their count. With one subscription
for every member (homogeneous) this runs once over all partitions; otherwise once per topic over the members
subscribed to it, and the per-topic results are combined (Kafka's heterogeneous builder).

Kafka iterates hash maps; here members and partitions go in sorted order, so the result is deterministic.
Pure functions; thread-safe.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Set
from typing import TypeVar

__all__ = ["simple_assign"]

Topic = TypeVar("Topic", bound=Hashable)


def simple_assign(
    subscriptions: Mapping[str, Set[Topic]],
    topic_partitions: Mapping[Topic, int],
    current: Mapping[str, Mapping[Topic, Set[int]]],
    assignable: Callable[[Topic, int], bool] = lambda topic, partition: True,
) -> dict[str, dict[Topic, set[int]]]:
    """The target assignment: member id -> topic -> partitions.

    `subscriptions` maps each member to the topics it subscribes to (topics missing from `topic_partitions` are
    ignored, as they are until they exist), `current` is the assignment in force, `assignable` says whether a
    partition may be handed out yet (Kafka: once its share-group state is initialised)."""
    members = sorted(subscriptions)
    if not members:
        return {}
    result: dict[str, dict[Topic, set[int]]] = {member: {} for member in members}
    subscribed_sets = {frozenset(t for t in subscriptions[m] if t in topic_partitions) for m in members}
    groups: list[tuple[list[Topic], list[str]]]
    if len(subscribed_sets) == 1:
        (topic_set,) = subscribed_sets
        groups = [(sorted(topic_set, key=repr), members)] if topic_set else []
    else:
        all_topics = sorted({t for m in members for t in subscriptions[m] if t in topic_partitions}, key=repr)
        groups = [([topic], [m for m in members if topic in subscriptions[m]]) for topic in all_topics]
    for topics, group_members in groups:
        targets = [(t, p) for t in topics for p in range(topic_partitions[t]) if assignable(t, p)]
        old = {
            member: [(t, p) for t in topics for p in sorted(current.get(member, {}).get(t, ())) if (t, p) in targets]
            for member in group_members
        }
        for member, partitions in _assign_homogeneous(group_members, targets, old).items():
            for topic, partition in partitions:
                result[member].setdefault(topic, set()).add(partition)
    return result


def _assign_homogeneous(
    members: list[str], targets: list[tuple[Topic, int]], old: Mapping[str, list[tuple[Topic, int]]]
) -> dict[str, list[tuple[Topic, int]]]:
    if not targets or not members:
        return {member: [] for member in members}
    target_set = set(targets)
    sharing = math.ceil(len(members) / len(targets))
    precise = sharing * len(targets) / len(members)
    desired = {
        member: math.ceil(precise * (index + 1)) - math.ceil(precise * index) for index, member in enumerate(members)
    }
    by_member: dict[str, list[tuple[Topic, int]]] = {
        m: [tp for tp in old.get(m, []) if tp in target_set] for m in members
    }
    # Overfilled members give up partitions beyond their desired count.
    for member in members:
        del by_member[member][desired[member] :]
    # Overshared partitions lose members beyond the desired sharing.
    by_partition: dict[tuple[Topic, int], list[str]] = {tp: [] for tp in targets}
    for member in members:
        for tp in list(by_member[member]):
            if len(by_partition[tp]) >= sharing:
                by_member[member].remove(tp)
            else:
                by_partition[tp].append(member)
    # Unassigned or undershared partitions go round the members below their count.
    unfilled = [m for m in members if len(by_member[m]) < desired[m]]
    cursor = 0
    for tp in targets:
        if not unfilled:
            break
        misses = 0
        while len(by_partition[tp]) < sharing and unfilled and misses < len(unfilled):
            member = unfilled[cursor % len(unfilled)]
            if member in by_partition[tp]:
                cursor += 1
                misses += 1
                continue
            by_member[member].append(tp)
            by_partition[tp].append(member)
            misses = 0
            if len(by_member[member]) >= desired[member]:
                unfilled.remove(member)
            else:
                cursor += 1
    return by_member

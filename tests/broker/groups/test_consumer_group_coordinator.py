"""KIP-848 consumer groups (ConsumerGroupCoordinator), driven synchronously with a FakeClock and a
ManualScheduler over an in-memory `__consumer_offsets` of real record batches."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.consumer_group_config import ConsumerGroupConfig
from minikafka.broker.groups.consumer_group_coordinator import HeartbeatRequestData, HeartbeatResult
from minikafka.broker.groups.group_coordinator import GroupCoordinator
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_offsets import CommitRequest
from minikafka.broker.groups.offsets_topic import MemoryOffsetsTopic
from minikafka.broker.groups.scheduler import ManualScheduler
from minikafka.broker.groups.topic_image import StaticTopicImage
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import FakeClock

SESSION_MS = 1000


class Harness:
    def __init__(self, topic: MemoryOffsetsTopic | None = None, image: StaticTopicImage | None = None,
                 clock: FakeClock | None = None, **consumer: Any) -> None:
        self.clock = clock or FakeClock()
        self.scheduler = ManualScheduler(self.clock)
        self.config = GroupConfig(min_session_timeout_ms=100, initial_rebalance_delay_ms=0)
        self.topic = topic or MemoryOffsetsTopic()
        self.topic.create_now(4)
        self.manager = GroupMetadataManager(self.config, self.topic, self.clock)
        self.image = image or StaticTopicImage()
        self.coordinator = GroupCoordinator(
            self.config, self.manager, self.scheduler, self.clock,
            ConsumerGroupConfig(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=100, **consumer), self.image)
        self.consumer = self.coordinator.consumer
        asyncio.run(self.coordinator.startup())

    def hb(self, member_id: str, epoch: int, owned: list[tuple[uuid.UUID, list[int]]] | None = None,
           topics: list[str] | None = None, instance: str | None = None, group: str = "g",
           assignor: str | None = None) -> HeartbeatResult:
        joining = epoch == 0
        return self.consumer.heartbeat(HeartbeatRequestData(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=5000 if joining else -1,
            subscribed_topic_names=(topics or ["t"]) if joining else topics,
            server_assignor=assignor, owned=[] if joining else owned, client_id="c", client_host="/127.0.0.1"))

    def owned(self, result: HeartbeatResult) -> list[tuple[uuid.UUID, list[int]]]:
        assert result.assignment is not None
        return [(topic_id, sorted(parts)) for topic_id, parts in result.assignment.items()]


def count(result: HeartbeatResult) -> int:
    assert result.assignment is not None
    return sum(len(parts) for parts in result.assignment.values())


def test_join_alone_gets_everything_then_partitions_move_only_after_revocation() -> None:
    h = Harness()
    t = h.image.add("t", 6)
    a = h.hb("a", 0)
    assert (a.error, a.member_epoch, a.heartbeat_interval_ms) == (ErrorCode.NONE, 2, 100)  # a new group is at 1
    assert a.assignment == {t.topic_id: frozenset(range(6))}
    group = h.manager.consumer_groups["g"]
    assert group.state().value == "Stable"

    b = h.hb("b", 0)
    assert b.error is ErrorCode.NONE and b.member_epoch == 3
    assert b.assignment == {}  # its target partitions are still a's
    assert group.state().value == "Reconciling"
    a2 = h.hb("a", 2, owned=h.owned(a))
    assert a2.member_epoch == 2 and count(a2) == 3  # a must revoke three before anything moves
    b2 = h.hb("b", 3, owned=[])
    assert b2.assignment is None or count(b2) == 0
    a3 = h.hb("a", 2, owned=h.owned(a2))  # revoked
    assert a3.member_epoch == 3 and a3.assignment is None  # the new epoch; its partitions did not change
    b3 = h.hb("b", 3, owned=[])
    assert count(b3) == 3
    assert set(a2.assignment[t.topic_id]).isdisjoint(b3.assignment[t.topic_id])  # type: ignore[index]
    assert group.state().value == "Stable"


def test_epoch_errors_and_request_validation() -> None:
    h = Harness()
    h.image.add("t", 2)
    assert h.hb("a", 0).member_epoch == 2
    assert h.hb("a", 5, owned=[]).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert h.hb("x", 2, owned=[]).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.hb("a", 1, group="nope").error is ErrorCode.GROUP_ID_NOT_FOUND
    assert h.hb("", 0).error is ErrorCode.INVALID_REQUEST
    assert h.hb("b", 0, assignor="sticky").error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert h.hb("b", -3).error is ErrorCode.INVALID_REQUEST


def test_session_timeout_fences_and_partitions_move() -> None:
    h = Harness()
    h.image.add("t", 4)
    a = h.hb("a", 0)
    b = h.hb("b", 0)
    a = h.hb("a", 2, owned=h.owned(a))
    assert h.hb("a", 2, owned=h.owned(a)).member_epoch == 3  # revoked: a's partitions stay as they are
    b = h.hb("b", 3, owned=[])
    assert count(a) == 2 and count(b) == 2
    owned = h.owned(b)
    for _ in range(4):  # b keeps heartbeating, a goes silent
        h.scheduler.advance_ms(SESSION_MS // 3)
        b = h.hb("b", b.member_epoch, owned=owned)
        owned = owned if b.assignment is None else h.owned(b)
    assert "a" not in h.manager.consumer_groups["g"].members
    assert b.member_epoch == 4 and sum(len(p) for _, p in owned) == 4


def test_static_member_rejoins_with_its_partitions_and_unreleased_instance() -> None:
    h = Harness()
    h.image.add("t", 3)
    a = h.hb("a", 0, instance="i1")
    assert count(a) == 3
    assert h.hb("a2", 0, instance="i1").error is ErrorCode.UNRELEASED_INSTANCE_ID
    left = h.hb("a", -2, instance="i1")
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -2)
    back = h.hb("a2", 0, instance="i1")
    assert back.error is ErrorCode.NONE and back.member_epoch == 2 and count(back) == 3
    assert list(h.manager.consumer_groups["g"].members) == ["a2"]
    assert h.hb("a", 1, instance="i1", owned=[]).error is ErrorCode.FENCED_INSTANCE_ID


def test_leave_bumps_epoch_and_empty_group_lists_as_empty() -> None:
    h = Harness()
    h.image.add("t", 2)
    h.hb("a", 0)
    left = h.hb("a", -1)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    group = h.manager.consumer_groups["g"]
    assert group.group_epoch == 3 and group.state().value == "Empty"
    assert h.coordinator.admin.handle_list_groups()[1] == [("g", "consumer", "Empty", "consumer")]


def test_offset_commit_and_fetch_check_member_epochs() -> None:
    h = Harness()
    h.image.add("t", 2)
    a = h.hb("a", 0)
    tp = ("t", 0)
    commit = {tp: CommitRequest(5, -1, "")}
    assert h.coordinator.offsets.handle_commit_offsets("g", "a", None, 2, commit) == {tp: ErrorCode.NONE}
    assert h.coordinator.offsets.handle_commit_offsets("g", "a", None, 0, commit) == {tp: ErrorCode.STALE_MEMBER_EPOCH}
    assert h.coordinator.offsets.handle_commit_offsets("g", "zz", None, 2, commit) == {tp: ErrorCode.UNKNOWN_MEMBER_ID}
    assert h.coordinator.offsets.handle_commit_offsets("g", "a", None, 2, commit, api_version=8) == {
        tp: ErrorCode.UNSUPPORTED_VERSION}
    assert h.coordinator.offsets.handle_fetch_offsets("g", [tp], "a", 0)[0] is ErrorCode.STALE_MEMBER_EPOCH
    error, fetched = h.coordinator.offsets.handle_fetch_offsets("g", [tp], "a", a.member_epoch)
    assert error is ErrorCode.NONE and fetched[tp].offset == 5  # type: ignore[union-attr]
    assert h.coordinator.offsets.handle_fetch_offsets("g", [tp])[1][tp].offset == 5  # type: ignore[union-attr]


def test_state_and_offsets_reload_from_the_log() -> None:
    h = Harness()
    t = h.image.add("t", 4)
    a = h.hb("a", 0)
    h.hb("b", 0, instance="ib")
    a = h.hb("a", 2, owned=h.owned(a))
    h.coordinator.offsets.handle_commit_offsets("g", "a", None, a.member_epoch, {("t", 1): CommitRequest(9, -1, "m")})
    before = h.manager.consumer_groups["g"]
    again = Harness(topic=h.topic, image=h.image, clock=h.clock)
    after = again.manager.consumer_groups["g"]
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
    assert after.members == before.members and after.target == before.target
    assert after.partition_epochs == before.partition_epochs
    assert after.static_members == {"ib": "b"}
    assert after.subscription_metadata["t"].topic_id == t.topic_id
    assert again.coordinator.offsets.handle_fetch_offsets("g", [("t", 1)])[1][("t", 1)].offset == 9  # type: ignore[union-attr]
    # the reloaded members heartbeat on with their epochs; an expired session still fences them
    assert again.hb("a", a.member_epoch, owned=again.owned(a)).error is ErrorCode.NONE
    again.scheduler.advance_ms(SESSION_MS + 1)
    assert not again.manager.consumer_groups["g"].members


def test_classic_and_consumer_groups_refuse_each_other_when_migration_is_disabled() -> None:
    h = Harness(migration_policy="disabled")
    h.image.add("t", 2)
    h.hb("a", 0, group="cg")
    from minikafka.broker.groups.join_sync_messages import JoinGroupRequestData
    out: list[Any] = []
    request = JoinGroupRequestData(session_timeout_ms=1000, rebalance_timeout_ms=1000, group_instance_id=None,
                                   protocol_type="consumer", protocols=[("range", b"")], client_id="c",
                                   client_host="/127.0.0.1", require_known_member_id=False)
    h.coordinator.handle_join_group("cg", "", request, out.append)
    assert out[0].error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h.coordinator.handle_join_group("classic", "", request, out.append)
    refused = h.hb("b", 0, group="classic")
    assert refused.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert refused.message == ("Cannot upgrade classic group classic to consumer group because online upgrade "
                               "is disabled.")
    assert h.hb("b", 3, group="classic", owned=[]).message == "Group classic is not a consumer group."
    described = h.consumer.describe("classic")
    assert described.error is ErrorCode.GROUP_ID_NOT_FOUND


def test_uniform_and_range_assignors() -> None:
    h = Harness()
    t = h.image.add("t", 5)
    h.hb("a", 0, assignor="range")
    h.hb("b", 0, assignor="range")
    group = h.manager.consumer_groups["g"]
    assert group.target["a"] == {t.topic_id: frozenset({0, 1, 2})}
    assert group.target["b"] == {t.topic_id: frozenset({3, 4})}
    assert h.consumer.describe("g").assignor == "range"
    h2 = Harness()
    t2 = h2.image.add("t", 7)
    for member in "abc":
        h2.hb(member, 0)
    sizes = sorted(len(p) for target in h2.manager.consumer_groups["g"].target.values() for p in target.values())
    assert sizes == [2, 2, 3]
    union = set().union(*(target[t2.topic_id] for target in h2.manager.consumer_groups["g"].target.values()))
    assert union == set(range(7))


def regex_heartbeat(h: Harness, member_id: str, epoch: int, regex: str | None, names: list[str] | None,
                    describable: set[str]) -> HeartbeatResult:
    joining = epoch == 0
    return h.consumer.heartbeat(HeartbeatRequestData(
        group_id="g", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=5000 if joining else -1,
        subscribed_topic_regex=regex if joining else None, subscribed_topic_names=names if joining else None,
        owned=[] if joining else None, client_id="c", client_host="/127.0.0.1",
        describable_topics=lambda topics: {name for name in topics if name in describable}))


def test_a_regex_resolves_over_internal_topics_to_describable_ones_and_survives_a_reload() -> None:
    """Kafka's TopicRegexResolver: every topic, internal ones included, filtered by DESCRIBE with the
    heartbeating member's authorization. After a reload, until a heartbeat resolves it again, the regex keeps
    only the topics the persisted subscription metadata had: a fence then brings back no filtered-out topic."""
    h = Harness()
    open_topic, _secret = h.image.add("__open", 1), h.image.add("__secret", 1)
    a = regex_heartbeat(h, "a", 0, "__.*", None, {"__open"})
    assert a.error is ErrorCode.NONE and a.assignment == {open_topic.topic_id: frozenset({0})}
    assert regex_heartbeat(h, "c", 0, None, ["__open"], {"__open"}).error is ErrorCode.NONE
    reloaded = Harness(topic=h.topic, image=h.image)
    assert set(reloaded.manager.consumer_groups["g"].subscription_metadata) == {"__open"}
    left = reloaded.consumer.heartbeat(HeartbeatRequestData(group_id="g", member_id="c", member_epoch=-1))
    assert left.error is ErrorCode.NONE
    assert set(reloaded.manager.consumer_groups["g"].subscription_metadata) == {"__open"}

"""GroupCoordinator state machine, driven synchronously with a FakeClock and a ManualScheduler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.group_coordinator import GroupCoordinator
from minikafka.broker.groups.group_metadata import GroupState
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_offsets import CommitRequest
from minikafka.broker.groups.join_sync_messages import JoinGroupRequestData, JoinGroupResult, SyncGroupResult
from minikafka.broker.groups.offsets_topic import MemoryOffsetsTopic
from minikafka.broker.groups.scheduler import ManualScheduler
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import FakeClock

PROTOCOLS = [("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t")]


class Harness:
    def __init__(self, topic: MemoryOffsetsTopic | None = None, **config: Any) -> None:
        self.clock = FakeClock()
        self.scheduler = ManualScheduler(self.clock)
        self.config = GroupConfig(**{"min_session_timeout_ms": 100, "initial_rebalance_delay_ms": 0, **config})
        self.topic = topic or MemoryOffsetsTopic()
        self.topic.create_now(4)
        self.manager = GroupMetadataManager(self.config, self.topic, self.clock)
        self.coordinator = GroupCoordinator(self.config, self.manager, self.scheduler, self.clock)
        self.offsets = self.coordinator.offsets
        asyncio.run(self.coordinator.startup())

    def join(
        self, member_id: str = "", group: str = "g", instance: str | None = None, session_ms: int = 1000,
        protocols: list[tuple[str, bytes]] | None = None, require_known: bool = True, run_timers: bool = True,
    ) -> list[JoinGroupResult]:
        """One JoinGroup; then, unless `run_timers` is False, the timers due now run (the event loop's next
        turn: the initial rebalance completes from its delay timer even at 0 ms)."""
        out: list[JoinGroupResult] = []
        request = JoinGroupRequestData(
            session_timeout_ms=session_ms, rebalance_timeout_ms=2000, group_instance_id=instance,
            protocol_type="consumer", protocols=protocols or PROTOCOLS, client_id="client",
            client_host="/127.0.0.1", require_known_member_id=require_known,
        )
        self.coordinator.handle_join_group(group, member_id, request, out.append)
        if run_timers:
            self.scheduler.advance_ms(0)
        return out

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             group: str = "g") -> list[SyncGroupResult]:
        out: list[SyncGroupResult] = []
        self.coordinator.handle_sync_group(group, generation, member_id, None, None, None, assignments or {},
                                           out.append)
        return out

    def new_member(self, group: str = "g") -> str:
        [required] = self.join(group=group)
        assert required.error is ErrorCode.MEMBER_ID_REQUIRED
        return required.member_id

    def stable_group_of_one(self) -> tuple[str, int]:
        member = self.new_member()
        [joined] = self.join(member)
        assert joined.error is ErrorCode.NONE and joined.leader_id == member
        [synced] = self.sync(member, joined.generation_id, {member: b"A"})
        assert synced.error is ErrorCode.NONE and synced.assignment == b"A"
        return member, joined.generation_id


def test_first_join_requires_member_id_then_single_member_becomes_stable_leader() -> None:
    h = Harness()
    member, generation = h.stable_group_of_one()
    assert generation == 1
    group = h.manager.get_group("g")
    assert group is not None and group.is_(GroupState.STABLE)
    assert h.coordinator.handle_heartbeat("g", member, None, generation) is ErrorCode.NONE


def test_two_members_rebalance_leader_gets_metadata_follower_gets_none() -> None:
    h = Harness()
    first, generation = h.stable_group_of_one()
    second = h.new_member()
    pending_second = h.join(second)
    assert pending_second == []  # waits for the leader to rejoin
    assert h.coordinator.handle_heartbeat("g", first, None, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    [leader] = h.join(first)
    [follower] = pending_second
    assert leader.generation_id == follower.generation_id == 2
    assert leader.leader_id == follower.leader_id == first
    assert sorted(m[0] for m in leader.members) == sorted([first, second]) and follower.members == []
    follower_sync = h.sync(second, 2)
    assert follower_sync == []  # waits for the leader's assignment
    [leader_sync] = h.sync(first, 2, {first: b"1", second: b"2"})
    assert leader_sync.assignment == b"1" and follower_sync[0].assignment == b"2"


def test_session_timeout_removes_silent_member_and_rebalances() -> None:
    h = Harness()
    first, _ = h.stable_group_of_one()
    second = h.new_member()
    pending = h.join(second)
    [leader] = h.join(first)
    h.sync(first, 2, {first: b"1", second: b"2"})
    h.sync(second, 2)
    assert pending[0].error is ErrorCode.NONE
    for _ in range(5):  # only the first member heartbeats
        h.scheduler.advance_ms(400)
        h.coordinator.handle_heartbeat("g", first, None, 2)
    group = h.manager.get_group("g")
    assert group is not None and second not in group.members
    assert h.coordinator.handle_heartbeat("g", first, None, 2) is ErrorCode.REBALANCE_IN_PROGRESS
    [rejoined] = h.join(first)
    assert rejoined.generation_id == 3 and [m[0] for m in rejoined.members] == [first]
    assert leader.generation_id == 2


def test_heartbeat_error_precedence() -> None:
    h = Harness()
    assert h.coordinator.handle_heartbeat("nope", "m", None, 1) is ErrorCode.UNKNOWN_MEMBER_ID
    member, generation = h.stable_group_of_one()
    assert h.coordinator.handle_heartbeat("g", "other", None, generation) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.handle_heartbeat("g", member, None, generation + 1) is ErrorCode.ILLEGAL_GENERATION
    assert h.coordinator.handle_heartbeat("", member, None, generation) is ErrorCode.INVALID_GROUP_ID


def test_join_checks_session_timeout_and_protocol() -> None:
    h = Harness()
    [bad] = h.join(session_ms=50)
    assert bad.error is ErrorCode.INVALID_SESSION_TIMEOUT
    h.stable_group_of_one()
    [inconsistent] = h.join(protocols=[("roundrobin", b"")])
    assert inconsistent.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    [unknown] = h.join("ghost")
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID


def test_leave_group_rebalances_remaining_and_empty_group_is_stored() -> None:
    h = Harness()
    member, generation = h.stable_group_of_one()
    error, members = h.coordinator.handle_leave_group("g", [(member, None), ("ghost", None)])
    assert error is ErrorCode.NONE and members == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    h.scheduler.advance_ms(2000)  # rebalance timeout: completes with no members
    group = h.manager.get_group("g")
    assert group is not None and group.is_(GroupState.EMPTY) and group.generation_id == generation + 1


def test_offset_commit_rules_and_fetch() -> None:
    h = Harness()
    tp = ("t", 0)
    # simple (generation -1) commit to an unknown group creates it
    assert h.offsets.handle_commit_offsets("simple", "", None, -1, {tp: CommitRequest(5, -1, "m")}) == {
        tp: ErrorCode.NONE
    }
    error, fetched = h.offsets.handle_fetch_offsets("simple", [tp, ("t", 1)])
    assert error is ErrorCode.NONE and fetched[tp] is not None and fetched[tp].offset == 5  # type: ignore[union-attr]
    assert fetched[("t", 1)] is None
    assert h.offsets.handle_commit_offsets("nogroup", "m", None, 3, {tp: CommitRequest(1, -1, "")}) == {
        tp: ErrorCode.ILLEGAL_GENERATION
    }
    member, generation = h.stable_group_of_one()
    assert h.offsets.handle_commit_offsets("g", "", None, -1, {tp: CommitRequest(1, -1, "")}) == {
        tp: ErrorCode.UNKNOWN_MEMBER_ID
    }
    assert h.offsets.handle_commit_offsets("g", member, None, generation + 1, {tp: CommitRequest(1, -1, "")}) == {
        tp: ErrorCode.ILLEGAL_GENERATION
    }
    assert h.offsets.handle_commit_offsets("g", member, None, generation, {tp: CommitRequest(1, -1, "x" * 5000)}) == {
        tp: ErrorCode.OFFSET_METADATA_TOO_LARGE
    }
    assert h.offsets.handle_commit_offsets("g", member, None, generation, {tp: CommitRequest(7, 0, "")}) == {
        tp: ErrorCode.NONE
    }
    assert h.offsets.handle_fetch_offsets("g", None)[1][tp].offset == 7  # type: ignore[union-attr]


def test_delete_groups_and_offsets() -> None:
    h = Harness()
    member, generation = h.stable_group_of_one()
    assert h.coordinator.admin.handle_delete_groups(["g", "missing"]) == {
        "g": ErrorCode.NON_EMPTY_GROUP, "missing": ErrorCode.GROUP_ID_NOT_FOUND,
    }
    h.offsets.handle_commit_offsets("g", member, None, generation, {("t", 0): CommitRequest(3, -1, "")})
    error, results = h.offsets.handle_delete_offsets("g", [("t", 0)])
    assert error is ErrorCode.NONE and results == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC}
    error, results = h.offsets.handle_delete_offsets("g", [("other", 0)])
    assert results == {("other", 0): ErrorCode.NONE}
    h.coordinator.handle_leave_group("g", [(member, None)])
    h.scheduler.advance_ms(2000)
    assert h.coordinator.admin.handle_delete_groups(["g"]) == {"g": ErrorCode.NONE}
    assert h.manager.get_group("g") is None
    assert h.offsets.handle_fetch_offsets("g", [("t", 0)])[1] == {("t", 0): None}


def test_groups_reload_from_the_offsets_topic() -> None:
    h = Harness()
    member, generation = h.stable_group_of_one()
    h.offsets.handle_commit_offsets("g", member, None, generation, {("t", 0): CommitRequest(42, 3, "meta")})
    h.offsets.handle_commit_offsets("s", "", None, -1, {("t", 1): CommitRequest(9, -1, "")})
    h.offsets.handle_commit_offsets("gone", "", None, -1, {("t", 1): CommitRequest(9, -1, "")})
    assert h.coordinator.admin.handle_delete_groups(["gone"]) == {"gone": ErrorCode.NONE}
    reloaded = Harness(topic=h.topic)
    group = reloaded.manager.get_group("g")
    assert group is not None and group.is_(GroupState.STABLE) and group.generation_id == generation
    assert group.members[member].assignment == b"A" and group.leader_id == member
    stored = group.offsets[("t", 0)]
    assert (stored.offset, stored.leader_epoch, stored.metadata) == (42, 3, "meta")
    assert reloaded.manager.get_group("s") is not None and reloaded.manager.get_group("gone") is None
    # the reloaded member keeps its session: heartbeats work, silence expires it
    assert reloaded.coordinator.handle_heartbeat("g", member, None, generation) is ErrorCode.NONE
    reloaded.scheduler.advance_ms(1500)
    assert member not in group.members


def test_static_member_rejoin_keeps_assignment_and_fences_old_id() -> None:
    h = Harness()
    [joined] = h.join(instance="i1")
    member = joined.member_id
    h.sync(member, joined.generation_id, {member: b"X"})
    [rejoined] = h.join(instance="i1")
    assert rejoined.error is ErrorCode.NONE and rejoined.member_id != member
    assert rejoined.generation_id == joined.generation_id
    assert h.coordinator.handle_heartbeat("g", member, "i1", joined.generation_id) is ErrorCode.FENCED_INSTANCE_ID
    [synced] = h.sync(rejoined.member_id, rejoined.generation_id)
    assert synced.assignment == b"X"


def test_group_max_size() -> None:
    h = Harness(max_size=1)
    h.stable_group_of_one()
    [full] = h.join()
    assert full.error is ErrorCode.GROUP_MAX_SIZE_REACHED


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    h = Harness(initial_rebalance_delay_ms=300)
    first = h.join(require_known=False)
    h.scheduler.advance_ms(200)
    second = h.join(require_known=False)
    assert first == [] and second == []
    h.scheduler.advance_ms(300)
    assert first == [] and second == []
    h.scheduler.advance_ms(300)
    assert first[0].generation_id == second[0].generation_id == 1
    assert len(first[0].members) == 2


def test_expired_offsets_of_empty_group_are_tombstoned() -> None:
    h = Harness(offsets_retention_ms=10_000)
    h.offsets.handle_commit_offsets("s", "", None, -1, {("t", 0): CommitRequest(1, -1, "")})
    h.clock.advance_ms(9_000)
    assert h.manager.cleanup_expired_offsets() == 0
    h.clock.advance_ms(1_000)
    assert h.manager.cleanup_expired_offsets() == 1
    assert h.manager.get_group("s") is None
    partition = h.manager.partition_for("s")
    assert h.topic.records(partition)[-1][1] is None


def test_load_in_progress_and_inactive() -> None:
    h = Harness()
    h.manager.loading = True
    assert h.join()[0].error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    h.manager.loading = False
    h.coordinator.shutdown()
    assert h.offsets.handle_fetch_offsets("g", None)[0] is ErrorCode.COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize("group_id", ["g", "my-group", "polygenelubricants"])
def test_partition_is_within_range(group_id: str) -> None:
    assert 0 <= Harness().manager.partition_for(group_id) < 4


def test_requests_during_startup_load_get_load_in_progress_until_it_finishes() -> None:
    h = Harness()
    h.stable_group_of_one()
    restarted = GroupCoordinator(h.config, GroupMetadataManager(h.config, h.topic, h.clock), h.scheduler, h.clock)

    async def start_and_probe() -> tuple[ErrorCode, ErrorCode]:
        load = asyncio.create_task(restarted.startup())
        await asyncio.sleep(0)  # the load yields between partitions: the broker answers meanwhile
        during = restarted.validate_group_status("g")
        await load
        return during, restarted.validate_group_status("g")

    during, after = asyncio.run(start_and_probe())
    assert (during, after) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE)
    assert restarted.manager.get_group("g") is not None


def test_initial_rebalance_completes_from_its_timer_also_at_zero_delay() -> None:
    """Kafka's prepareRebalance: an empty group's first rebalance never completes inside a JoinGroup, only when
    its delay timer fires, so two static members joining together land in one generation (issue 30)."""
    h = Harness()  # group.initial.rebalance.delay.ms=0
    first = h.join(instance="consumer1", run_timers=False)
    assert first == [], "the initial rebalance must wait for its timer, even at 0 ms"
    second = h.join(instance="consumer2", run_timers=False)
    h.scheduler.advance_ms(0)
    assert [r.generation_id for r in first + second] == [1, 1]
    assert len(first[0].members) == 2 and second[0].members == []


def test_a_later_rebalance_completes_as_soon_as_everyone_rejoined() -> None:
    """Only the initial rebalance waits for a timer; a rebalance of a non-empty group completes from the last join."""
    h = Harness()
    member, generation = h.stable_group_of_one()
    [rejoined] = h.join(member, run_timers=False)  # the leader rejoins: a new generation at once
    assert rejoined.generation_id == generation + 1


def test_initial_delay_extension_follows_kafka() -> None:
    """tryCompleteInitialRebalanceElseSchedule: each expiry that saw a new member extends by another delay, capped
    by what remains of the largest rebalance timeout (2000 ms here) minus the delays already waited."""
    h = Harness(initial_rebalance_delay_ms=800)
    first = h.join(require_known=False)             # t=0: remaining 1200
    h.scheduler.advance_ms(100)
    second = h.join(require_known=False)            # t=100: extends at t=800 by min(800, 1200) -> t=1600
    h.scheduler.advance_ms(1000)
    third = h.join(require_known=False)             # t=1100: extends at t=1600 by min(800, 400) -> t=2000
    h.scheduler.advance_ms(800)
    assert first == second == third == []          # t=1900
    h.scheduler.advance_ms(100)                     # t=2000: no time remains, completes
    assert [r.generation_id for r in first + second + third] == [1, 1, 1]


def test_static_member_rejoining_a_stable_group_is_persisted_without_a_rebalance() -> None:
    """KIP-345: a known instance id rejoining with an unknown member id in Stable takes over the old id's place;
    the new id is written to the log (a reload knows it) and the generation stays."""
    h = Harness()
    [joined] = h.join(instance="i1")
    h.sync(joined.member_id, joined.generation_id, {joined.member_id: b"X"})
    [rejoined] = h.join(instance="i1", session_ms=1500)
    assert (rejoined.error, rejoined.generation_id, rejoined.leader_id) == (
        ErrorCode.NONE, joined.generation_id, joined.member_id)  # the leader as it was before the replacement
    group = Harness(topic=h.topic).manager.get_group("g")
    assert group is not None and group.static_member_id("i1") == rejoined.member_id
    assert group.members[rejoined.member_id].session_timeout_ms == 1500


def test_static_member_rejoining_with_another_protocol_rebalances() -> None:
    h = Harness()
    [joined] = h.join(instance="i1")
    h.sync(joined.member_id, joined.generation_id, {joined.member_id: b"X"})
    [rejoined] = h.join(instance="i1", protocols=[("roundrobin", b""), *PROTOCOLS])
    assert rejoined.generation_id == joined.generation_id + 1 and rejoined.members


def test_static_member_rejoining_during_completing_rebalance_forces_a_rebalance() -> None:
    """The leader may already be assigning to the old id, so Kafka starts a new generation."""
    h = Harness()
    [joined] = h.join(instance="i1")
    assert h.manager.get_group("g").is_(GroupState.COMPLETING_REBALANCE)  # type: ignore[union-attr]
    [rejoined] = h.join(instance="i1")
    assert rejoined.generation_id == joined.generation_id + 1


def test_a_static_member_that_does_not_rejoin_stays_in_the_next_generation() -> None:
    """completeClassicGroupJoin removes only dynamic members that did not rejoin; a static one stays (KIP-345) until
    its session timeout, and the leader's member list still names it."""
    h = Harness()
    first = h.join(instance="consumer1", session_ms=10_000, run_timers=False)
    second = h.join(instance="consumer2", session_ms=10_000, run_timers=False)
    h.scheduler.advance_ms(0)
    leader = next(r for r in first + second if r.members)
    follower = next(r for r in first + second if not r.members)
    for result in (leader, follower):
        h.sync(result.member_id, result.generation_id, {leader.member_id: b"L", follower.member_id: b"F"})
    rejoined = h.join(leader.member_id, instance=leader_instance(h, leader.member_id), session_ms=10_000,
                      run_timers=False)
    assert rejoined == []  # waits for the follower, which does not come
    h.scheduler.advance_ms(2000)  # rebalance timeout
    group = h.manager.get_group("g")
    assert group is not None and follower.member_id in group.members
    assert [r.generation_id for r in rejoined] == [leader.generation_id + 1]
    assert {m[0] for m in rejoined[0].members} == {leader.member_id, follower.member_id}


def leader_instance(h: Harness, member_id: str) -> str | None:
    group = h.manager.get_group("g")
    assert group is not None
    return group.members[member_id].group_instance_id


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    """Kafka's schedulePendingSync/expirePendingSync: heartbeats alone do not keep a member that got the new
    generation but sends no SyncGroup; after the rebalance timeout it is removed and the group rebalances."""
    h = Harness()
    first = h.join(require_known=False, run_timers=False)
    second = h.join(require_known=False, run_timers=False)
    h.scheduler.advance_ms(0)
    leader = next(r for r in first + second if r.members)
    silent = next(r for r in first + second if not r.members)
    h.sync(leader.member_id, leader.generation_id, {leader.member_id: b"L", silent.member_id: b"S"})
    for _ in range(3):  # 1500 ms: both heartbeat, the silent one never syncs
        h.scheduler.advance_ms(500)
        for member in (leader, silent):
            assert h.coordinator.handle_heartbeat("g", member.member_id, None, leader.generation_id) is ErrorCode.NONE
    h.scheduler.advance_ms(500)  # the rebalance timeout (2000 ms) since the join completed
    group = h.manager.get_group("g")
    assert group is not None and silent.member_id not in group.members and leader.member_id in group.members
    assert group.is_(GroupState.PREPARING_REBALANCE)

"""Classic members inside KIP-848 consumer groups and the online upgrade/downgrade between the two group types
(ClassicProtocolMembers, GroupConversion), driven synchronously with a FakeClock and a ManualScheduler over an
in-memory `__consumer_offsets` of real record batches (the Harness of test_consumer_group_coordinator)."""

from __future__ import annotations

import struct
from typing import Any

from minikafka.broker.groups.consumer_protocol import (
    parse_assignment,
    parse_subscription,
    protocol_version,
    serialize_assignment,
)
from minikafka.broker.groups.group_metadata import GroupState
from minikafka.broker.groups.group_offsets import CommitRequest
from minikafka.broker.groups.join_sync_messages import JoinGroupRequestData, JoinGroupResult, SyncGroupResult
from minikafka.protocol.errors import ErrorCode
from tests.broker.groups.test_consumer_group_coordinator import SESSION_MS, Harness

REBALANCE_MS = 2000


def _string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


def subscription(topics: list[str], owned: dict[str, list[int]] | None = None, version: int = 1,
                 rack: str | None = None) -> bytes:
    """A ConsumerProtocolSubscription as the Java client writes it."""
    out = struct.pack(">hi", version, len(topics)) + b"".join(_string(topic) for topic in topics)
    out += struct.pack(">i", -1)  # no user data
    if version >= 1:
        owned = owned or {}
        out += struct.pack(">i", len(owned))
        for topic, partitions in owned.items():
            out += _string(topic) + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    if version >= 2:
        out += struct.pack(">i", -1)
    if version >= 3:
        out += struct.pack(">h", -1) if rack is None else _string(rack)
    return out


def join(h: Harness, member_id: str, owned: dict[str, list[int]] | None = None, group: str = "g",
         client_id: str = "classic") -> JoinGroupResult:
    out: list[JoinGroupResult] = []
    request = JoinGroupRequestData(session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                                   group_instance_id=None, protocol_type="consumer",
                                   protocols=[("range", subscription(["t"], owned)), ("roundrobin", b"\x00\x00")],
                                   client_id=client_id, client_host="/127.0.0.1", require_known_member_id=False)
    h.coordinator.handle_join_group(group, member_id, request, out.append)
    h.scheduler.advance_ms(0)  # the initial rebalance completes from its (0 ms) delay timer
    assert len(out) == 1, "the join should have completed"
    return out[0]


def sync(h: Harness, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
         group: str = "g") -> SyncGroupResult:
    out: list[SyncGroupResult] = []
    h.coordinator.handle_sync_group(group, generation, member_id, "consumer", "range", None, assignments or {},
                                    out.append)
    assert len(out) == 1
    return out[0]


def partitions_of(assignment: bytes) -> list[int]:
    parsed = parse_assignment(assignment)
    return sorted(index for _topic, indexes in parsed.partitions for index in indexes)


def classic_group_of_one(h: Harness, partitions: int = 6) -> str:
    """A Stable classic group "g" whose only member ("classic-...") owns every partition of "t"."""
    h.image.add("t", partitions)
    joined = join(h, "")
    assert (joined.error, joined.generation_id, joined.leader_id) == (ErrorCode.NONE, 1, joined.member_id)
    assignment = serialize_assignment({"t": range(partitions)}, 1)
    assert sync(h, joined.member_id, 1, {joined.member_id: assignment}).assignment == assignment
    return joined.member_id


def test_consumer_member_upgrades_a_classic_group_and_the_classic_member_catches_up() -> None:
    h = Harness()
    classic = classic_group_of_one(h)
    h.coordinator.offsets.handle_commit_offsets("g", classic, None, 1, {("t", 0): CommitRequest(4, -1, "")})
    c = h.hb("c", 0)
    assert c.error is ErrorCode.NONE and c.member_epoch == 2 and c.assignment == {}  # all still the classic's
    group = h.manager.consumer_groups["g"]
    member = group.members[classic]
    assert member.classic is not None and (member.member_epoch, member.classic.session_timeout_ms) == (1, SESSION_MS)
    assert member.classic.protocol_name == "range" and member.subscribed_topic_names == ("t",)
    shell = h.manager.groups["g"]
    assert shell.is_(GroupState.EMPTY) and not shell.members and shell.offsets[("t", 0)].offset == 4
    assert h.coordinator.admin.handle_list_groups()[1] == [("g", "consumer", "Reconciling", "consumer")]

    # the classic member learns of the new epoch by its heartbeat, rejoins (eager: owning nothing) and syncs
    assert h.coordinator.handle_heartbeat("g", classic, None, 1) is ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = join(h, classic)
    assert (rejoined.error, rejoined.generation_id, rejoined.protocol_type, rejoined.protocol_name,
            rejoined.leader_id, rejoined.members) == (ErrorCode.NONE, 2, "consumer", "range", "", [])
    assert h.coordinator.handle_heartbeat("g", classic, None, 1) is ErrorCode.ILLEGAL_GENERATION
    synced = sync(h, classic, 2)
    assert synced.error is ErrorCode.NONE and len(partitions_of(synced.assignment)) == 3
    assert h.coordinator.handle_heartbeat("g", classic, None, 2) is ErrorCode.NONE
    c = h.hb("c", 2, owned=[])
    assert sum(len(p) for p in (c.assignment or {}).values()) == 3
    assert group.state().value == "Stable"
    # offsets: a classic member commits with its generation
    commit = {("t", 1): CommitRequest(7, -1, "")}
    assert h.coordinator.offsets.handle_commit_offsets("g", classic, None, 2, commit) == {("t", 1): ErrorCode.NONE}
    assert h.coordinator.offsets.handle_commit_offsets("g", classic, None, 1, commit) == {
        ("t", 1): ErrorCode.ILLEGAL_GENERATION}


def test_a_mixed_group_reloads_from_the_log_with_its_classic_members() -> None:
    h = Harness()
    classic = classic_group_of_one(h)
    h.hb("c", 0)
    join(h, classic)
    before = h.manager.consumer_groups["g"]
    again = Harness(topic=h.topic, image=h.image, clock=h.clock)
    after = again.manager.consumer_groups["g"]
    assert after.members == before.members and after.target == before.target
    assert after.members[classic].classic == before.members[classic].classic is not None
    assert "g" not in again.manager.groups  # the classic group's metadata was tombstoned (and no offsets)
    # the reloaded classic member's session is its own (not the consumer group's)
    again.scheduler.advance_ms(SESSION_MS - 1)
    assert classic in after.members


def test_last_consumer_member_leaving_downgrades_to_a_classic_group_that_rebalances() -> None:
    h = Harness()
    classic = classic_group_of_one(h)
    h.hb("c", 0)
    join(h, classic)
    sync(h, classic, 2)
    epoch = h.manager.consumer_groups["g"].group_epoch
    h.hb("c", 2, owned=[])
    left = h.hb("c", -1)
    assert left.error is ErrorCode.NONE
    assert "g" not in h.manager.consumer_groups
    group = h.manager.groups["g"]
    assert group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == epoch
    assert list(group.members) == [classic] and group.protocol_name == "range"
    assert len(partitions_of(group.members[classic].assignment)) == 3  # its target assignment
    assert h.coordinator.admin.handle_list_groups()[1] == [("g", "consumer", "PreparingRebalance", "classic")]
    # the classic member rejoins the classic group: it leads and assigns everything to itself
    assert h.coordinator.handle_heartbeat("g", classic, None, epoch) is ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = join(h, classic)
    assert (rejoined.generation_id, rejoined.leader_id) == (epoch + 1, classic)
    everything = serialize_assignment({"t": range(6)}, 1)
    assert sync(h, classic, epoch + 1, {classic: everything}).assignment == everything
    assert group.is_(GroupState.STABLE)
    # the log says the same after a restart
    again = Harness(topic=h.topic, image=h.image, clock=h.clock)
    assert "g" not in again.manager.consumer_groups
    assert list(again.manager.groups["g"].members) == [classic]


def test_migration_policies() -> None:
    h = Harness(migration_policy="downgrade")
    classic_group_of_one(h)
    refused = h.hb("c", 0)
    assert (refused.error, refused.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to "
                                                "consumer group because online upgrade is disabled.")
    h = Harness(migration_policy="upgrade")
    classic = classic_group_of_one(h)
    h.hb("c", 0)
    assert h.hb("c", -1).error is ErrorCode.NONE
    group = h.manager.consumer_groups["g"]  # no downgrade: a consumer group of one classic member
    assert list(group.members) == [classic] and "g" in h.manager.consumer_groups


def test_classic_member_joins_a_consumer_group_with_member_id_required() -> None:
    h = Harness()
    h.image.add("t", 4)
    h.hb("c", 0)
    out: list[JoinGroupResult] = []
    request = JoinGroupRequestData(session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                                   group_instance_id=None, protocol_type="consumer",
                                   protocols=[("range", subscription(["t"], version=3, rack="r1"))],
                                   client_id="k", client_host="/127.0.0.1", require_known_member_id=True)
    h.coordinator.handle_join_group("g", "", request, out.append)
    assert out[0].error is ErrorCode.MEMBER_ID_REQUIRED and len(out[0].member_id) == 22  # a Kafka Uuid
    h.coordinator.handle_join_group("g", out[0].member_id, request, out.append)
    assert out[1].error is ErrorCode.NONE and out[1].generation_id == 3
    member = h.manager.consumer_groups["g"].members[out[1].member_id]
    assert member.rack_id == "r1" and member.client_id == "k"
    # a member that does not use the classic protocol cannot use its APIs
    assert h.coordinator.handle_heartbeat("g", "c", None, 2) is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.handle_leave_group("g", [("c", None)]) == (ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID])
    assert h.coordinator.handle_leave_group("g", [(out[1].member_id, None)]) == (ErrorCode.NONE, [ErrorCode.NONE])
    assert out[1].member_id not in h.manager.consumer_groups["g"].members


def _tick(h: Harness, ms: int, classic: dict[str, int]) -> None:
    """Let `ms` pass in steps shorter than a session, every member heartbeating (classic ones with the given
    generation), so that only the join and sync timeouts can fence anyone."""
    for _ in range(ms // 250 + 1):
        h.scheduler.advance_ms(250)
        group = h.manager.consumer_groups["g"]
        for member_id, member in list(group.members.items()):
            if member.classic is None:
                h.hb(member_id, member.member_epoch, owned=None)
            elif member_id in classic:
                h.coordinator.handle_heartbeat("g", member_id, None, classic[member_id])


def test_classic_member_that_does_not_sync_or_rejoin_in_time_is_fenced() -> None:
    h = Harness()
    h.image.add("t", 2)
    h.hb("c", 0)
    joined = join(h, "k1")
    _tick(h, REBALANCE_MS - 500, {"k1": joined.generation_id})
    assert "k1" in h.manager.consumer_groups["g"].members
    _tick(h, 600, {"k1": joined.generation_id})  # it never sent SyncGroup
    assert "k1" not in h.manager.consumer_groups["g"].members
    joined = join(h, "k2")
    assert sync(h, "k2", joined.generation_id).error is ErrorCode.NONE
    h.hb("d", 0)  # a new member: k2 is told to rejoin by its next heartbeat
    assert h.coordinator.handle_heartbeat("g", "k2", None, joined.generation_id) is ErrorCode.REBALANCE_IN_PROGRESS
    _tick(h, REBALANCE_MS + 100, {"k2": joined.generation_id})
    assert "k2" not in h.manager.consumer_groups["g"].members  # it never rejoined
    assert set(h.manager.consumer_groups["g"].members) == {"c", "d"}


def test_an_assignment_with_user_data_is_not_upgraded() -> None:
    h = Harness()
    h.image.add("t", 2)
    joined = join(h, "")
    custom = serialize_assignment({"t": [0, 1]}, 1)[:-4] + struct.pack(">i", 3) + b"abc"
    sync(h, joined.member_id, 1, {joined.member_id: custom})
    refused = h.hb("c", 0)
    assert refused.error is ErrorCode.GROUP_ID_NOT_FOUND and "unsupported custom assignor" in (refused.message or "")


def test_consumer_protocol_codecs() -> None:
    for version in range(4):
        parsed = parse_subscription(subscription(["a", "b"], {"a": [1, 0]}, version=version, rack="r"))
        assert parsed.version == version and parsed.topics == ("a", "b")
        assert parsed.owned_partitions == ((("a", (1, 0)),) if version >= 1 else ())
        assert parsed.rack_id == ("r" if version >= 3 else None)
    assignment = serialize_assignment({"b": [2], "a": [1, 0]}, 7)
    assert protocol_version(assignment) == 3
    parsed_assignment: Any = parse_assignment(assignment)
    assert parsed_assignment.partitions == (("a", (0, 1)), ("b", (2,))) and parsed_assignment.user_data is None
    assert parse_assignment(b"").partitions == ()

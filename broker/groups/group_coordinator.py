"""`GroupCoordinator`: Kafka's classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) and
the group-scoped offset and admin operations — the public entry point the handlers and the server use.

Modelled on Apache Kafka's GroupCoordinator: the same state machine, checks in the same order and the
same error codes. JoinGroup and SyncGroup answer through a callback, possibly later (delayed joins). This
module handles the requests; session and rebalance timers and the completion of a rebalance are the
`GroupRebalancer`'s, offsets the `GroupOffsets`', ListGroups/DescribeGroups/DeleteGroups the
`GroupAdmin`'s, persistence the `GroupMetadataManager`'s. A classic request to a KIP-848 consumer group
goes to the consumer coordinator's `ClassicProtocolMembers` (Kafka 4's mixed groups).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.consumer_group_config import ConsumerGroupConfig
from minikafka.broker.groups.consumer_group_coordinator import ConsumerGroupCoordinator
from minikafka.broker.groups.group_admin import GroupAdmin
from minikafka.broker.groups.group_metadata import GroupMetadata, GroupState, MemberMetadata
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.group_offsets import GroupOffsets
from minikafka.broker.groups.group_rebalancer import GroupRebalancer
from minikafka.broker.groups.group_status import CoordinatorStatus
from minikafka.broker.groups.join_sync_messages import (
    JoinCallback,
    JoinGroupRequestData,
    JoinGroupResult,
    SyncCallback,
    SyncGroupResult,
)
from minikafka.broker.groups.offsets_topic import ReplicaOffsetsTopic
from minikafka.broker.groups.scheduler import Cancellable, LoopScheduler, Scheduler
from minikafka.broker.groups.topic_image import ReplicaTopicImage, StaticTopicImage, TopicImage
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock

if TYPE_CHECKING:
    from minikafka.broker.admin_manager import AdminManager
    from minikafka.broker.replica_manager import ReplicaManager

__all__ = ["GroupCoordinator", "JoinGroupRequestData", "JoinGroupResult", "SyncGroupResult"]

#: How long a new member may take to rejoin after MEMBER_ID_REQUIRED-less joins (Kafka's constant).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class GroupCoordinator:
    """The single node's coordinator for every group.

    Owns the request-side checks and membership changes of the classic protocol and the offsets-retention
    timer; builds, once, each helper from the parts it uses (none holds the coordinator): `CoordinatorStatus`,
    `GroupRebalancer` (timers), `ConsumerGroupCoordinator` (KIP-848), `GroupOffsets` (offset APIs) and
    `GroupAdmin` (List/Describe/DeleteGroups). Groups themselves live in the `GroupMetadataManager`.
    Event-loop thread only; not thread-safe.
    """

    def __init__(
        self,
        config: GroupConfig,
        manager: GroupMetadataManager,
        scheduler: Scheduler,
        clock: Clock,
        consumer_config: ConsumerGroupConfig | None = None,
        topics: TopicImage | None = None,
        group_configs: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        """`consumer_config`, `topics` and `group_configs` are the KIP-848 side's `group.consumer.*` settings, the
        cluster's topics and the GROUP config resources (`for_broker` gives the broker's; defaults for tests)."""
        self.config = config
        self.manager = manager
        self.scheduler = scheduler
        self.clock = clock
        self.status = CoordinatorStatus(manager)
        self._retention_timer: Cancellable | None = None
        self.rebalancer = GroupRebalancer(config, manager, scheduler, clock)
        self.consumer = ConsumerGroupCoordinator(
            consumer_config or ConsumerGroupConfig(), topics or StaticTopicImage(), manager, self.status, scheduler,
            clock, config, self.rebalancer, group_configs)
        self.offsets = GroupOffsets(config, manager, self.status, clock, self.rebalancer, self.consumer)
        self.admin = GroupAdmin(manager, self.status, self.consumer)

    @classmethod
    def for_broker(
        cls, props: Mapping[str, str], replica_manager: ReplicaManager, admin: AdminManager, clock: Clock
    ) -> GroupCoordinator:
        """The broker's coordinator: `__consumer_offsets` in its own logs, timers on the running loop."""
        config = GroupConfig.from_props(props)
        manager = GroupMetadataManager(config, ReplicaOffsetsTopic(replica_manager, admin), clock)
        return cls(config, manager, LoopScheduler(), clock, ConsumerGroupConfig.from_props(props),
                   ReplicaTopicImage(replica_manager), admin.group_configs.effective)

    # -- lifecycle ---------------------------------------------------------------------------------------
    async def startup(self) -> None:
        """Rebuild every group from `__consumer_offsets`. The broker already listens: until this returns,
        group requests are answered COORDINATOR_LOAD_IN_PROGRESS (retriable), as Kafka does."""
        self.active = True
        await self.manager.load_all()
        for group in self.manager.groups.values():
            for member in group.members.values():
                self.rebalancer.schedule_heartbeat(group, member)
        self.consumer.on_loaded()
        self._schedule_retention()

    def _schedule_retention(self) -> None:
        def run() -> None:
            if not self.active:
                return
            try:
                self.manager.cleanup_expired_offsets()
            finally:
                self._schedule_retention()

        self._retention_timer = self.scheduler.call_later(self.config.offsets_retention_check_interval_ms, run)

    def shutdown(self) -> None:
        self.active = False
        if self._retention_timer is not None:
            self._retention_timer.cancel()
        self.rebalancer.cancel_all()
        self.consumer.cancel_all()
        for group in self.manager.groups.values():
            for member in group.members.values():
                if member.join_callback is not None:
                    join_callback, member.join_callback = member.join_callback, None
                    join_callback(JoinGroupResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                if member.sync_callback is not None:
                    sync_callback, member.sync_callback = member.sync_callback, None
                    sync_callback(SyncGroupResult(ErrorCode.NOT_COORDINATOR))

    def _now_ms(self) -> int:
        return self.clock.time_ms()

    @property
    def active(self) -> bool:
        return self.status.active

    @active.setter
    def active(self, value: bool) -> None:
        self.status.active = value

    def validate_group_status(self, group_id: str | None, allow_empty_id: bool = False) -> ErrorCode:
        return self.status.validate(group_id, allow_empty_id)

    # -- JoinGroup ---------------------------------------------------------------------------------------
    def handle_join_group(
        self, group_id: str, member_id: str, request: JoinGroupRequestData, callback: JoinCallback
    ) -> None:
        error = self.validate_group_status(group_id)
        if error is not ErrorCode.NONE:
            callback(JoinGroupResult(error, member_id))
            return
        session_timeout_ms = request.session_timeout_ms
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            callback(JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return
        is_unknown_member = member_id == ""
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:  # a classic member joins a consumer group (Kafka 4's mixed groups)
                self.consumer.classic.join(consumer_group, member_id, request, callback)
                return
            # an empty consumer group becomes a classic group, whatever the migration policy (as Kafka does)
            error = self.consumer.delete(consumer_group)
            if error is not ErrorCode.NONE:
                callback(JoinGroupResult(error, member_id))
                return
        group = self.manager.get_group(group_id)
        if group is None:
            if not is_unknown_member:
                callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            group = self.manager.add_group(GroupMetadata(group_id, state_timestamp_ms=self._now_ms()))
        if self._accepts_new_member(group, member_id) is False:
            callback(JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id))
            return
        if group.is_(GroupState.DEAD):
            callback(JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
        elif not group.supports_protocols(request.protocol_type, request.protocols):
            callback(JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        elif is_unknown_member:
            self._join_new_member(group, request, callback)
        else:
            self._join_current_member(group, member_id, request, callback)

    def _accepts_new_member(self, group: GroupMetadata, member_id: str) -> bool:
        if group.has(member_id) or member_id in group.pending_members:
            return True
        return len(group.members) + len(group.pending_members) < self.config.max_size

    def _join_new_member(self, group: GroupMetadata, request: JoinGroupRequestData, callback: JoinCallback) -> None:
        new_member_id = f"{request.client_id}-{uuid.uuid4()}"
        if request.group_instance_id is not None:
            old_member_id = group.static_member_id(request.group_instance_id)
            if old_member_id is not None and group.has(old_member_id):
                self._replace_static_member(group, request, old_member_id, new_member_id, callback)
                return
        elif request.require_known_member_id:
            group.pending_members.add(new_member_id)
            self.rebalancer.schedule_pending_expiry(group, new_member_id, request.session_timeout_ms)
            callback(JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
            return
        self._add_member_and_rebalance(group, request.new_member(new_member_id), callback)

    def _replace_static_member(
        self,
        group: GroupMetadata,
        request: JoinGroupRequestData,
        old_member_id: str,
        new_member_id: str,
        callback: JoinCallback,
    ) -> None:
        """A known static member rejoined without its member id (KIP-345; Kafka's
        `updateStaticMemberThenRebalanceOrCompleteJoin`): fence the old id and take over its place. In Stable,
        when the group's protocol for the next generation stays the same, the new id is persisted and the member
        keeps its assignment without a rebalance; in CompletingRebalance a rebalance is forced (the leader may
        already be assigning to the old id); in PreparingRebalance it joins the running one."""
        assert request.group_instance_id is not None
        old = group.members[old_member_id]
        if old.join_callback is not None:
            old.join_callback(JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
            old.join_callback = None
        if old.sync_callback is not None:
            old.sync_callback(SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
            old.sync_callback = None
        self.rebalancer.cancel_heartbeat(group.group_id, old_member_id)
        current_leader = group.leader_id
        member = group.replace_static_member(request.group_instance_id, old_member_id, new_member_id)
        self.rebalancer.schedule_heartbeat(group, member)
        previous = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        if group.is_(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                assignments = {mid: m.assignment for mid, m in group.members.items()}
                error = self.manager.store_group(group, assignments)
                if error is not ErrorCode.NONE:
                    # Kafka reverts the replacement when the new id could not be persisted
                    member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = previous
                    self.rebalancer.cancel_heartbeat(group.group_id, new_member_id)
                    restored = group.replace_static_member(request.group_instance_id, new_member_id, old_member_id)
                    self.rebalancer.schedule_heartbeat(group, restored)
                    callback(JoinGroupResult(error, "", group.generation_id, group.protocol_type,
                                             group.protocol_name, current_leader or ""))
                    return
                callback(JoinGroupResult(ErrorCode.NONE, new_member_id, group.generation_id, group.protocol_type,
                                         group.protocol_name, current_leader or ""))
                return
            member.join_callback = callback
            self.rebalancer.rebalance(group)
            return
        member.join_callback = callback
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self.rebalancer.maybe_prepare_rebalance(group)
        else:
            self.rebalancer.try_complete_join(group)

    def _join_current_member(
        self, group: GroupMetadata, member_id: str, request: JoinGroupRequestData, callback: JoinCallback
    ) -> None:
        if member_id in group.pending_members:
            self._add_member_and_rebalance(group, request.new_member(member_id), callback)
            return
        if group.is_static_member_fenced(member_id, request.group_instance_id):
            callback(JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        if not group.has(member_id):
            callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        member = group.members[member_id]
        if group.is_(GroupState.PREPARING_REBALANCE):
            rejoin_unchanged = False
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            rejoin_unchanged = member.matches(request.protocols)
        elif group.is_(GroupState.STABLE):
            rejoin_unchanged = not group.is_leader(member_id) and member.matches(request.protocols)
        else:
            callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        if rejoin_unchanged:
            callback(JoinGroupResult.for_member(group, member))
        else:
            self._update_member_and_rebalance(group, member, request, callback)

    def _add_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata, callback: JoinCallback) -> None:
        member.is_new = True
        member.join_callback = callback
        # a member joining during the initial delay extends it (Kafka's newMemberAdded)
        if group.is_(GroupState.PREPARING_REBALANCE) and self.rebalancer.in_initial_delay(group):
            group.new_member_added = True
        group.add(member)
        self.rebalancer.schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.rebalancer.rebalance(group)

    def _update_member_and_rebalance(
        self, group: GroupMetadata, member: MemberMetadata, request: JoinGroupRequestData, callback: JoinCallback
    ) -> None:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        member.protocols = request.protocols
        member.join_callback = callback
        self.rebalancer.rebalance(group)

    # -- SyncGroup ---------------------------------------------------------------------------------------
    def handle_sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
        callback: SyncCallback,
    ) -> None:
        error = self.validate_group_status(group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.REBALANCE_IN_PROGRESS  # Kafka: the member rejoins once loading is done
        if error is not ErrorCode.NONE:
            callback(SyncGroupResult(error))
            return
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            if not consumer_group.members:
                callback(SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
                return
            self.consumer.classic.sync(consumer_group, generation_id, member_id, protocol_type, protocol_name,
                                       group_instance_id, callback)
            return
        group = self.manager.get_group(group_id)
        if group is None:
            callback(SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = group.member_error(member_id, group_instance_id, generation_id)
        if error is not ErrorCode.NONE:
            callback(SyncGroupResult(error))
        elif (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            callback(SyncGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        elif group.is_(GroupState.EMPTY):
            callback(SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.is_(GroupState.PREPARING_REBALANCE):
            callback(SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            member = group.members[member_id]
            member.sync_callback = callback
            self.rebalancer.sync_received(group, member_id)
            self.rebalancer.schedule_heartbeat(group, member)
            if group.is_leader(member_id):
                self._store_assignment(group, generation_id, assignments)
        else:  # Stable
            member = group.members[member_id]
            self.rebalancer.sync_received(group, member_id)
            self.rebalancer.schedule_heartbeat(group, member)
            callback(SyncGroupResult.for_member(group, member))

    def _store_assignment(self, group: GroupMetadata, generation_id: int, assignments: Mapping[str, bytes]) -> None:
        """The leader's SyncGroup: persist the assignment, then answer every member waiting in SyncGroup."""
        full = {mid: assignments.get(mid, b"") for mid in group.members}
        store_error = self.manager.store_group(group, full)
        if not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation_id != generation_id:
            return
        if store_error is not ErrorCode.NONE:
            self.rebalancer.propagate_assignment_error(group, store_error)
            self.rebalancer.maybe_prepare_rebalance(group)
            return
        for mid, member_state in group.members.items():
            member_state.assignment = full[mid]
        group.transition_to(GroupState.STABLE, self._now_ms())
        for member_state in group.members.values():
            if member_state.sync_callback is not None:
                sync_callback, member_state.sync_callback = member_state.sync_callback, None
                sync_callback(SyncGroupResult.for_member(group, member_state))
                self.rebalancer.schedule_heartbeat(group, member_state)

    # -- Heartbeat ---------------------------------------------------------------------------------------
    def handle_heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        error = self.validate_group_status(group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # Kafka: the group is not yet known; let the member keep going
        if error is not ErrorCode.NONE:
            return error
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.classic.heartbeat(consumer_group, member_id, group_instance_id, generation_id)
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.member_error(member_id, group_instance_id, generation_id)
        if error is not ErrorCode.NONE:
            return error
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.rebalancer.schedule_heartbeat(group, group.members[member_id])
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup --------------------------------------------------------------------------------------
    def handle_leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        error = self.validate_group_status(group_id)
        if error is not ErrorCode.NONE:
            return error, []
        consumer_group = self.manager.consumer_groups.get(group_id)
        if consumer_group is not None:
            return ErrorCode.NONE, self.consumer.classic.leave(consumer_group, members)
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        return ErrorCode.NONE, [self._leave(group, member_id, instance_id) for member_id, instance_id in members]

    def _leave(self, group: GroupMetadata, member_id: str, instance_id: str | None) -> ErrorCode:
        if instance_id is not None:
            current = group.static_member_id(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and member_id != current:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = current
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.rebalancer.cancel_heartbeat(group.group_id, member_id)
            self.rebalancer.try_complete_join(group)
        elif not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        else:
            self.rebalancer.remove_member_and_update_group(group, group.members[member_id])
        return ErrorCode.NONE

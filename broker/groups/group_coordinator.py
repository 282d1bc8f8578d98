"""`GroupCoordinator`: Kafka's classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) and
the group-scoped offset and admin operations.

Modelled on Apache Kafka's GroupCoordinator: the same state machine, checks in the same order and the
same error codes. JoinGroup and SyncGroup answer through a callback, possibly later (delayed joins);
session and rebalance timeouts are `Scheduler` timers. Persistence is the `GroupMetadataManager`'s.
Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.groups.config import GroupConfig
from broker.groups.group_metadata import GroupMetadata, GroupState, MemberMetadata
from broker.groups.group_metadata_manager import GroupMetadataManager
from broker.groups.group_offsets import GroupOffsets
from broker.groups.offsets_topic import ReplicaOffsetsTopic
from broker.groups.scheduler import Cancellable, LoopScheduler, Scheduler
from protocol.errors import ErrorCode
from storage.clock import Clock

if TYPE_CHECKING:
    from broker.admin_manager import AdminManager
    from broker.replica_manager import ReplicaManager

#: How long a new member may take to rejoin after MEMBER_ID_REQUIRED-less joins (Kafka's constant).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
TopicPartition = tuple[str, int]


@dataclass
class JoinGroupResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    #: (member_id, group_instance_id, metadata) — only the leader gets them.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncGroupResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


class GroupCoordinator:
    """The single node's coordinator for every group."""

    def __init__(self, config: GroupConfig, manager: GroupMetadataManager, scheduler: Scheduler, clock: Clock) -> None:
        self.config = config
        self.manager = manager
        self.scheduler = scheduler
        self.clock = clock
        self.active = False
        self._heartbeat_timers: dict[tuple[str, str], Cancellable] = {}
        self._join_timers: dict[str, Cancellable] = {}
        self._in_initial_delay: set[str] = set()
        self._retention_timer: Cancellable | None = None
        self.offsets = GroupOffsets(self)

    @classmethod
    def for_broker(
        cls, props: Mapping[str, str], replica_manager: ReplicaManager, admin: AdminManager, clock: Clock
    ) -> GroupCoordinator:
        """The broker's coordinator: `__consumer_offsets` in its own logs, timers on the running loop."""
        config = GroupConfig.from_props(props)
        manager = GroupMetadataManager(config, ReplicaOffsetsTopic(replica_manager, admin), clock)
        return cls(config, manager, LoopScheduler(), clock)

    # -- lifecycle ---------------------------------------------------------------------------------------
    async def startup(self) -> None:
        self.active = True
        await self.manager.load_all()
        for group in self.manager.groups.values():
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
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
        for timer in [*self._heartbeat_timers.values(), *self._join_timers.values()]:
            timer.cancel()
        self._heartbeat_timers.clear()
        self._join_timers.clear()
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

    def validate_group_status(self, group_id: str | None, allow_empty_id: bool = False) -> ErrorCode:
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.manager.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    # -- JoinGroup ---------------------------------------------------------------------------------------
    def handle_join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        error = self.validate_group_status(group_id)
        if error is not ErrorCode.NONE:
            callback(JoinGroupResult(error, member_id))
            return
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            callback(JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return
        is_unknown_member = member_id == ""
        group = self.manager.get_group(group_id)
        if group is None:
            if not is_unknown_member:
                callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            group = self.manager.add_group(GroupMetadata(group_id, state_timestamp_ms=self._now_ms()))
        if self._accepts_new_member(group, member_id) is False:
            callback(JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id))
            return
        if is_unknown_member:
            self._join_new_member(
                group,
                group_instance_id,
                require_known_member_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                callback,
            )
        else:
            self._join_current_member(
                group,
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                callback,
            )

    def _accepts_new_member(self, group: GroupMetadata, member_id: str) -> bool:
        if group.has(member_id) or member_id in group.pending_members:
            return True
        return len(group.members) + len(group.pending_members) < self.config.max_size

    def _join_new_member(
        self,
        group: GroupMetadata,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        if group.is_(GroupState.DEAD):
            callback(JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, protocols):
            callback(JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = f"{client_id}-{uuid.uuid4()}"
        if group_instance_id is not None:
            old_member_id = group.static_member_id(group_instance_id)
            if old_member_id is not None and group.has(old_member_id):
                self._replace_static_member(group, group_instance_id, old_member_id, new_member_id, protocols, callback)
                return
        elif require_known_member_id:
            group.pending_members.add(new_member_id)
            self._schedule_pending_expiry(group, new_member_id, session_timeout_ms)
            callback(JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
            return
        member = MemberMetadata(
            new_member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            protocol_type,
            protocols,
        )
        self._add_member_and_rebalance(group, member, callback)

    def _replace_static_member(
        self,
        group: GroupMetadata,
        instance_id: str,
        old_member_id: str,
        new_member_id: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        """A known static member rejoined without its member id: fence the old id, keep the assignment."""
        old = group.members[old_member_id]
        if old.join_callback is not None:
            old.join_callback(JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
            old.join_callback = None
        if old.sync_callback is not None:
            old.sync_callback(SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
            old.sync_callback = None
        self._cancel_heartbeat(group.group_id, old_member_id)
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._schedule_heartbeat(group, member)
        if group.is_(GroupState.STABLE) and member.matches(protocols):
            callback(
                JoinGroupResult(
                    ErrorCode.NONE,
                    new_member_id,
                    group.generation_id,
                    group.protocol_type,
                    group.protocol_name,
                    group.leader_id or "",
                    [],
                )
            )
            return
        member.protocols = protocols
        member.join_callback = callback
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    def _join_current_member(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        if group.is_(GroupState.DEAD):
            callback(JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(protocol_type, protocols):
            callback(JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            member = MemberMetadata(
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
            )
            self._add_member_and_rebalance(group, member, callback)
            return
        if group.is_static_member_fenced(member_id, group_instance_id):
            callback(JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        if not group.has(member_id):
            callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        member = group.members[member_id]
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(
                group, member, rebalance_timeout_ms, session_timeout_ms, protocols, callback
            )
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            if member.matches(protocols):
                callback(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(
                    group, member, rebalance_timeout_ms, session_timeout_ms, protocols, callback
                )
        elif group.is_(GroupState.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(
                    group, member, rebalance_timeout_ms, session_timeout_ms, protocols, callback
                )
            else:
                callback(self._join_result(group, member))
        else:
            callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(self, group: GroupMetadata, member: MemberMetadata) -> JoinGroupResult:
        members: list[tuple[str, str | None, bytes]] = []
        if group.is_leader(member.member_id) and group.protocol_name is not None:
            members = [
                (other.member_id, other.group_instance_id, other.metadata(group.protocol_name))
                for other in group.members.values()
            ]
        return JoinGroupResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members,
        )

    def _add_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata, callback: JoinCallback) -> None:
        member.is_new = True
        member.join_callback = callback
        group.add(member)
        group.new_member_added = True
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
    ) -> None:
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.protocols = protocols
        member.join_callback = callback
        self._maybe_prepare_rebalance(group)
        self._try_complete_join(group)

    # -- rebalance ---------------------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        was_empty = group.is_(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self._now_ms())
        group.rebalance_epoch += 1
        epoch = group.rebalance_epoch
        rebalance_timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        timer = self._join_timers.pop(group.group_id, None)
        if timer is not None:
            timer.cancel()
        if was_empty and self.config.initial_rebalance_delay_ms > 0:
            delay_ms = self.config.initial_rebalance_delay_ms
            remaining_ms = max(rebalance_timeout_ms - delay_ms, 0)
            group.new_member_added = False
            self._in_initial_delay.add(group.group_id)
            self._join_timers[group.group_id] = self.scheduler.call_later(
                delay_ms, lambda: self._on_initial_delay_expired(group, epoch, delay_ms, remaining_ms)
            )
        else:
            self._in_initial_delay.discard(group.group_id)
            self._join_timers[group.group_id] = self.scheduler.call_later(
                rebalance_timeout_ms, lambda: self._on_join_expired(group, epoch)
            )

    def _on_initial_delay_expired(self, group: GroupMetadata, epoch: int, delay_ms: int, remaining_ms: int) -> None:
        if group.rebalance_epoch != epoch or not group.is_(GroupState.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            next_delay_ms = min(delay_ms, remaining_ms)
            self._join_timers[group.group_id] = self.scheduler.call_later(
                next_delay_ms,
                lambda: self._on_initial_delay_expired(group, epoch, delay_ms, remaining_ms - next_delay_ms),
            )
            return
        self._complete_join(group)

    def _on_join_expired(self, group: GroupMetadata, epoch: int) -> None:
        if group.rebalance_epoch == epoch and group.is_(GroupState.PREPARING_REBALANCE):
            self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        """Complete the delayed join early once every member rejoined (never during the initial delay)."""
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.group_id not in self._in_initial_delay
            and group.all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        self._in_initial_delay.discard(group.group_id)
        timer = self._join_timers.pop(group.group_id, None)
        if timer is not None:
            timer.cancel()
        for member in group.not_yet_rejoined():
            self._cancel_heartbeat(group.group_id, member.member_id)
            group.remove(member.member_id)
        if group.is_(GroupState.DEAD):
            return
        group.init_next_generation(self._now_ms())
        if group.is_(GroupState.EMPTY):
            self.manager.store_group(group, {})
            return
        for member in list(group.members.values()):
            callback = member.join_callback
            member.join_callback = None
            member.is_new = False
            if callback is not None:
                callback(self._join_result(group, member))
            self._schedule_heartbeat(group, member)

    def _propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            if member.sync_callback is not None:
                callback, member.sync_callback = member.sync_callback, None
                callback(SyncGroupResult(error))
                self._schedule_heartbeat(group, member)

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
        group = self.manager.get_group(group_id)
        if group is None:
            callback(SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        if group.is_(GroupState.DEAD):
            callback(SyncGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        elif group.is_static_member_fenced(member_id, group_instance_id):
            callback(SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
        elif not group.has(member_id):
            callback(SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif generation_id != group.generation_id:
            callback(SyncGroupResult(ErrorCode.ILLEGAL_GENERATION))
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
            self._schedule_heartbeat(group, member)
            if group.is_leader(member_id):
                full = {mid: assignments.get(mid, b"") for mid in group.members}
                store_error = self.manager.store_group(group, full)
                if not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation_id != generation_id:
                    return
                if store_error is not ErrorCode.NONE:
                    self._propagate_assignment_error(group, store_error)
                    self._maybe_prepare_rebalance(group)
                    return
                for mid, member_state in group.members.items():
                    member_state.assignment = full[mid]
                group.transition_to(GroupState.STABLE, self._now_ms())
                for member_state in group.members.values():
                    if member_state.sync_callback is not None:
                        sync_callback, member_state.sync_callback = member_state.sync_callback, None
                        sync_callback(self._sync_result(group, member_state))
                        self._schedule_heartbeat(group, member_state)
        else:  # Stable
            member = group.members[member_id]
            self._schedule_heartbeat(group, member)
            callback(self._sync_result(group, member))

    @staticmethod
    def _sync_result(group: GroupMetadata, member: MemberMetadata) -> SyncGroupResult:
        return SyncGroupResult(ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name)

    # -- Heartbeat ---------------------------------------------------------------------------------------
    def handle_heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        error = self.validate_group_status(group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # Kafka: the group is not yet known; let the member keep going
        if error is not ErrorCode.NONE:
            return error
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.members[member_id])
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
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in members:
            if instance_id is not None:
                current = group.static_member_id(instance_id)
                if current is None:
                    results.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != current:
                    results.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = current
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._cancel_heartbeat(group_id, member_id)
                self._try_complete_join(group)
                results.append(ErrorCode.NONE)
            elif not group.has(member_id):
                results.append(ErrorCode.UNKNOWN_MEMBER_ID)
            else:
                self._remove_member_and_update_group(group, group.members[member_id])
                results.append(ErrorCode.NONE)
        return ErrorCode.NONE, results

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        group.remove(member.member_id)
        self._cancel_heartbeat(group.group_id, member.member_id)
        if group.is_(GroupState.STABLE) or group.is_(GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- session timeouts --------------------------------------------------------------------------------
    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        key = (group.group_id, member.member_id)
        previous = self._heartbeat_timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        delay_ms = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_deadline_ms = self.clock.monotonic_ms() + delay_ms
        self._heartbeat_timers[key] = self.scheduler.call_later(
            delay_ms, lambda: self._on_heartbeat_expired(group, member)
        )

    def _cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        timer = self._heartbeat_timers.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def _on_heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if group.members.get(member.member_id) is not member:
            return
        self._heartbeat_timers.pop((group.group_id, member.member_id), None)
        if member.is_awaiting_join and not member.is_new:
            # Kafka keeps a member alive while it waits in a rebalance; the rebalance timeout governs it.
            self._schedule_heartbeat(group, member)
            return
        if member.is_awaiting_sync:
            self._schedule_heartbeat(group, member)
            return
        self._remove_member_and_update_group(group, member)

    def _schedule_pending_expiry(self, group: GroupMetadata, member_id: str, session_timeout_ms: int) -> None:
        def expire() -> None:
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._try_complete_join(group)

        key = (group.group_id, member_id)
        self._heartbeat_timers[key] = self.scheduler.call_later(session_timeout_ms, expire)

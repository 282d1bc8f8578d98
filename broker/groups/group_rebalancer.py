"""`GroupRebalancer`: the timer-driven half of the group coordinator — session timeouts, the delayed
join (with `group.initial.rebalance.delay.ms`), the completion of a rebalance and the pending-sync expiry.

Modelled on Apache Kafka 4.3's GroupMetadataManager (prepareRebalance, tryCompleteInitialRebalanceElseSchedule,
completeClassicGroupJoin, expirePendingSync, heartbeat expiry). The
`GroupCoordinator` calls in when a request changes membership; `Scheduler` timers call in when a session
or a rebalance times out.
"""

from __future__ import annotations

from collections.abc import Callable

from minikafka.broker.groups.config import GroupConfig
from minikafka.broker.groups.group_metadata import GroupMetadata, GroupState, MemberMetadata
from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
from minikafka.broker.groups.join_sync_messages import JoinGroupResult, SyncGroupResult
from minikafka.broker.groups.scheduler import Cancellable, Scheduler
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock


class GroupRebalancer:
    """Owns every member's session timer and every group's delayed-join and pending-sync timers.

    Built from the group config (`group.initial.rebalance.delay.ms`), the group store (an Empty group's new
    generation is stored), the scheduler and the clock. Event-loop thread only; not thread-safe.
    """

    def __init__(self, config: GroupConfig, store: GroupMetadataManager, scheduler: Scheduler, clock: Clock) -> None:
        self.config = config
        self.store = store
        self.scheduler = scheduler
        self.clock = clock
        self._heartbeat_timers: dict[tuple[str, str], Cancellable] = {}
        self._join_timers: dict[str, Cancellable] = {}
        self._sync_timers: dict[str, Cancellable] = {}
        self._in_initial_delay: set[str] = set()

    def cancel_all(self) -> None:
        for timer in [*self._heartbeat_timers.values(), *self._join_timers.values(), *self._sync_timers.values()]:
            timer.cancel()
        self._heartbeat_timers.clear()
        self._join_timers.clear()
        self._sync_timers.clear()

    def _now_ms(self) -> int:
        return self.clock.time_ms()

    def _call_later(self, delay_ms: int, callback: Callable[[], None]) -> Cancellable:
        return self.scheduler.call_later(delay_ms, callback)

    # -- rebalance ---------------------------------------------------------------------------------------
    def rebalance(self, group: GroupMetadata) -> None:
        """Membership changed by a join (Kafka's `maybePrepareRebalanceOrCompleteJoin`): start a rebalance if the
        state allows, else finish the running one if all are in."""
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self.try_complete_join(group)

    def in_initial_delay(self, group: GroupMetadata) -> bool:
        """The group is in its first rebalance since it was empty (Kafka: PreparingRebalance after Empty)."""
        return group.group_id in self._in_initial_delay

    def maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        """Kafka's `prepareRebalance`: the initial rebalance of an empty group completes only from its delay
        timer, also when `group.initial.rebalance.delay.ms` is 0, so joins that arrive together land in one
        generation; any other rebalance completes as soon as every member rejoined."""
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self.propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        is_initial_rebalance = group.is_(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self._now_ms())
        group.rebalance_epoch += 1
        epoch = group.rebalance_epoch
        rebalance_timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        self._cancel_join_timer(group.group_id)
        if is_initial_rebalance:
            delay_ms = self.config.initial_rebalance_delay_ms
            remaining_ms = max(rebalance_timeout_ms - delay_ms, 0)
            group.new_member_added = False
            self._in_initial_delay.add(group.group_id)
            self._join_timers[group.group_id] = self._call_later(
                delay_ms, lambda: self._on_initial_delay_expired(group, epoch, delay_ms, remaining_ms)
            )
            return
        self._in_initial_delay.discard(group.group_id)
        if group.all_members_joined():
            self._complete_join(group)
            return
        self._join_timers[group.group_id] = self._call_later(
            rebalance_timeout_ms, lambda: self._on_join_expired(group, epoch)
        )

    def forget(self, group: GroupMetadata) -> None:
        """The group stops being a classic group (online upgrade): drop its join and member timers."""
        self._cancel_join_timer(group.group_id)
        self._remove_sync_expiration(group)
        self._in_initial_delay.discard(group.group_id)
        for member_id in [*group.members, *group.pending_members]:
            self.cancel_heartbeat(group.group_id, member_id)

    def _cancel_join_timer(self, group_id: str) -> None:
        timer = self._join_timers.pop(group_id, None)
        if timer is not None:
            timer.cancel()

    def _on_initial_delay_expired(self, group: GroupMetadata, epoch: int, delay_ms: int, remaining_ms: int) -> None:
        """Kafka's `tryCompleteInitialRebalanceElseSchedule`: a member that joined during the delay extends it by
        another delay (at most what is left of the rebalance timeout); otherwise the join phase completes."""
        if group.rebalance_epoch != epoch or not group.is_(GroupState.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            next_delay_ms = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            next_remaining_ms = max(remaining_ms - delay_ms, 0)
            self._join_timers[group.group_id] = self._call_later(
                next_delay_ms,
                lambda: self._on_initial_delay_expired(group, epoch, next_delay_ms, next_remaining_ms),
            )
            return
        self._complete_join(group)

    def _on_join_expired(self, group: GroupMetadata, epoch: int) -> None:
        if group.rebalance_epoch == epoch and group.is_(GroupState.PREPARING_REBALANCE):
            self._complete_join(group)

    def try_complete_join(self, group: GroupMetadata) -> None:
        """Complete the delayed join early once every member rejoined (never during the initial delay)."""
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.group_id not in self._in_initial_delay
            and group.all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        """Kafka's completeClassicGroupJoin: dynamic members that did not rejoin are removed, static ones stay
        (KIP-345: their session timeout decides); a leader that did not rejoin hands over to one that did, and
        with nobody rejoined the group waits another rebalance timeout."""
        self._in_initial_delay.discard(group.group_id)
        self._cancel_join_timer(group.group_id)
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                self.cancel_heartbeat(group.group_id, member.member_id)
                group.remove(member.member_id)
        if group.is_(GroupState.DEAD):
            return
        if group.members and not self._elect_joined_leader(group):
            epoch = group.rebalance_epoch
            rebalance_timeout_ms = max(m.rebalance_timeout_ms for m in group.members.values())
            self._join_timers[group.group_id] = self._call_later(
                rebalance_timeout_ms, lambda: self._on_join_expired(group, epoch))
            return
        group.init_next_generation(self._now_ms())
        if group.is_(GroupState.EMPTY):
            self.store.store_group(group, {})
            return
        group.pending_sync_members.clear()
        for member in list(group.members.values()):
            callback = member.join_callback
            member.join_callback = None
            member.is_new = False
            if callback is not None:
                callback(JoinGroupResult.for_member(group, member))
            self.schedule_heartbeat(group, member)
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group)

    # -- pending sync (Kafka's schedulePendingSync / expirePendingSync) ------------------------------------
    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        """Members of the new generation that send no SyncGroup within the rebalance timeout are removed."""
        generation = group.generation_id
        timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        self._cancel_sync_timer(group.group_id)
        self._sync_timers[group.group_id] = self._call_later(
            timeout_ms, lambda: self._on_pending_sync_expired(group, generation))

    def _on_pending_sync_expired(self, group: GroupMetadata, generation: int) -> None:
        self._sync_timers.pop(group.group_id, None)
        if generation != group.generation_id or not (
                group.is_(GroupState.COMPLETING_REBALANCE) or group.is_(GroupState.STABLE)):
            return
        if group.pending_sync_members:
            for member_id in sorted(group.pending_sync_members):
                self.cancel_heartbeat(group.group_id, member_id)
                group.remove(member_id)
            self._prepare_rebalance(group)

    def sync_received(self, group: GroupMetadata, member_id: str) -> None:
        """Kafka's removePendingSyncMember: the timer stops once every member has synced."""
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_sync_timer(group.group_id)

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.pending_sync_members.clear()
        self._cancel_sync_timer(group.group_id)

    def _cancel_sync_timer(self, group_id: str) -> None:
        timer = self._sync_timers.pop(group_id, None)
        if timer is not None:
            timer.cancel()

    @staticmethod
    def _elect_joined_leader(group: GroupMetadata) -> bool:
        """Kafka's maybeElectNewJoinedLeader."""
        leader = group.members.get(group.leader_id) if group.leader_id is not None else None
        if leader is None:
            return False
        if leader.is_awaiting_join:
            return True
        for member in group.members.values():
            if member.is_awaiting_join:
                group.leader_id = member.member_id
                return True
        return False

    def propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            if member.sync_callback is not None:
                callback, member.sync_callback = member.sync_callback, None
                callback(SyncGroupResult(error))
                self.schedule_heartbeat(group, member)

    def remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        group.remove(member.member_id)
        self.cancel_heartbeat(group.group_id, member.member_id)
        if group.is_(GroupState.STABLE) or group.is_(GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance(group)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self.try_complete_join(group)

    # -- session timeouts --------------------------------------------------------------------------------
    def schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        key = (group.group_id, member.member_id)
        previous = self._heartbeat_timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        delay_ms = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_deadline_ms = self.clock.monotonic_ms() + delay_ms
        self._heartbeat_timers[key] = self._call_later(delay_ms, lambda: self._on_heartbeat_expired(group, member))

    def cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        timer = self._heartbeat_timers.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def _on_heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if group.members.get(member.member_id) is not member:
            return
        self._heartbeat_timers.pop((group.group_id, member.member_id), None)
        if member.is_awaiting_join and not member.is_new:
            # Kafka keeps a member alive while it waits in a rebalance; the rebalance timeout governs it.
            self.schedule_heartbeat(group, member)
            return
        if member.is_awaiting_sync:
            self.schedule_heartbeat(group, member)
            return
        self.remove_member_and_update_group(group, member)

    def schedule_pending_expiry(self, group: GroupMetadata, member_id: str, session_timeout_ms: int) -> None:
        """A MEMBER_ID_REQUIRED member that does not rejoin within its session timeout is forgotten."""

        def expire() -> None:
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.try_complete_join(group)

        self._heartbeat_timers[(group.group_id, member_id)] = self._call_later(session_timeout_ms, expire)

"""`ShareCoordinator`: share groups (KIP-932) served on the broker, as Apache Kafka 4.3.1's group coordinator and
share coordinator serve them together on one node.

It owns the share groups (`ShareGroup`, kept in the group coordinator's `GroupMetadataManager.share_groups` so that
ListGroups/DescribeGroups/DeleteGroups see them and their `__consumer_offsets` records are replayed on load), the
records a heartbeat changes (appended to `__consumer_offsets` in Kafka's layouts), the session-expiry and
acquisition-lock timers (one loop timer armed at the earliest deadline), the share partitions and the share
sessions (`SharePartitionManager`), and the per-group `share.*` overrides (from the GROUP config resources:
`for_broker` reads the stored ones and subscribes to changes). Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from minikafka.broker.share.share_group import ShareGroup, ShareGroupError, ShareGroupHeartbeatResult
from minikafka.broker.share.share_group_configs import (
    ShareGroupBrokerConfig,
    ShareGroupSettings,
    share_group_config,
)
from minikafka.broker.share.share_group_records import records_between, snapshot
from minikafka.broker.share.share_partition_manager import SharePartitionManager
from minikafka.protocol.errors import ErrorCode, InvalidConfigError
from minikafka.storage.clock import Clock

if TYPE_CHECKING:
    from minikafka.broker.admin_manager import AdminManager
    from minikafka.broker.groups.group_metadata_manager import GroupMetadataManager
    from minikafka.broker.groups.group_status import CoordinatorStatus
    from minikafka.broker.replica_manager import ReplicaManager
    from minikafka.broker.session import Session
    from minikafka.broker.share.share_state_store import ShareStateStore

__all__ = ["SHARE_PROTOCOL_TYPE", "ShareCoordinator"]

log = logging.getLogger(__name__)

SHARE_PROTOCOL_TYPE = "share"


class ShareCoordinator:
    """Share-group membership, timers and partitions on this broker. See the module docstring."""

    def __init__(
        self,
        group_store: GroupMetadataManager,
        group_status: CoordinatorStatus,
        replica_manager: ReplicaManager,
        store: ShareStateStore,
        broker_config: ShareGroupBrokerConfig,
        clock: Clock,
    ) -> None:
        #: the group coordinator's `__consumer_offsets` store (share groups' records live there) and its status
        self.group_store = group_store
        self.group_status = group_status
        self.replica_manager = replica_manager
        self.broker_config = broker_config
        self.clock = clock
        #: a GROUP resource's `share.*` overrides, by group id
        self.group_overrides: dict[str, dict[str, str]] = {}
        self.partitions = SharePartitionManager(self, replica_manager, store, clock)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at_ms: int | None = None

    @classmethod
    def for_broker(
        cls, props: Mapping[str, str], group_store: GroupMetadataManager, group_status: CoordinatorStatus,
        replica_manager: ReplicaManager, admin: AdminManager, clock: Clock,
    ) -> ShareCoordinator:
        """The broker's share coordinator: `__share_group_state` in its own logs, `group.share.*` from `props`."""
        from minikafka.broker.groups.offsets_topic import ReplicaOffsetsTopic
        from minikafka.broker.share.share_coordinator_state import ShareCoordinatorState
        from minikafka.broker.share.share_state_store import SHARE_GROUP_STATE_TOPIC, ShareStateStore

        broker_config = ShareGroupBrokerConfig.from_props(props)
        state = ShareCoordinatorState(broker_config["share.coordinator.snapshot.update.records.per.snapshot"])
        store = ShareStateStore(ReplicaOffsetsTopic(replica_manager, admin, SHARE_GROUP_STATE_TOPIC), clock, state,
                                broker_config["share.coordinator.state.topic.num.partitions"])
        coordinator = cls(group_store, group_status, replica_manager, store, broker_config, clock)
        group_configs = admin.group_configs

        def apply(group_id: str) -> None:
            coordinator.on_group_configs(group_id, group_configs.applied_overrides(group_id))

        for group_id in group_configs.group_ids():  # the stored GROUP configs, before any request
            apply(group_id)
        group_configs.listeners.append(apply)
        return coordinator

    @property
    def groups(self) -> dict[str, ShareGroup]:
        return self.group_store.share_groups

    async def load_state(self) -> None:
        """Load `__share_group_state`, before the groups: until it is loaded, share partitions answer
        COORDINATOR_LOAD_IN_PROGRESS (a partition initialised meanwhile would forget its persisted state)."""
        await self.partitions.store.load_all()
        self.partitions.loaded = True
        log.info("Loaded the state of %d share partitions from __share_group_state",
                 len(self.partitions.store.state.share_partitions()))

    def on_groups_loaded(self) -> None:
        """The share groups came back with `__consumer_offsets`: fresh sessions, their settings, the timer."""
        now_ms = self.clock.time_ms()
        topics = self.topics_image()
        for group in self.groups.values():
            self._apply_settings(group)
            group.on_loaded(now_ms, topics)
        self.arm_timer()

    def shutdown(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- settings ------------------------------------------------------------------------------------------
    def settings(self, group_id: str) -> ShareGroupSettings:
        return share_group_config(self.group_overrides.get(group_id, {}), self.broker_config)

    def set_group_config(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """Replace a group's `share.*` overrides (InvalidConfigError with Kafka's message when refused); the new
        lock duration, delivery limit, isolation level and reset strategy apply to its partitions from now on."""
        share_group_config(overrides, self.broker_config)  # validate before storing
        if overrides:
            self.group_overrides[group_id] = dict(overrides)
        else:
            self.group_overrides.pop(group_id, None)
        group = self.groups.get(group_id)
        if group is not None:
            self._apply_settings(group)
        self.partitions.on_group_config(group_id, self.settings(group_id).partition)

    def on_group_configs(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """A GROUP config resource changed (or was loaded): take its `share.*` keys, as Kafka's share group reads
        its GroupConfig. The admin validated them already; a value the broker's bounds refuse is logged and the
        group keeps its previous settings."""
        share = {name: value for name, value in overrides.items() if name.startswith("share.")}
        if share == self.group_overrides.get(group_id, {}):
            return
        try:
            self.set_group_config(group_id, share)
        except InvalidConfigError as error:
            log.warning("share group %s keeps its previous configs: %s", group_id, error)
            return
        log.info("share group %s: configs %s", group_id, share)

    def _apply_settings(self, group: ShareGroup) -> None:
        settings = self.settings(group.group_id)
        group.session_timeout_ms = settings.session_timeout_ms
        group.heartbeat_interval_ms = settings.heartbeat_interval_ms
        group.max_size = self.broker_config["group.share.max.size"]

    def subscribes(self, group_id: str, topic: str) -> bool:
        """Whether a member of share group `group_id` subscribes to `topic`: Kafka's group coordinator initialises
        a topic's share partitions (InitializeShareGroupState) only then, and a ShareFetch of any other partition
        is refused (the share coordinator's "Read on uninitialized share partition")."""
        group = self.groups.get(group_id)
        return group is not None and any(topic in m.subscribed_topic_names for m in group.members.values())

    def topics_image(self) -> dict[str, tuple[uuid.UUID, int]]:
        return {name: (t.topic_id, t.num_partitions) for name, t in self.replica_manager.topics().items()}

    # -- ShareGroupHeartbeat -------------------------------------------------------------------------------
    async def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        *,
        subscribed_topic_names: Sequence[str] | None,
        rack_id: str | None,
        client_id: str,
        client_host: str,
    ) -> ShareGroupHeartbeatResult:
        """Serve one heartbeat and persist what it changed; ShareGroupError with Kafka's code when refused."""
        status = self.group_status.validate(group_id)
        if status is not ErrorCode.NONE:
            raise ShareGroupError(status, status.name)
        store = self.group_store
        await store.ensure_topic()
        if store.is_classic_or_consumer_group(group_id):
            raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self.groups.get(group_id)
        created = group is None
        if group is None:
            group = ShareGroup(group_id)
            self._apply_settings(group)
        before = None if created else snapshot(group)
        result = group.heartbeat(
            member_id,
            member_epoch,
            subscribed_topic_names=subscribed_topic_names,
            topics=self.topics_image(),
            now_ms=self.clock.time_ms(),
            rack_id=rack_id,
            client_id=client_id,
            client_host=client_host,
        )
        if created:
            self.groups[group_id] = group
        error = self._persist(before, group)
        if error is not ErrorCode.NONE:
            raise ShareGroupError(error, "The coordinator could not persist the group.")
        self.arm_timer()
        return result

    def _persist(self, before: object, group: ShareGroup) -> ErrorCode:
        records = records_between(before, group)  # type: ignore[arg-type]
        if not records:
            return ErrorCode.NONE
        return self.group_store.append_records(group.group_id, records)

    # -- connections -----------------------------------------------------------------------------------------
    def on_disconnect(self, session: Session) -> None:
        """A client connection closed: the share session opened on it ends and its member's acquired records go
        back to the group at once, as Kafka's connection-disconnect listener does (not when their locks expire)."""
        if not session.connection_id:
            return
        ended = self.partitions.sessions.on_disconnect(session.connection_id)
        if ended is not None:
            self.partitions.release_member(ended.group_id, ended.member_id, list(ended.partitions))
            self.arm_timer()

    # -- DeleteGroups ----------------------------------------------------------------------------------------
    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups of a share group: NON_EMPTY_GROUP while it has members; else its records and its share
        partitions' state are deleted (tombstones)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        from minikafka.broker.share.share_group_records import GROUP_METADATA, TARGET_METADATA

        tombstones: list[tuple[bytes, bytes | None]] = [
            (TARGET_METADATA.encode_key(group_id=group_id), None),
            (GROUP_METADATA.encode_key(group_id=group_id), None),
        ]
        error = self.group_store.append_records(group_id, tombstones)
        if error is ErrorCode.NONE:
            del self.groups[group_id]
            self.partitions.delete_group_state(group_id)
        return error

    # -- timers ----------------------------------------------------------------------------------------------
    def arm_timer(self) -> None:
        """(Re)arm the one timer at the earliest session or acquisition-lock deadline."""
        deadlines = [d for d in (g.next_session_deadline_ms() for g in self.groups.values()) if d is not None]
        lock_deadline = self.partitions.next_lock_deadline_ms()
        if lock_deadline is not None:
            deadlines.append(lock_deadline)
        if not deadlines:
            return
        at_ms = min(deadlines)
        if self._timer is not None and self._timer_at_ms is not None and self._timer_at_ms <= at_ms:
            return
        if self._timer is not None:
            self._timer.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer_at_ms = at_ms
        self._timer = loop.call_later(max(0, at_ms - self.clock.time_ms()) / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at_ms = None
        now_ms = self.clock.time_ms()
        topics = self.topics_image()
        for group in list(self.groups.values()):
            before = snapshot(group)
            expired = group.expire_sessions(now_ms, topics)
            if expired:
                log.info("share group %s: members %s left (session timeout)", group.group_id, expired)
                self._persist(before, group)
        self.partitions.expire_acquisition_locks()
        self.arm_timer()

"""`ShareCoordinator`: share groups (KIP-932) served on the broker, as Apache Kafka 4.3.1's group coordinator and
share coordinator serve them together on one node.

The share groups themselves (`ShareGroup`) are owned by the group coordinator's `GroupMetadataManager`
(`share_groups`: ListGroups/DescribeGroups/DeleteGroups see them, their `__consumer_offsets` records are replayed
there on load); this class serves their requests, writing first: a heartbeat's or a session expiry's records are
appended to `__consumer_offsets` and the change is kept only once written. It owns the session-expiry and
acquisition-lock timer (one loop timer armed at the earliest deadline), the `Persister` of share-partition state,
the `SharePartitionManager` (share partitions and share sessions, built with narrow callables, no pointer back),
the per-group `share.*` overrides (from the GROUP config resources: `for_broker` reads the stored ones and
subscribes to changes), and publishes `read_model()` for the console and the metrics. Event-loop thread only; not
thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from minikafka.broker.groups import state_partition_metadata as spm
from minikafka.broker.groups.share_group import (
    ShareGroup,
    ShareGroupError,
    ShareGroupHeartbeatResult,
    StatePartitionMetadata,
    TopicPartitions,
)
from minikafka.broker.groups.share_group_records import (
    group_tombstones,
    records_between,
    snapshot,
    state_partition_metadata_record,
)
from minikafka.broker.share.persister import CoordinatorPersister, Persister
from minikafka.broker.share.share_coordinator_state import ShareStateError
from minikafka.broker.share.share_group_configs import (
    ShareGroupBrokerConfig,
    ShareGroupSettings,
    share_group_config,
)
from minikafka.broker.share.share_partition import UNINITIALIZED_START_OFFSET
from minikafka.broker.share.share_partition_manager import SharePartitionManager
from minikafka.broker.share.share_read_model import ShareGroupSummary, SharePartitionSummary, ShareReadModel
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
#: how long a timer whose write failed (session expiry, lock expiry) waits before it tries again
_RETRY_BACKOFF_MS = 1000


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
        #: share-partition state, read and written (the share coordinator's `__share_group_state`)
        self.persister: Persister = CoordinatorPersister(store, clock)
        self.partitions = SharePartitionManager(
            replica_manager, self.persister, clock, max_share_sessions=broker_config["group.share.max.share.sessions"],
            partition_config=lambda group_id: self.settings(group_id).partition, is_initialized=self.is_initialized,
            on_acquired=self.arm_timer)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at_ms: int | None = None
        self._retry_at_ms = 0  # no timer fires before this (a write failed: back off rather than spin)

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
        await self.persister.load()
        self.partitions.loaded = True
        log.info("Loaded the state of %d share partitions from __share_group_state",
                 len(self.persister.share_partitions()))

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

    def is_initialized(self, group_id: str, topic_id: uuid.UUID, partition: int) -> bool:
        """Whether the group's ShareGroupStatePartitionMetadata has the share partition initialised: Kafka's group
        coordinator initialises a topic's share partitions (InitializeShareGroupState) when a member subscribes to
        it, and they stay initialised when the members leave, until DeleteShareGroupOffsets or DeleteGroups."""
        group = self.groups.get(group_id)
        return group is not None and group.state_partitions is not None \
            and group.state_partitions.is_initialized(topic_id, partition)

    def read_model(self) -> ShareReadModel:
        """What the console and the metrics read (see `share_read_model`). Event loop only."""
        names = {topic_id: name for name, (topic_id, _count) in self.topics_image().items()}
        partitions = sorted(
            (SharePartitionSummary(
                group_id, topic_id, names.get(topic_id, str(topic_id)), partition, share_partition.start_offset,
                share_partition.end_offset, share_partition.in_flight_count(), share_partition.archived_count(),
                share_partition.in_flight_batch_count())
             for (group_id, topic_id, partition), share_partition in self.partitions.share_partitions.items()),
            key=lambda p: (p.group_id, p.topic, p.partition))
        groups = tuple(
            ShareGroupSummary(group_id, group.state.value,
                              tuple(sorted((m.member_id, m.client_id, m.client_host) for m in group.members.values())))
            for group_id, group in sorted(self.groups.items()))
        sessions = self.partitions.sessions
        return ShareReadModel(groups, tuple(partitions), len(sessions), sessions.total_partitions())

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
        saved = group.copy_state()
        try:
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
        except ShareGroupError:
            group.restore_state(saved)
            raise
        # Written first: a group, a member or an epoch exists in memory only once its records are in the log.
        error = self._persist(before, group)
        if error is not ErrorCode.NONE:
            group.restore_state(saved)
            raise ShareGroupError(error, "The coordinator could not persist the group.")
        if created:
            self.groups[group_id] = group
        await self._initialize_subscribed(group)
        self.arm_timer()
        return result

    def _persist(self, before: object, group: ShareGroup) -> ErrorCode:
        records = records_between(before, group)  # type: ignore[arg-type]
        if not records:
            return ErrorCode.NONE
        return self.group_store.append_records(group.group_id, records)

    # -- share-partition initialisation (ShareGroupStatePartitionMetadata) ------------------------------------
    def _write_state_partitions(self, group: ShareGroup, metadata: StatePartitionMetadata) -> ErrorCode:
        """Write the group's ShareGroupStatePartitionMetadata record and keep it once written."""
        error = self.group_store.append_records(group.group_id, [state_partition_metadata_record(group.group_id,
                                                                                                 metadata)])
        if error is ErrorCode.NONE:
            group.state_partitions = metadata
            self.groups.setdefault(group.group_id, group)  # a new group exists once its first record is written
        return error

    def group_or_new(self, group_id: str) -> ShareGroup:
        """The share group, or a new empty one that joins `groups` only once a record of it is written (Kafka's
        getOrMaybeCreatePersistedShareGroup: AlterShareGroupOffsets of a group with no members yet creates it)."""
        group = self.groups.get(group_id)
        if group is None:
            group = ShareGroup(group_id)
            self._apply_settings(group)
        return group

    async def _initialize_subscribed(self, group: ShareGroup) -> None:
        """After a heartbeat: initialise the subscribed partitions not initialised yet, as Kafka's heartbeat does
        with InitializeShareGroupState (a fresh state at start offset -1 and the group epoch as state epoch; the
        first ShareFetch resolves `share.auto.offset.reset`). A partition that already has state keeps it. A
        failure is logged and retried at the next heartbeat; the heartbeat itself succeeded, as in Kafka."""
        if not self.partitions.loaded:
            return  # `__share_group_state` is loading: Kafka's persister would fail; the next heartbeat retries
        subscribed = {name for member in group.members.values() for name in member.subscribed_topic_names}
        change = spm.to_initialize(group.state_partitions or spm.EMPTY, subscribed, self.topics_image())
        if not change:
            return
        persister = self.persister
        await persister.ensure_ready()

        def write_state(topic_id: uuid.UUID, partition: int) -> ErrorCode:
            if persister.read_state(group.group_id, topic_id, partition) is not None:
                return ErrorCode.NONE
            return persister.initialize_state(group.group_id, topic_id, partition, state_epoch=group.group_epoch,
                                              start_offset=UNINITIALIZED_START_OFFSET)

        self.initialize(group, change, write_state)

    def initialize(
        self, group: ShareGroup, change: TopicPartitions, write_state: Callable[[uuid.UUID, int], ErrorCode]
    ) -> dict[tuple[uuid.UUID, int], ErrorCode]:
        """Initialise share partitions as Kafka's group coordinator does: `change` is written as initializing,
        `write_state` writes each partition's state (the persister's InitializeShareGroupState), then the ones
        written become initialized and the others leave initializing. Returns each partition's error."""
        errors: dict[tuple[uuid.UUID, int], ErrorCode] = {}
        error = self._write_state_partitions(group, spm.begin_initializing(group.state_partitions or spm.EMPTY,
                                                                           change))
        if error is not ErrorCode.NONE:
            log.warning("share group %s: could not record initializing partitions: %s", group.group_id, error.name)
            return {(t, p): error for t, (_name, partitions) in change.items() for p in partitions}
        for topic_id, (_name, partitions) in change.items():
            for partition in sorted(partitions):
                try:
                    errors[(topic_id, partition)] = write_state(topic_id, partition)
                except ShareStateError as refused:
                    errors[(topic_id, partition)] = ErrorCode(refused.error_code)
        done = {t: (name, frozenset(p for p in partitions if errors[(t, p)] is ErrorCode.NONE))
                for t, (name, partitions) in change.items()}
        done = {t: v for t, v in done.items() if v[1]}
        failed = {t: (name, frozenset(p for p in partitions if errors[(t, p)] is not ErrorCode.NONE))
                  for t, (name, partitions) in change.items()}
        failed = {t: v for t, v in failed.items() if v[1]}
        metadata = group.state_partitions or spm.EMPTY
        if done:
            metadata = spm.finish_initializing(metadata, done)
        if failed:
            log.warning("share group %s: could not initialise the state of %s", group.group_id, failed)
            metadata = spm.uninitialize(metadata, failed)
        self._write_state_partitions(group, metadata)
        return errors

    def delete_offsets(
        self, group_id: str, topics: Sequence[tuple[str, uuid.UUID]]
    ) -> dict[str, tuple[ErrorCode, str | None]] | None:
        """DeleteShareGroupOffsets of an (empty) group, as Kafka's group coordinator: an initialised topic moves
        to deleting, its share partitions' state is deleted, and it leaves deleting; a topic already deleting is
        deleted again; any other is UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to delete.").
        None when the group never initialised a share partition: Kafka then answers no topic at all."""
        group = self.groups[group_id]
        metadata = group.state_partitions
        results: dict[str, tuple[ErrorCode, str | None]] = {}
        if metadata is None:
            return None
        eligible = [(name, t) for name, t in topics if t in metadata.initialized or t in metadata.deleting]
        for name, topic_id in topics:
            if (name, topic_id) not in eligible:
                results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")
        error = self._write_state_partitions(group, spm.delete_offsets(metadata, [t for _n, t in eligible]))
        if error is not ErrorCode.NONE:
            return {**results, **{name: (error, None) for name, _t in eligible}}
        deleted = []
        for name, topic_id in eligible:
            code = ErrorCode.NONE
            for key in [k for k in self.persister.share_partitions() if k[0] == group_id and k[1] == topic_id]:
                written = self.persister.delete_state(*key)
                self.partitions.forget(*key)
                if written is not ErrorCode.NONE:
                    code = written
            results[name] = (code, None)
            if code is ErrorCode.NONE:
                deleted.append(topic_id)
        if deleted:
            self._write_state_partitions(group, spm.finish_deleting(group.state_partitions or spm.EMPTY, deleted))
        return results

    # -- connections -----------------------------------------------------------------------------------------
    def on_disconnect(self, session: Session) -> None:
        """A client connection closed: the share sessions opened on it end and their members' acquired records go
        back to the group at once, as Kafka's connection-disconnect listener does (not when their locks expire)."""
        if not session.connection_id:
            return
        ended = self.partitions.sessions.on_disconnect(session.connection_id)
        for share_session in ended:
            self.partitions.release_member(share_session.group_id, share_session.member_id,
                                           list(share_session.partitions))
        if ended:
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
        if group.state_partitions is not None:
            # Kafka first records every topic as deleting, deletes the state, then writes the tombstones
            error = self._write_state_partitions(group, spm.delete_all(group.state_partitions))
            if error is not ErrorCode.NONE:
                return error
        self.partitions.delete_group_state(group_id)
        error = self.group_store.append_records(group_id, group_tombstones(group))
        if error is ErrorCode.NONE:
            del self.groups[group_id]
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
        at_ms = max(min(deadlines), self._retry_at_ms)
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
            before, saved = snapshot(group), group.copy_state()
            expired = group.expire_sessions(now_ms, topics)
            if not expired:
                continue
            if self._persist(before, group) is ErrorCode.NONE:
                log.info("share group %s: members %s left (session timeout)", group.group_id, expired)
            else:  # the members stay until their removal is written; the next timer tries again
                group.restore_state(saved)
                self._retry_at_ms = now_ms + _RETRY_BACKOFF_MS
        if self.partitions.expire_acquisition_locks() is not ErrorCode.NONE:
            self._retry_at_ms = now_ms + _RETRY_BACKOFF_MS
        self.arm_timer()

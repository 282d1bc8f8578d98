"""`SharePartitionManager`: the share partitions of every share group on this broker and what ShareFetch and
ShareAcknowledge do with them, as Apache Kafka 4.3.1's `SharePartitionManager` and `DelayedShareFetch` do.

A share partition is loaded on first use through the `Persister` (the share coordinator's `__share_group_state`).
Only partitions the group coordinator initialised are served (`is_initialized`, Kafka's
ShareGroupStatePartitionMetadata; it writes their state at start offset -1); on first use that start offset is
resolved with `share.auto.offset.reset` and the snapshot written first. Every acknowledgement, release, lock expiry
and archive is written before the request is answered and undone in memory when the write fails (`_write_first`),
so memory equals the log, a restart (or kill -9) loses no acknowledgement and redelivers nothing acknowledged. A
ShareFetch is a `DelayedShareFetch`: it acquires once, when it can complete (or at MaxWaitMs), and while it waits
an append to one of its partitions (the fetch purgatory), a release or an expired lock (`_complete_waiting`)
completes it. Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from minikafka.broker.replica_manager import FetchPartitionRequest
from minikafka.broker.share.auto_offset_reset import resolve_start_offset
from minikafka.broker.share.share_coordinator_state import ShareStateError, load_share_partition
from minikafka.broker.share.share_partition import UNINITIALIZED_START_OFFSET, ShareAcquiredRecords, SharePartition
from minikafka.broker.share.share_session_cache import ShareSessionCache
from minikafka.broker.share.share_types import (
    AbortedTransaction,
    AcknowledgementBatch,
    AcquiredRecords,
    FetchedBatch,
    IsolationLevel,
    PersisterStateBatch,
    ShareAcknowledgeError,
    ShareAcquireMode,
    ShareGroupConfig,
)
from minikafka.protocol.errors import (
    ERROR_CLASSES,
    CoordinatorLoadInProgressError,
    ErrorCode,
    KafkaError,
    UnknownServerError,
)
from minikafka.protocol.records import CONTROL_TYPE_ABORT, iter_batches, parse_control_record_type
from minikafka.storage.clock import Clock

if TYPE_CHECKING:
    from minikafka.broker.replica_manager import ReplicaManager
    from minikafka.broker.share.persister import Persister

__all__ = ["PartitionFetch", "SharePartitionManager"]

log = logging.getLogger(__name__)

SharePartitionKey = tuple[str, uuid.UUID, int]
_READ_UNCOMMITTED = 0
_READ_COMMITTED = 1
_READ_BYTES = 1024 * 1024
_LOADING_RETRY_MS = 100
_DEFAULT_MAX_RECORDS = 500  # a ShareFetch v0 has no MaxRecords: the share consumer's max.poll.records default


@dataclass(slots=True)
class DelayedShareFetch:
    """One ShareFetch waiting for records (Kafka's DelayedShareFetch): its parameters, the share partitions it
    reads, the partitions that failed before it waited, and its response once completed."""

    group_id: str
    member_id: str
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    acquire_mode: ShareAcquireMode
    partitions: dict[tuple[uuid.UUID, int], tuple[str, SharePartition]] = field(default_factory=dict)
    errors: dict[tuple[uuid.UUID, int], PartitionFetch] = field(default_factory=dict)
    completed: dict[tuple[uuid.UUID, int], PartitionFetch] | None = None


@dataclass(slots=True)
class PartitionFetch:
    """What one partition contributes to a ShareFetch response."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)


class SharePartitionManager:
    """Share partitions, their persistence and the ShareFetch/ShareAcknowledge operations. See the module doc."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        persister: Persister,
        clock: Clock,
        *,
        max_share_sessions: int,
        partition_config: Callable[[str], ShareGroupConfig],
        is_initialized: Callable[[str, uuid.UUID, int], bool],
        on_acquired: Callable[[], None] = lambda: None,
    ) -> None:
        """`partition_config(group)`: a group's share-partition settings; `is_initialized(group, topic id,
        partition)`: whether its group coordinator initialised the share partition; `on_acquired()`: records were
        acquired (their lock deadlines need a timer). Narrow callables rather than a pointer to the coordinator."""
        self.replica_manager = replica_manager
        self.persister = persister
        self.clock = clock
        self.partition_config = partition_config
        self.is_initialized = is_initialized
        self.on_acquired = on_acquired
        self.sessions = ShareSessionCache(max_share_sessions, clock_ms=clock.time_ms)
        self.share_partitions: dict[SharePartitionKey, SharePartition] = {}
        #: set once `__share_group_state` is loaded (ShareCoordinator.load_state)
        self.loaded = False
        #: the share fetches waiting for records, in arrival order
        self._waiting: list[DelayedShareFetch] = []

    # -- loading and persisting ------------------------------------------------------------------------------
    async def share_partition(self, group_id: str, topic: str, topic_id: uuid.UUID, partition: int) -> SharePartition:
        """The loaded share partition (initialised and persisted on first use); KafkaError if it cannot be."""
        key = (group_id, topic_id, partition)
        share_partition = self.share_partitions.get(key)
        if share_partition is not None:
            return share_partition
        if not self.loaded:
            raise CoordinatorLoadInProgressError("The share coordinator is loading __share_group_state.")
        await self.persister.ensure_ready()
        config = self.partition_config(group_id)
        share_partition = SharePartition(group_id, topic_id.bytes, partition, config=config,
                                         clock_ms=self.clock.time_ms)
        state = self.persister.read_state(group_id, topic_id, partition)
        if state is None and not self.is_initialized(group_id, topic_id, partition):
            # Kafka's code for a partition its group coordinator never initialised (its message is null)
            raise UnknownServerError(f"Read on uninitialized share partition {topic}-{partition}: share group "
                                     f"{group_id} has not initialised it.")
        resolved = UNINITIALIZED_START_OFFSET
        if state is None or state.start_offset == UNINITIALIZED_START_OFFSET:
            resolved = self._resolve_start_offset(config, topic, partition)
            try:
                error_code = self.persister.initialize_state(
                    group_id, topic_id, partition, state_epoch=0 if state is None else state.state_epoch,
                    start_offset=resolved)
            except ShareStateError as error:
                raise KafkaError(str(error)) from error
            if error_code is not ErrorCode.NONE:
                raise _kafka_error(error_code, "could not initialise the share partition's state")
            state = self.persister.read_state(group_id, topic_id, partition)
            assert state is not None
        load_share_partition(share_partition, state, resolved_start_offset=resolved)
        log_start = self.replica_manager.log_start_offset(topic, partition)
        if share_partition.on_log_start_offset(log_start):
            error_code = self._persist(share_partition, [])
            if error_code is not ErrorCode.NONE:  # not served: the next use loads it again from the written state
                raise _kafka_error(error_code, "could not write the share partition's start offset")
        self.share_partitions[key] = share_partition
        return share_partition

    def _resolve_start_offset(self, config: ShareGroupConfig, topic: str, partition: int) -> int:
        log = self.replica_manager.log_for(topic, partition)

        def by_time(timestamp_ms: int) -> int | None:
            offset, _timestamp = self.replica_manager.offset_for_timestamp(topic, partition, timestamp_ms)
            return None if offset < 0 else offset

        return resolve_start_offset(
            config.auto_offset_reset,
            earliest_offset=log.log_start_offset,
            latest_offset=log.high_watermark,
            offset_for_timestamp=by_time,
            now_ms=self.clock.time_ms(),
        )

    def _persist(
        self, share_partition: SharePartition, batches: list[PersisterStateBatch], start_offset: int | None = None
    ) -> ErrorCode:
        """Write the changed state batches to `__share_group_state` with the SPSO as it was before the change
        (`start_offset`; default: the current one). Kafka writes the state batches first and moves its cached start
        offset once the write completed, so the moved SPSO is persisted by the next write only, and
        DescribeShareGroupOffsets shows the older start offset with the records delivered past it."""
        topic_id = uuid.UUID(bytes=share_partition.topic_id)
        start = share_partition.start_offset if start_offset is None else start_offset
        complete = share_partition.delivery_complete_count() + (share_partition.start_offset - start)
        try:
            return self.persister.write_state(
                share_partition.group_id, topic_id, share_partition.partition,
                state_epoch=share_partition.state_epoch, leader_epoch=0, start_offset=start,
                delivery_complete_count=complete, state_batches=batches)
        except ShareStateError as error:
            log.warning("share state write refused for %s: %s", share_partition.group_id, error)
            return ErrorCode(error.error_code)

    def _write_first(
        self, share_partition: SharePartition, change: Callable[[], list[PersisterStateBatch]]
    ) -> ErrorCode | None:
        """Make `change` on the partition and write the state batches it returns; when the write fails the
        partition is put back as it was (Kafka's rollback on a persister failure), so memory always equals
        `__share_group_state`. No await between the change and the write: nothing else sees the change first.
        Returns the write's error code, None when there was nothing to write."""
        before = share_partition.snapshot()
        start_before = share_partition.start_offset
        writes = change()
        if not writes:
            return None
        error_code = self._persist(share_partition, writes, start_before)
        if error_code is not ErrorCode.NONE:
            share_partition.restore(before)
        return error_code

    def _changed(self, share_partition: SharePartition) -> None:
        """Records may be available again: complete the share fetches waiting on this partition and wake them."""
        self._complete_waiting(share_partition)
        topic = self._topic_name(share_partition.topic_id)
        if topic is not None:
            self.replica_manager.purgatory.notify_append((topic, share_partition.partition))

    def _topic_name(self, topic_id: bytes) -> str | None:
        return self.replica_manager.topic_names_by_id().get(uuid.UUID(bytes=topic_id))

    # -- ShareFetch --------------------------------------------------------------------------------------------
    async def fetch(
        self,
        group_id: str,
        member_id: str,
        partitions: Sequence[tuple[str, uuid.UUID, int]],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        max_records: int,
        batch_size: int,
        acquire_mode: ShareAcquireMode,
    ) -> dict[tuple[uuid.UUID, int], PartitionFetch]:
        """Acquire records for the member from `partitions` (topic name, id, index), waiting up to `max_wait_ms`
        while fewer than `min_bytes` can be acquired, as Kafka's DelayedShareFetch: records are acquired once, when
        the fetch completes (one `max_records` budget for the request, each log batch once), by this coroutine or
        by whatever made records available again (an append, a release, an expired lock) while it waited."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, max_wait_ms) / 1000
        fetch = DelayedShareFetch(group_id, member_id, min_bytes, max_bytes,
                                  max_records if max_records > 0 else _DEFAULT_MAX_RECORDS, batch_size, acquire_mode)
        loading = list(partitions)  # not loaded yet: `__share_group_state` may still be loading
        keys = [(topic, partition) for topic, _id, partition in partitions]
        self._waiting.append(fetch)
        try:
            while fetch.completed is None:
                if loading:
                    loading = await self._load_partitions(fetch, loading)
                remaining_ms = int((deadline - loop.time()) * 1000)
                if self._try_complete(fetch, force=bool(fetch.errors) or remaining_ms <= 0 or not partitions):
                    break
                # A partition whose state is loading is not acquirable yet, as Kafka's delayed share fetch waits for
                # its share partition's initialisation: look again shortly (the load wakes nobody).
                wait_ms = min(remaining_ms, _LOADING_RETRY_MS) if loading else remaining_ms
                await self.replica_manager.purgatory.wait_for_append(keys, wait_ms)
        finally:
            self._waiting.remove(fetch)
        assert fetch.completed is not None
        return fetch.completed

    async def _load_partitions(
        self, fetch: DelayedShareFetch, partitions: list[tuple[str, uuid.UUID, int]]
    ) -> list[tuple[str, uuid.UUID, int]]:
        """Load the fetch's share partitions; returns those still waiting for `__share_group_state` to load."""
        still_loading = []
        for topic, topic_id, partition in partitions:
            try:
                fetch.partitions[(topic_id, partition)] = (
                    topic, await self.share_partition(fetch.group_id, topic, topic_id, partition))
            except CoordinatorLoadInProgressError:
                still_loading.append((topic, topic_id, partition))
            except KafkaError as error:
                fetch.errors[(topic_id, partition)] = PartitionFetch(ErrorCode(error.error_code), str(error) or None)
        return still_loading

    def _try_complete(self, fetch: DelayedShareFetch, *, force: bool) -> bool:
        """Complete `fetch` when it can acquire something (or must answer now: `force`): acquire, one pass over
        its partitions with one record budget, and keep the result. False leaves nothing acquired."""
        if fetch.completed is not None:
            return True
        if not force and fetch.min_bytes > 1 and self._readable_bytes(fetch) < fetch.min_bytes:
            return False
        results: dict[tuple[uuid.UUID, int], PartitionFetch] = dict(fetch.errors)
        remaining_records = fetch.max_records
        for key, (topic, share_partition) in fetch.partitions.items():
            fetched = results[key] = PartitionFetch()
            if remaining_records <= 0:
                continue
            try:
                self._acquire(share_partition, fetch.member_id, topic, fetched, remaining_records, fetch.max_bytes,
                              fetch.batch_size, fetch.acquire_mode)
            except KafkaError as error:
                fetched.error = ErrorCode(error.error_code)
                fetched.message = str(error) or None
            remaining_records -= sum(a.count for a in fetched.acquired)
        if not force and not any(f.acquired for f in results.values()):
            return False
        fetch.completed = results
        self.on_acquired()
        return True

    def _readable_bytes(self, fetch: DelayedShareFetch) -> int:
        """The bytes a completion could read now (DelayedShareFetch's minBytes check), acquiring nothing."""
        total = 0
        for topic, share_partition in fetch.partitions.values():
            if not share_partition.can_acquire_records():
                continue
            read_bytes = min(fetch.max_bytes, _READ_BYTES)
            request = FetchPartitionRequest(topic, share_partition.partition, share_partition.next_fetch_offset(),
                                            read_bytes)
            reads, _total = self.replica_manager.read_partitions([request], read_bytes, _READ_COMMITTED if (
                share_partition.config.isolation_level is IsolationLevel.READ_COMMITTED) else _READ_UNCOMMITTED)
            read = reads[(topic, share_partition.partition)]
            total += 0 if read.error is not None else len(read.records)
        return total

    def _complete_waiting(self, share_partition: SharePartition) -> None:
        """Records of `share_partition` may be available again: the fetches waiting on it complete now, in the
        order they arrived (Kafka completes its delayed share fetches from the releasing thread), and wake."""
        key = (uuid.UUID(bytes=share_partition.topic_id), share_partition.partition)
        for fetch in list(self._waiting):
            if fetch.completed is None and fetch.group_id == share_partition.group_id and key in fetch.partitions:
                self._try_complete(fetch, force=False)

    def _acquire(
        self,
        share_partition: SharePartition,
        member_id: str,
        topic: str,
        fetched: PartitionFetch,
        max_records: int,
        max_bytes: int,
        batch_size: int,
        acquire_mode: ShareAcquireMode,
    ) -> None:
        if not share_partition.can_acquire_records():
            return  # at the record-lock limit with nothing released: no log read (Kafka's DelayedShareFetch)
        fetch_offset = share_partition.next_fetch_offset()
        read_committed = share_partition.config.isolation_level is IsolationLevel.READ_COMMITTED
        # At most max_records are acquired: reading the client's whole MaxBytes (50 MiB by default) to hand out a
        # few hundred records costs a copy of everything behind them. 1 MiB (max.partition.fetch.bytes' default)
        # per read; a larger first batch is still read whole (KIP-74), and the client fetches again for more.
        read_bytes = min(max_bytes, _READ_BYTES)
        request = FetchPartitionRequest(topic, share_partition.partition, fetch_offset, read_bytes)
        reads, _total = self.replica_manager.read_partitions(
            [request], read_bytes, _READ_COMMITTED if read_committed else _READ_UNCOMMITTED)
        read = reads[(topic, share_partition.partition)]
        if read.error is not None:
            raise read.error
        data = bytes(read.records)
        batches = []
        positions = []
        for batch in iter_batches(data):
            abort_marker = False
            if batch.is_control:
                records = list(batch.records())
                abort_marker = bool(records) and parse_control_record_type(records[0].key) == CONTROL_TYPE_ABORT
            batches.append(FetchedBatch(batch.base_offset, batch.last_offset, batch.producer_id,
                                        batch.is_transactional, batch.is_control, abort_marker))
            positions.append((batch.position, batch.position + batch.size_bytes, batch.base_offset,
                              batch.last_offset))
        if not batches:
            return
        aborted = [AbortedTransaction(pid, first) for pid, first in (read.aborted_transactions or [])]
        results: list[ShareAcquiredRecords] = []

        def acquire() -> list[PersisterStateBatch]:
            results.append(share_partition.acquire(
                member_id, fetch_offset, batches, max_fetch_records=max_records, batch_size=batch_size,
                acquire_mode=acquire_mode, aborted_transactions=aborted))
            return results[0].archived

        error_code = self._write_first(share_partition, acquire)
        if error_code not in (None, ErrorCode.NONE):  # the archived offsets could not be written: nothing was acquired
            raise _kafka_error(error_code, "The share partition's state could not be persisted.")
        result = results[0]
        if not result.acquired_records:
            return
        chunks = [
            data[start:end] for start, end, first, last in positions
            if any(a.first_offset <= last and first <= a.last_offset for a in result.acquired_records)
        ]
        fetched.records += b"".join(chunks)
        fetched.acquired.extend(result.acquired_records)

    # -- acknowledgements ------------------------------------------------------------------------------------
    async def acknowledge(
        self, group_id: str, member_id: str, topic: str, topic_id: uuid.UUID, partition: int,
        batches: Sequence[AcknowledgementBatch],
    ) -> tuple[ErrorCode, str | None]:
        """Apply one partition's acknowledgements and persist them before answering."""
        state = self.persister.read_state(group_id, topic_id, partition)
        if self.loaded and (group_id, topic_id, partition) not in self.share_partitions \
                and (state is None or state.start_offset == UNINITIALIZED_START_OFFSET):
            # Kafka acknowledges in the share partitions it has in memory only; one never read has none (its
            # state, if the group coordinator initialised it, is still at start offset -1)
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        try:
            share_partition = await self.share_partition(group_id, topic, topic_id, partition)
            error_code = self._write_first(share_partition, lambda: share_partition.acknowledge(member_id, batches))
        except ShareAcknowledgeError as error:
            return ErrorCode(error.error_code), error.message
        except KafkaError as error:
            return ErrorCode(error.error_code), str(error) or None
        if error_code is None:
            return ErrorCode.NONE, None
        if error_code is not ErrorCode.NONE:
            return error_code, "The acknowledgement could not be persisted."
        self._changed(share_partition)
        return ErrorCode.NONE, None

    def release_member(
        self, group_id: str, member_id: str, partitions: Sequence[tuple[bytes, int]] | None = None
    ) -> None:
        """The member closed its share session (epoch -1, or its connection closed): its acquired records go back
        (persisted). Leaving the group does not release them, as in Kafka: their locks run out."""
        for (group, topic_id, partition), share_partition in self.share_partitions.items():
            if group != group_id:
                continue
            if partitions is not None and (topic_id.bytes, partition) not in partitions:
                continue
            release = partial(share_partition.release_acquired_records, member_id)
            error_code = self._write_first(share_partition, release)
            if error_code is ErrorCode.NONE:
                self._changed(share_partition)
            elif error_code is not None:  # they stay acquired until their locks run out (the expiry writes again)
                log.warning("share group %s: could not release %s's records: %s", group_id, member_id,
                            error_code.name)

    def forget(self, group_id: str, topic_id: uuid.UUID, partition: int) -> None:
        """Drop a share partition from memory (its state was reset or deleted); it is loaded again on next use."""
        self.share_partitions.pop((group_id, topic_id, partition), None)

    def on_group_config(self, group_id: str, config: ShareGroupConfig) -> None:
        for (group, _topic_id, _partition), share_partition in self.share_partitions.items():
            if group == group_id:
                share_partition.config = config

    def delete_group_state(self, group_id: str) -> None:
        for key in [k for k in self.persister.share_partitions() if k[0] == group_id]:
            self.persister.delete_state(*key)
            self.share_partitions.pop(key, None)

    # -- locks -------------------------------------------------------------------------------------------------
    def next_lock_deadline_ms(self) -> int | None:
        deadlines = [d for d in (p.next_lock_deadline_ms() for p in self.share_partitions.values()) if d is not None]
        return min(deadlines) if deadlines else None

    def expire_acquisition_locks(self) -> ErrorCode:
        """Release the records whose locks ran out, written first; the first write error, if any (those records
        stay acquired in memory and in the log, and the caller retries)."""
        failed = ErrorCode.NONE
        for share_partition in self.share_partitions.values():
            error_code = self._write_first(share_partition, share_partition.expire_acquisition_locks)
            if error_code is ErrorCode.NONE:
                self._changed(share_partition)
            elif error_code is not None and failed is ErrorCode.NONE:
                failed = error_code
        return failed


def _kafka_error(code: ErrorCode, message: str) -> KafkaError:
    return ERROR_CLASSES.get(code, KafkaError)(message)

"""`ReplicaManager`: the one sync/async boundary between request handlers and storage.

Handlers never touch `storage` directly. Produce appends run inline on the event loop (an append is a
buffered `write()` into the page cache, measured cheaper than a thread hop; fsync happens elsewhere, never
here); topic administration, which fsyncs the topic registry, runs in a worker thread. Which broker leads a
partition is `PartitionStates`' (the handlers check it); batches are stamped with its leader epoch. One copy of
the data, followers simulated as caught up: the high watermark is the log end offset.
Event-loop thread only, except the `*_blocking` methods, which run in `asyncio.to_thread`.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from minikafka.broker.purgatory import FetchPurgatory, TopicPartition
from minikafka.protocol.errors import (
    InvalidRecordError,
    KafkaError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
)
from minikafka.storage.log_manager import LogManager, TopicMetadata
from minikafka.storage.producer_state import ProducerStateEntry
from minikafka.storage.unified_log import LogAppendInfo, UnifiedLog

LEADER_EPOCH = 0
_NO_KEY_MESSAGE = "Compacted topic cannot accept message without key"
READ_UNCOMMITTED = 0


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """What one partition contributes to a Fetch response."""

    error: KafkaError | None
    #: whole batches as read from the segment (a memoryview when the read ended inside a batch): never copied
    records: bytes | memoryview
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    #: (producer id, first offset) of the aborted transactions in `records`; None for read_uncommitted
    aborted_transactions: list[tuple[int, int]] | None = None


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """What the one log dir contributes to DescribeLogDirs: its absolute path, the size of each hosted
    partition's segments, and the volume's total/usable bytes (-1 when the dir is offline)."""

    log_dir: str
    error: KafkaError | None = None
    #: (topic, partition) -> bytes of the partition's segment files, in topic-partition order
    partition_sizes: dict[TopicPartition, int] = field(default_factory=dict)
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True, slots=True)
class FetchPartitionRequest:
    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    #: a follower replica serving a consumer (KIP-392) reads no further than its own log end offset (a held-back
    #: replica lacks the rest: `FollowerStates`); None for the leader
    replica_end_offset: int | None = None


class ReplicaManager:
    """Routes produce, fetch and offset lookups to the partition logs, and wakes waiting fetches."""

    def __init__(self, log_manager: LogManager, on_keyless_records: Callable[[int], None] | None = None) -> None:
        self.log_manager = log_manager
        self.purgatory = FetchPurgatory()
        self._on_keyless_records = on_keyless_records
        #: the partition's current leader epoch (PartitionStates.leader_epoch once the broker started)
        self.leader_epoch_of: Callable[[str, int], int] = lambda _topic, _partition: LEADER_EPOCH

    def log_for(self, topic: str, partition: int) -> UnifiedLog:
        log = self.log_manager.get_log(topic, partition)
        if log is None:
            raise UnknownTopicOrPartitionError(
                f"This server does not host this topic-partition: {topic}-{partition}"
            )
        return log

    # -- produce ---------------------------------------------------------------------------------------------
    def append(self, topic: str, partition: int, records: bytes, log: UnifiedLog | None = None,
               leader_epoch: int | None = None) -> LogAppendInfo:
        """Append one partition's batch as leader; raises the KafkaError for this partition. `log` and
        `leader_epoch`: the partition's log and current leader epoch, when the caller has looked them up already."""
        if log is None:
            log = self.log_for(topic, partition)
        if leader_epoch is None:
            leader_epoch = self.leader_epoch_of(topic, partition)
        try:
            info = log.append_as_leader(records, leader_epoch=leader_epoch)
        except InvalidRecordError as error:
            keyless = sum(1 for _index, message in error.record_errors if message.startswith(_NO_KEY_MESSAGE))
            if keyless and self._on_keyless_records is not None:
                self._on_keyless_records(keyless)
            raise
        if not info.duplicate:
            self.purgatory.notify_append((topic, partition))
        return info

    def write_txn_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int, commit: bool) -> LogAppendInfo:
        """Write a COMMIT/ABORT marker (WriteTxnMarkers from the transaction coordinator); raises the
        partition's KafkaError. Wakes waiting fetches: a marker moves the last stable offset."""
        info = self.log_for(topic, partition).append_transaction_marker(
            producer_id, producer_epoch, coordinator_epoch, commit, leader_epoch=self.leader_epoch_of(topic, partition))
        self.purgatory.notify_append((topic, partition))
        return info

    def log_start_offset(self, topic: str, partition: int) -> int:
        """The partition's log start offset, or -1 when it is not hosted here (Produce error answers)."""
        log = self.log_manager.get_log(topic, partition)
        return -1 if log is None else log.log_start_offset

    # -- fetch -----------------------------------------------------------------------------------------------
    def read_partitions(
        self, requests: list[FetchPartitionRequest], max_bytes: int, isolation_level: int
    ) -> tuple[dict[TopicPartition, PartitionRead], int]:
        """One pass over the requested partitions under the response-level `max_bytes` budget (KIP-74:
        the first partition with data always returns at least one whole batch)."""
        results: dict[TopicPartition, PartitionRead] = {}
        remaining = max_bytes
        total = 0
        for request in requests:
            key = (request.topic, request.partition)
            try:  # leadership and the client's leader epoch are checked by the handler (PartitionStates)
                log = self.log_for(request.topic, request.partition)
                high_watermark = log.high_watermark
                last_stable = log.last_stable_offset
                if request.replica_end_offset is not None:
                    high_watermark = min(high_watermark, request.replica_end_offset)
                    last_stable = min(last_stable, high_watermark)
                limit = min(request.partition_max_bytes, remaining)
                read_committed = isolation_level != READ_UNCOMMITTED
                records: bytes | memoryview = b""
                aborted: list[tuple[int, int]] | None = [] if read_committed else None
                if limit > 0 or total == 0:
                    data = log.read(
                        request.fetch_offset,
                        max(limit, 0),
                        max_offset=last_stable if read_committed else high_watermark,
                        min_one_message=total == 0,
                        include_aborted_transactions=read_committed,
                    )
                    records = data.records
                    if data.aborted_transactions is not None:
                        aborted = [(txn.producer_id, txn.first_offset) for txn in data.aborted_transactions]
                results[key] = PartitionRead(None, records, high_watermark, last_stable, log.log_start_offset,
                                             aborted)
                remaining -= len(records)
                total += len(records)
            except KafkaError as error:
                results[key] = PartitionRead(error, b"")
        return results, total

    async def fetch(
        self,
        requests: list[FetchPartitionRequest],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int,
    ) -> dict[TopicPartition, PartitionRead]:
        """Read now; if fewer than `min_bytes` are available and nothing failed, wait for appends up to
        `max_wait_ms` and read again (Kafka's DelayedFetch)."""
        # time.monotonic, not the loop's clock: Python 3.11's get_running_loop() is a getpid() system call
        deadline = time.monotonic() + max_wait_ms / 1000
        while True:
            results, total = self.read_partitions(requests, max_bytes, isolation_level)
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            has_error = any(read.error is not None for read in results.values())
            if total >= min_bytes or has_error or remaining_ms <= 0 or not requests:
                return results
            await self.purgatory.wait_for_append(results.keys(), remaining_ms)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords: move the log start offset to `offset` (-1 = the high watermark); returns the new
        low watermark. POLICY_VIOLATION unless cleanup.policy includes delete, as Kafka answers."""
        log = self.log_for(topic, partition)
        if not log.config.delete:
            raise PolicyViolationError(
                f"Records of partition {topic}-{partition} can not be deleted due to the configured policy"
            )
        if offset == -1:
            offset = log.high_watermark
        if offset < 0:
            raise OffsetOutOfRangeError(f"Cannot delete records of {topic}-{partition} before offset {offset}")
        log.maybe_increment_log_start_offset(offset)
        return log.log_start_offset

    # -- offsets ---------------------------------------------------------------------------------------------
    def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> tuple[int, int]:
        """(offset, timestamp) for ListOffsets; (-1, -1) when no record has a timestamp >= the target."""
        found = self.log_for(topic, partition).fetch_offset_by_timestamp(timestamp_ms)
        return found if found is not None else (-1, -1)

    # -- describe --------------------------------------------------------------------------------------------
    def active_producers(self, topic: str, partition: int) -> list[ProducerStateEntry]:
        """DescribeProducers: copies of the partition's producer entries; raises the partition's KafkaError."""
        return self.log_for(topic, partition).active_producers()

    def describe_log_dir(self, partitions: Collection[TopicPartition] | None) -> LogDirDescription:
        """DescribeLogDirs for the requested partitions (None = every hosted one); partitions not hosted here
        are left out, as Kafka does. KAFKA_STORAGE_ERROR for the whole dir once it is offline."""
        log_dir = os.path.abspath(self.log_manager.log_dir)
        if self.log_manager.offline_reason is not None:
            return LogDirDescription(log_dir, KafkaStorageError(f"Log directory {log_dir} is offline"))
        wanted = None if partitions is None else set(partitions)
        logs = sorted(self.log_manager.all_logs(), key=lambda log: (log.topic, log.partition))
        try:
            volume = os.statvfs(log_dir)
        except OSError as exc:
            return LogDirDescription(log_dir, KafkaStorageError(f"Log directory {log_dir}: {exc}"))
        return LogDirDescription(
            log_dir,
            partition_sizes={(log.topic, log.partition): log.size_bytes for log in logs
                             if wanted is None or (log.topic, log.partition) in wanted},
            total_bytes=volume.f_blocks * volume.f_frsize,  # Java's FileStore.getTotalSpace()
            usable_bytes=volume.f_bavail * volume.f_frsize,  # FileStore.getUsableSpace()
        )

    # -- topics ----------------------------------------------------------------------------------------------
    def topics(self) -> Mapping[str, TopicMetadata]:
        return self.log_manager.topics()

    def topic(self, name: str) -> TopicMetadata | None:
        return self.log_manager.topic(name)

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        return self.log_manager.topic_names_by_id()

    def require_partition(self, topic: str, partition: int) -> None:
        metadata = self.log_manager.topic(topic)
        if metadata is None or not 0 <= partition < metadata.num_partitions:
            raise UnknownTopicOrPartitionError(f"{topic}-{partition}")

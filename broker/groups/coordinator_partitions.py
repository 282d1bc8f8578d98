"""`CoordinatorPartitions`: what a coordinator's state manager does with its internal topic's partitions.

Shared by the group coordinator (`__consumer_offsets`) and the transaction coordinator
(`__transaction_state`): which partition owns a key (Kafka's partitionFor), creation of the topic on first
use, keyed appends with the coordinator's mapping of append errors, and the load of every partition on
startup (COORDINATOR_LOAD_IN_PROGRESS meanwhile). A load runs on the event loop in slices of at most
`LOAD_SLICE_MS` (Kafka loads on a thread of its own; here the cache is the loop's, so the load yields instead): a
broker restarting onto a large `__consumer_offsets` keeps answering every other request while it loads.
Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import ClassVar

from minikafka.broker.groups.coordinator_partitioning import partition_for
from minikafka.broker.groups.offsets_topic import KeyValue, OffsetsTopic, TxnProducer
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.clock import Clock

log = logging.getLogger(__name__)

#: the longest a coordinator load keeps the event loop before it lets other requests run
LOAD_SLICE_MS = 5
#: the pause after each slice: a request needs a few loop iterations (read, handle, write), which a bare
#: `sleep(0)` would interleave with further slices
LOAD_PAUSE_MS = 1


class CoordinatorPartitions:
    """Partitioning, creation, appends and loading of one coordinator's internal topic; subclasses own the
    cache, implement `load_partition` and name their topic, key and error mapping below."""

    #: The internal topic and what its keys are (for log lines).
    topic_name: ClassVar[str]
    key_name: ClassVar[str]
    #: The append errors that mean "too large", and the code the coordinator's clients get instead.
    too_large_errors: ClassVar[frozenset[ErrorCode]]
    too_large_error: ClassVar[ErrorCode]

    def __init__(self, topic: OffsetsTopic, clock: Clock, default_num_partitions: int, segment_bytes: int) -> None:
        self.topic = topic
        self.clock = clock
        self.loading = False
        self._default_num_partitions = default_num_partitions
        self._segment_bytes = segment_bytes

    @classmethod
    def append_error(cls, error: KafkaError) -> ErrorCode:
        """Kafka's mapping of a failed append to the internal topic to the coordinator API's error. A storage
        error (a full disk) is NOT_COORDINATOR, as in Kafka: clients look the coordinator up again and retry."""
        if error.error_code in cls.too_large_errors:
            return cls.too_large_error
        if error.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    # -- partitions --------------------------------------------------------------------------------------
    def num_partitions(self) -> int:
        return self.topic.num_partitions() or self._default_num_partitions

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions())

    async def ensure_topic(self) -> None:
        if self.topic.num_partitions() is None:
            await self.topic.create(self._default_num_partitions, self._segment_bytes)

    # -- writes ------------------------------------------------------------------------------------------
    def _append(self, key: str, records: list[KeyValue], producer: TxnProducer | None = None) -> ErrorCode:
        """Append `records` to `key`'s partition as one batch; the coordinator's error code on failure."""
        if self.topic.num_partitions() is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            self.topic.append(self.partition_for(key), records, self.clock.time_ms(), producer)
        except KafkaError as error:
            log.warning("append to %s for %s %.200s failed: %r", self.topic_name, self.key_name, key, error)
            return self.append_error(error)
        return ErrorCode.NONE

    # -- loading -----------------------------------------------------------------------------------------
    async def load_all(self) -> None:
        """Rebuild the cache from every partition, giving the event loop `LOAD_PAUSE_MS` after every
        `LOAD_SLICE_MS` of work (the steps of `load_partition`) and between partitions. `loading` is set
        meanwhile, here only."""
        partitions = self.topic.num_partitions()
        if partitions is None:
            return
        self.loading = True
        try:
            for partition in range(partitions):
                slice_ends = time.monotonic() + LOAD_SLICE_MS / 1000
                for _ in self.load_partition(partition):
                    if time.monotonic() >= slice_ends:
                        await asyncio.sleep(LOAD_PAUSE_MS / 1000)
                        slice_ends = time.monotonic() + LOAD_SLICE_MS / 1000
                await asyncio.sleep(0)
        finally:
            self.loading = False

    def load_partition(self, partition: int) -> Iterator[None]:
        """Replay one partition into the cache, yielding after each small step (a batch, a record, a group)
        so that `load_all` can pause it; nothing outside the coordinator reads the cache until `loading` ends."""
        raise NotImplementedError

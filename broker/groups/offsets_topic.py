"""`OffsetsTopic`: the coordinator's view of `__consumer_offsets` (append keyed records, read them back).

`ReplicaOffsetsTopic` goes through the ReplicaManager (the one sync/async boundary) and the AdminManager
(creation with cleanup.policy=compact on first use). `MemoryOffsetsTopic` keeps real v2 batches in
memory for synchronous tests. Both are event-loop-thread only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from protocol.errors import TopicAlreadyExistsError
from protocol.records import Record, build_batch, iter_batches

if TYPE_CHECKING:
    from broker.admin_manager import AdminManager
    from broker.replica_manager import ReplicaManager

OFFSETS_TOPIC = "__consumer_offsets"

KeyValue = tuple[bytes, bytes | None]


class OffsetsTopic(Protocol):
    def num_partitions(self) -> int | None:
        """The partition count, or None while the topic does not exist."""
        ...

    async def create(self, num_partitions: int, segment_bytes: int) -> None: ...

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int) -> None:
        """Append as one batch; raises the partition's KafkaError."""
        ...

    def read(self, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int]:
        """(record batch bytes from `offset`, high watermark)."""
        ...

    def log_start_offset(self, partition: int) -> int: ...


def batch_of(records: Sequence[KeyValue], now_ms: int) -> bytes:
    return build_batch([Record(index, now_ms, key, value) for index, (key, value) in enumerate(records)], base_offset=0)


def iter_records(topic: OffsetsTopic, partition: int, buffer_bytes: int) -> Iterator[tuple[int, KeyValue]]:
    """Every (offset, (key, value)) of one partition from the log start to the high watermark, in order;
    control batches (transaction markers) skipped."""
    offset = topic.log_start_offset(partition)
    while True:
        data, high_watermark = topic.read(partition, offset, buffer_bytes)
        if offset >= high_watermark or not data:
            return
        for batch in iter_batches(data):
            if batch.next_offset <= offset:
                continue
            if not batch.is_control:
                for record in batch.records():
                    if record.offset >= offset and record.key is not None:
                        yield record.offset, (record.key, record.value)
            offset = batch.next_offset
        if offset >= high_watermark:
            return


class ReplicaOffsetsTopic:
    """`__consumer_offsets` in the broker's own partition logs."""

    def __init__(self, replica_manager: ReplicaManager, admin: AdminManager) -> None:
        self.replica_manager = replica_manager
        self.admin = admin

    def num_partitions(self) -> int | None:
        metadata = self.replica_manager.topic(OFFSETS_TOPIC)
        return None if metadata is None else metadata.num_partitions

    async def create(self, num_partitions: int, segment_bytes: int) -> None:
        try:
            await self.admin.create_topic(
                OFFSETS_TOPIC,
                num_partitions,
                1,
                {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes), "compression.type": "producer"},
            )
        except TopicAlreadyExistsError:
            pass

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int) -> None:
        self.replica_manager.append(OFFSETS_TOPIC, partition, batch_of(records, now_ms))

    def read(self, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int]:
        from broker.replica_manager import FetchPartitionRequest

        request = FetchPartitionRequest(OFFSETS_TOPIC, partition, offset, max_bytes)
        reads, _total = self.replica_manager.read_partitions([request], max_bytes, 0)
        read = reads[(OFFSETS_TOPIC, partition)]
        if read.error is not None:
            raise read.error
        return read.records, read.high_watermark

    def log_start_offset(self, partition: int) -> int:
        return int(self.replica_manager.log_for(OFFSETS_TOPIC, partition).log_start_offset)


class MemoryOffsetsTopic:
    """An in-memory `__consumer_offsets` holding real v2 batches (tests and tools)."""

    def __init__(self) -> None:
        self.partitions: list[list[bytes]] | None = None
        self.fail_with: Exception | None = None

    def num_partitions(self) -> int | None:
        return None if self.partitions is None else len(self.partitions)

    async def create(self, num_partitions: int, segment_bytes: int) -> None:
        self.create_now(num_partitions)

    def create_now(self, num_partitions: int) -> None:
        if self.partitions is None:
            self.partitions = [[] for _ in range(num_partitions)]

    def _end_offset(self, partition: int) -> int:
        assert self.partitions is not None
        batches = self.partitions[partition]
        return next(iter_batches(batches[-1])).next_offset if batches else 0

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        assert self.partitions is not None
        base = self._end_offset(partition)
        self.partitions[partition].append(
            build_batch(
                [Record(base + index, now_ms, key, value) for index, (key, value) in enumerate(records)],
                base_offset=base,
            )
        )

    def read(self, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int]:
        assert self.partitions is not None
        out = bytearray()
        for batch in self.partitions[partition]:
            if next(iter_batches(batch)).next_offset > offset and (not out or len(out) + len(batch) <= max_bytes):
                out += batch
        return bytes(out), self._end_offset(partition)

    def log_start_offset(self, partition: int) -> int:
        return 0

    def records(self, partition: int) -> list[KeyValue]:
        return [kv for _offset, kv in iter_records(self, partition, 1 << 20)]

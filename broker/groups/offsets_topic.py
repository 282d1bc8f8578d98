"""`OffsetsTopic`: a coordinator's view of its internal topic (append keyed records, read them back) —
`__consumer_offsets` for the group coordinator, `__transaction_state` for the transaction coordinator.

`ReplicaOffsetsTopic` goes through the ReplicaManager (the one sync/async boundary; appends bypass the
Produce handler's refusal of internal topics) and the AdminManager (creation with cleanup.policy=compact
on first use). `MemoryOffsetsTopic` keeps real v2 batches in memory for synchronous tests. Transactional
offset commits are appended as transactional batches carrying the producer's id and epoch, as Kafka does.
Both are event-loop-thread only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minikafka.protocol.errors import TopicAlreadyExistsError
from minikafka.protocol.records import Record, RecordBatch, build_batch, iter_batches

if TYPE_CHECKING:
    from minikafka.broker.admin_manager import AdminManager
    from minikafka.broker.replica_manager import ReplicaManager

OFFSETS_TOPIC = "__consumer_offsets"

KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class TxnProducer:
    """The producer a transactional append is written for."""

    producer_id: int
    producer_epoch: int


class OffsetsTopic(Protocol):
    def num_partitions(self) -> int | None:
        """The partition count, or None while the topic does not exist."""
        ...

    async def create(self, num_partitions: int, segment_bytes: int) -> None: ...

    def append(
        self, partition: int, records: Sequence[KeyValue], now_ms: int, producer: TxnProducer | None = None
    ) -> None:
        """Append as one batch (transactional when `producer` is given); raises the partition's KafkaError."""
        ...

    def read(self, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int]:
        """(record batch bytes from `offset`, high watermark)."""
        ...

    def log_start_offset(self, partition: int) -> int: ...


def batch_of(
    records: Sequence[KeyValue], now_ms: int, base_offset: int = 0, producer: TxnProducer | None = None,
    base_sequence: int = 0,
) -> bytes:
    built = [Record(base_offset + index, now_ms, key, value) for index, (key, value) in enumerate(records)]
    if producer is None:
        return build_batch(built, base_offset=base_offset)
    return build_batch(built, base_offset=base_offset, producer_id=producer.producer_id,
                       producer_epoch=producer.producer_epoch, base_sequence=base_sequence, is_transactional=True)


def iter_log(topic: OffsetsTopic, partition: int, buffer_bytes: int) -> Iterator[tuple[RecordBatch, list[Record]]]:
    """Every batch of one partition from the log start to the high watermark, in order, with its records
    (those at or after the read position; control batches included, for their markers)."""
    offset = topic.log_start_offset(partition)
    while True:
        data, high_watermark = topic.read(partition, offset, buffer_bytes)
        if offset >= high_watermark or not data:
            return
        for batch in iter_batches(data):
            if batch.next_offset <= offset:
                continue
            yield batch, [record for record in batch.records() if record.offset >= offset]
            offset = batch.next_offset
        if offset >= high_watermark:
            return


def iter_records(topic: OffsetsTopic, partition: int, buffer_bytes: int) -> Iterator[tuple[int, KeyValue]]:
    """Every keyed (offset, (key, value)) of one partition, in order; control batches skipped."""
    for batch, records in iter_log(topic, partition, buffer_bytes):
        if not batch.is_control:
            for record in records:
                if record.key is not None:
                    yield record.offset, (record.key, record.value)


class ReplicaOffsetsTopic:
    """An internal topic (`__consumer_offsets` unless named otherwise) in the broker's own partition logs."""

    def __init__(self, replica_manager: ReplicaManager, admin: AdminManager, name: str = OFFSETS_TOPIC) -> None:
        self.replica_manager = replica_manager
        self.admin = admin
        self.name = name

    def num_partitions(self) -> int | None:
        metadata = self.replica_manager.topic(self.name)
        return None if metadata is None else metadata.num_partitions

    async def create(self, num_partitions: int, segment_bytes: int) -> None:
        try:
            await self.admin.create_topic(
                self.name,
                num_partitions,
                1,
                {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes), "compression.type": "producer"},
            )
        except TopicAlreadyExistsError:
            pass

    def append(
        self, partition: int, records: Sequence[KeyValue], now_ms: int, producer: TxnProducer | None = None
    ) -> None:
        sequence = 0 if producer is None else self._next_sequence(partition, producer)
        self.replica_manager.append(self.name, partition, batch_of(records, now_ms, 0, producer, sequence))

    def _next_sequence(self, partition: int, producer: TxnProducer) -> int:
        """Kafka does not check sequences of coordinator appends; our log does, so continue the producer's."""
        entry = self.replica_manager.log_for(self.name, partition).producer_state.producers.get(producer.producer_id)
        if entry is None or entry.producer_epoch != producer.producer_epoch or entry.last_sequence < 0:
            return 0
        return (int(entry.last_sequence) + 1) & 0x7FFFFFFF

    def read(self, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int]:
        from minikafka.broker.replica_manager import FetchPartitionRequest

        request = FetchPartitionRequest(self.name, partition, offset, max_bytes)
        reads, _total = self.replica_manager.read_partitions([request], max_bytes, 0)
        read = reads[(self.name, partition)]
        if read.error is not None:
            raise read.error
        return bytes(read.records), read.high_watermark  # a Fetch read may be a memoryview

    def log_start_offset(self, partition: int) -> int:
        return int(self.replica_manager.log_for(self.name, partition).log_start_offset)


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

    def append(
        self, partition: int, records: Sequence[KeyValue], now_ms: int, producer: TxnProducer | None = None
    ) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        assert self.partitions is not None
        self.partitions[partition].append(batch_of(records, now_ms, self._end_offset(partition), producer))

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

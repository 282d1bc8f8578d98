"""The vocabulary of a share partition (KIP-932) as Apache Kafka 4.3.1 names it: record states, acknowledge types,
acquire modes, the acquired/acknowledged/persisted offset ranges, and the errors a bad acknowledgement gets.

Plain immutable values; thread-safe.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.broker.share.auto_offset_reset import ShareAutoOffsetReset

__all__ = [
    "INVALID_RECORD_STATE",
    "INVALID_REQUEST",
    "AbortedTransaction",
    "AcknowledgeType",
    "AcknowledgementBatch",
    "AcquiredRecords",
    "FetchedBatch",
    "IsolationLevel",
    "PersisterStateBatch",
    "RecordState",
    "ShareAcknowledgeError",
    "ShareAcquireMode",
    "ShareGroupConfig",
    "validate_acknowledgement_batches",
]

#: Kafka's error codes for a refused acknowledgement (`org.apache.kafka.common.protocol.Errors`).
INVALID_REQUEST = 42
INVALID_RECORD_STATE = 121


class RecordState(enum.IntEnum):
    """Delivery state of one offset; the ids are the `DeliveryState` bytes of ShareSnapshot/ShareUpdate."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # KIP-1191; Kafka 4.3 defines it, nothing here enters it
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(enum.IntEnum):
    """ShareAcknowledge/ShareFetch `AcknowledgeTypes` bytes (0 is a gap: the client saw no record there)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class ShareAcquireMode(enum.Enum):
    """The consumer's `share.acquire.mode` (ShareFetch v2 `ShareAcquireMode` byte)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class IsolationLevel(enum.Enum):
    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"


class ShareAcknowledgeError(Exception):
    """An acknowledgement Kafka refuses; `error_code` is what the partition's response carries."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One `AcquiredRecords` entry of a ShareFetch response."""

    first_offset: int
    last_offset: int
    delivery_count: int

    @property
    def count(self) -> int:
        return self.last_offset - self.first_offset + 1


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """One `AcknowledgementBatches` entry: one ack type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PersisterStateBatch:
    """A state batch as the share coordinator stores it (ShareSnapshotValue/ShareUpdateValue `StateBatches`)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """What a share partition needs to know of one record batch the log returned (not its records)."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False
    is_abort_marker: bool = False  # a control batch whose first record is an ABORT marker


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """A Fetch response's `AbortedTransactions` entry for the range read."""

    producer_id: int
    first_offset: int


_LATEST = ShareAutoOffsetReset("latest")


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    """The share-partition knobs with Kafka 4.3.1's defaults (`group.share.*` broker-wide, `share.*` per group)."""

    record_lock_duration_ms: int = 30_000  # group.share.record.lock.duration.ms / share.record.lock.duration.ms
    delivery_count_limit: int = 5  # group.share.delivery.count.limit / share.delivery.count.limit
    partition_max_record_locks: int = 2000  # group.share.partition.max.record.locks
    renew_acknowledge_enable: bool = True  # share.renew.acknowledge.enable
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED  # share.isolation.level
    auto_offset_reset: ShareAutoOffsetReset = _LATEST  # share.auto.offset.reset


def validate_acknowledgement_batches(
    batches: Sequence[AcknowledgementBatch], *, is_renew_ack: bool, renew_supported: bool
) -> None:
    """Kafka's request-level checks of one partition's acknowledgement batches (KafkaApis
    validateAcknowledgementBatches): each batch well formed, in offset order, one type or one per offset, types
    known to the request version, RENEW only in a request flagged IsRenewAck. INVALID_REQUEST otherwise."""
    previous_last = -1
    max_type = AcknowledgeType.RENEW if renew_supported else AcknowledgeType.REJECT
    for batch in batches:
        types = batch.acknowledge_types
        if batch.first_offset > batch.last_offset or batch.first_offset < previous_last:
            raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledgement batch {batch}.")
        if not types or (len(types) > 1 and len(types) != batch.last_offset - batch.first_offset + 1):
            raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
        if any(not 0 <= t <= max_type for t in types) or (AcknowledgeType.RENEW in types and not is_renew_ack):
            raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
        previous_last = batch.last_offset

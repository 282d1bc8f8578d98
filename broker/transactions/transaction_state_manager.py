"""`TransactionStateManager`: the transactional-id cache and its persistence in `__transaction_state`.

Owns every `TransactionMetadata` by transactional id, writes state transitions (and tombstones of expired
ids) to the id's partition of `__transaction_state`, rebuilds the cache from the topic on startup, and
finds timed-out transactions and expired ids. Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from minikafka.broker.groups.coordinator_partitions import CoordinatorPartitions
from minikafka.broker.groups.offsets_topic import OffsetsTopic, iter_records
from minikafka.broker.transactions.config import TransactionConfig
from minikafka.broker.transactions.transaction_log import (
    TRANSACTION_STATE_TOPIC,
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from minikafka.broker.transactions.transaction_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from minikafka.broker.transactions.transaction_version import transaction_log_value_version
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock

log = logging.getLogger(__name__)

class TransactionStateManager(CoordinatorPartitions):
    """Transactional-id cache + `__transaction_state` reads and writes (partitioning, appends and the load
    loop are `CoordinatorPartitions`')."""

    topic_name = TRANSACTION_STATE_TOPIC
    key_name = "transactional id"
    too_large_errors = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})
    too_large_error = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, config: TransactionConfig, topic: OffsetsTopic, clock: Clock) -> None:
        super().__init__(topic, clock, config.state_log_num_partitions, config.state_log_segment_bytes)
        self.config = config
        self.transactions: dict[str, TransactionMetadata] = {}

    # -- cache -------------------------------------------------------------------------------------------
    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self.transactions.get(transactional_id)

    def put_if_not_exists(self, metadata: TransactionMetadata) -> TransactionMetadata:
        return self.transactions.setdefault(metadata.transactional_id, metadata)

    # -- writes ------------------------------------------------------------------------------------------
    def append_transaction_to_log(self, metadata: TransactionMetadata, transit: TxnTransitMetadata) -> ErrorCode:
        """Persist `transit`, then apply it to `metadata` (Kafka's appendTransactionToLog). On failure the
        cache keeps the previous state."""
        record = (encode_key(metadata.transactional_id),
                  encode_value(transit, transaction_log_value_version(self.config.transaction_version)))
        error = self._append(metadata.transactional_id, [record])
        if error is ErrorCode.NONE:
            metadata.complete_transition(transit)
        return error

    def remove_expired(self, metadata: TransactionMetadata) -> ErrorCode:
        """Tombstone an expired id and drop it from the cache."""
        error = self._append(metadata.transactional_id, [(encode_key(metadata.transactional_id), None)])
        if error is ErrorCode.NONE:
            metadata.complete_transition(metadata.prepare_dead())
            self.transactions.pop(metadata.transactional_id, None)
        return error

    # -- timers ------------------------------------------------------------------------------------------
    def timed_out_transactions(self, now_ms: int) -> list[TransactionMetadata]:
        """Ongoing transactions whose start is older than their timeout (Kafka's timedOutTransactions)."""
        return [
            metadata
            for metadata in self.transactions.values()
            if metadata.state is TransactionState.ONGOING
            and metadata.txn_start_timestamp_ms + metadata.txn_timeout_ms < now_ms
        ]

    def expired_transactional_ids(self, now_ms: int) -> list[TransactionMetadata]:
        """Idle ids not updated for transactional.id.expiration.ms."""
        expiration_ms = self.config.transactional_id_expiration_ms
        return [
            metadata
            for metadata in self.transactions.values()
            if metadata.state in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                                  TransactionState.COMPLETE_ABORT)
            and metadata.txn_last_update_timestamp_ms + expiration_ms <= now_ms
        ]

    # -- loading -----------------------------------------------------------------------------------------
    def load_partition(self, partition: int) -> Iterator[None]:
        values: dict[str, TransactionLogValue | None] = {}
        buffer_bytes = self.config.state_log_load_buffer_size
        for _offset, (raw_key, raw_value) in iter_records(self.topic, partition, buffer_bytes):
            yield
            try:
                transactional_id = decode_key(raw_key)
                values[transactional_id] = None if raw_value is None else decode_value(raw_value)
            except (ValueError, UnicodeDecodeError):
                log.warning("skipping an undecodable record in %s-%d", TRANSACTION_STATE_TOPIC, partition)
        for transactional_id, value in values.items():
            yield
            if value is None:
                self.transactions.pop(transactional_id, None)
                continue
            self.transactions[transactional_id] = TransactionMetadata(
                transactional_id,
                value.producer_id,
                value.previous_producer_id,
                value.producer_epoch,
                -1,
                value.transaction_timeout_ms,
                value.state,
                set(value.topic_partitions),
                value.start_timestamp_ms,
                value.last_update_timestamp_ms,
                next_producer_id=value.next_producer_id,
                client_transaction_version=value.client_transaction_version,
            )

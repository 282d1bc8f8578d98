"""`transaction.version` (KIP-890): the feature levels and what each request version implies.

Kafka's TransactionVersion: level 0 is the classic protocol, 1 adds the flexible `__transaction_state` value
format's tagged fields to the cluster's vocabulary (KIP-890 part 1 verification), 2 is KIP-890 part 2 — the
producer epoch is bumped at the end of every transaction (EndTxn v5) and a transactional Produce (v12+) or
TxnOffsetCommit (v5+) adds its partition to the transaction itself. The broker finalizes one level
(`minikafka.transaction.version`, default 2, as a Kafka 4 cluster formats itself); what the coordinator does
for a request follows the request's version (Kafka's `transactionVersionForEndTxn` and
`transactionVersionForAddPartitionsToTxn`), the finalized level picks the `__transaction_state` value format.
Pure functions and constants; thread-safe.
"""

from __future__ import annotations

import enum

FEATURE_NAME = "transaction.version"
TV_0 = 0
TV_1 = 1
TV_2 = 2
MAX_TRANSACTION_VERSION = TV_2


def supports_epoch_bump(level: int) -> bool:
    """TV_2: EndTxn bumps the producer epoch (and rotates the producer id once the epoch is exhausted)."""
    return level >= TV_2


def transaction_log_value_version(level: int) -> int:
    """`TransactionLogValue` version written at a finalized level: the flexible v1 from TV_2 on."""
    return 1 if level >= TV_2 else 0


def for_end_txn(api_version: int) -> int:
    """Kafka's transactionVersionForEndTxn: EndTxn v5+ comes from a TV_2 client, whatever the cluster level."""
    return TV_2 if api_version > 4 else TV_0


def for_add_partitions_to_txn(api_version: int) -> int:
    """Kafka's transactionVersionForAddPartitionsToTxn: v4+ is the broker's own (implicit add) request."""
    return TV_2 if api_version > 3 else TV_0


class SupportedOperation(enum.Enum):
    """Kafka's AddPartitionsToTxnManager.TransactionSupportedOperation: what a verifying request's version
    lets the broker do when the partition is not in the transaction yet."""

    #: Answer INVALID_TXN_STATE (clients before KIP-890's TRANSACTION_ABORTABLE).
    DEFAULT_ERROR = "defaultError"
    #: Answer TRANSACTION_ABORTABLE (Produce v11, TxnOffsetCommit v4).
    GENERIC_ERROR_SUPPORTED = "genericErrorSupported"
    #: Add the partition to the transaction (Produce v12+, TxnOffsetCommit v5+: TV_2 clients).
    ADD_PARTITION = "addPartition"

    @classmethod
    def for_produce(cls, api_version: int) -> SupportedOperation:
        if api_version > 11:
            return cls.ADD_PARTITION
        return cls.GENERIC_ERROR_SUPPORTED if api_version > 10 else cls.DEFAULT_ERROR

    @classmethod
    def for_txn_offset_commit(cls, api_version: int) -> SupportedOperation:
        if api_version > 4:
            return cls.ADD_PARTITION
        return cls.GENERIC_ERROR_SUPPORTED if api_version > 3 else cls.DEFAULT_ERROR

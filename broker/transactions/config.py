"""`TransactionConfig`: the transaction coordinator's broker settings, by Apache Kafka's names and defaults.

`TRANSACTION_CONFIG_DEF` is the table `KafkaConfig` consults for these keys; `TransactionConfig.from_props`
parses and validates them. Immutable; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.broker.transactions.transaction_version import MAX_TRANSACTION_VERSION
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least, between

TRANSACTION_CONFIG_DEF = ConfigDef(
    [
        ConfigKey(
            "transaction.state.log.num.partitions",
            ConfigType.INT,
            50,
            at_least(1),
            "The number of partitions for the transaction topic.",
        ),
        ConfigKey(
            "transaction.state.log.replication.factor",
            ConfigType.SHORT,
            3,
            at_least(1),
            "The replication factor of __transaction_state with several brokers (a single broker uses 1).",
        ),
        ConfigKey(
            "transaction.state.log.segment.bytes",
            ConfigType.INT,
            104_857_600,
            at_least(1),
            "The transaction topic segment bytes.",
        ),
        ConfigKey(
            "transaction.state.log.load.buffer.size",
            ConfigType.INT,
            5_242_880,
            at_least(1),
            "Batch size for reading from the transaction log segments when loading producer ids and transactions.",
        ),
        ConfigKey(
            "transaction.max.timeout.ms",
            ConfigType.INT,
            900_000,
            at_least(1),
            "The maximum allowed timeout for transactions; a larger transaction.timeout.ms in InitProducerId "
            "is refused with INVALID_TRANSACTION_TIMEOUT.",
        ),
        ConfigKey(
            "transactional.id.expiration.ms",
            ConfigType.INT,
            604_800_000,
            at_least(1),
            "How long the coordinator keeps a transactional id without transaction status updates.",
        ),
        ConfigKey(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            ConfigType.INT,
            10_000,
            at_least(1),
            "The interval at which to roll back transactions that have timed out.",
        ),
        ConfigKey(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            ConfigType.INT,
            3_600_000,
            at_least(1),
            "The interval at which to remove transactions that have expired due to transactional.id.expiration.ms.",
        ),
        ConfigKey(
            "minikafka.transaction.version",
            ConfigType.INT,
            MAX_TRANSACTION_VERSION,
            between(0, MAX_TRANSACTION_VERSION),
            "The finalized transaction.version feature level advertised in ApiVersions (Kafka 4 formats a new "
            "cluster at 2: KIP-890 part 2, an epoch bump per transaction); 0 or 1 make Kafka 4 producers use the "
            "classic protocol. It also picks the __transaction_state value format (v1 from level 2).",
        ),
    ]
)


@dataclass(frozen=True)
class TransactionConfig:
    """Typed view of TRANSACTION_CONFIG_DEF."""

    state_log_num_partitions: int = 50
    state_log_segment_bytes: int = 104_857_600
    state_log_load_buffer_size: int = 5_242_880
    max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    #: The finalized `transaction.version` level (`minikafka.transaction.version`).
    transaction_version: int = MAX_TRANSACTION_VERSION

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> TransactionConfig:
        values = TRANSACTION_CONFIG_DEF.parse(props)
        return cls(
            state_log_num_partitions=values["transaction.state.log.num.partitions"],
            state_log_segment_bytes=values["transaction.state.log.segment.bytes"],
            state_log_load_buffer_size=values["transaction.state.log.load.buffer.size"],
            max_timeout_ms=values["transaction.max.timeout.ms"],
            transactional_id_expiration_ms=values["transactional.id.expiration.ms"],
            abort_timed_out_transaction_cleanup_interval_ms=values[
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"
            ],
            remove_expired_transaction_cleanup_interval_ms=values[
                "transaction.remove.expired.transaction.cleanup.interval.ms"
            ],
            transaction_version=values["minikafka.transaction.version"],
        )

"""Broker-level LogCleaner configuration (spec §1.2), by Kafka's property names.

Defaults and validators are Kafka's `CleanerConfig.CONFIG_DEF`, plus the `KafkaConfig` startup check that
every cleaner thread gets more than 1 MiB of dedupe buffer. The per-thread splits (offset-map memory capped
at 2 GiB - 1 per thread, read + write I/O buffers of `io.buffer.size / threads / 2` each) are derived here so
the cleaner threads and the metrics agree on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least, between

LONG_MAX = 9_223_372_036_854_775_807
INT_MAX = 2_147_483_647
DOUBLE_MAX = 1.7976931348623157e308
_ONE_MIB = 1024 * 1024
WORKER_PROCESSES = "minikafka.log.cleaner.worker.processes"

CLEANER_CONFIG_DEF = ConfigDef(
    [
        ConfigKey("log.cleaner.enable", ConfigType.BOOLEAN, True, None,
                  "Enable the log cleaner process to run on the server."),
        ConfigKey("log.cleaner.threads", ConfigType.INT, 1, at_least(0),
                  "The number of background threads to use for log cleaning."),
        ConfigKey("log.cleaner.dedupe.buffer.size", ConfigType.LONG, 134_217_728, None,
                  "The total memory used for log deduplication across all cleaner threads."),
        ConfigKey("log.cleaner.io.buffer.size", ConfigType.INT, 524_288, at_least(0),
                  "The total memory used for log cleaner I/O buffers across all cleaner threads."),
        ConfigKey("log.cleaner.io.buffer.load.factor", ConfigType.DOUBLE, 0.9, None,
                  "Log cleaner dedupe buffer load factor: the fraction of slots filled before the map is full."),
        ConfigKey("log.cleaner.io.max.bytes.per.second", ConfigType.DOUBLE, DOUBLE_MAX, None,
                  "The log cleaner will be throttled so that the sum of its read and write i/o will be less "
                  "than this value on average."),
        ConfigKey("log.cleaner.backoff.ms", ConfigType.LONG, 15_000, at_least(0),
                  "The amount of time to sleep when there are no logs to clean."),
        ConfigKey("log.cleaner.min.cleanable.ratio", ConfigType.DOUBLE, 0.5, between(0.0, 1.0),
                  "The minimum ratio of dirty log to total log for a log to be eligible for cleaning."),
        ConfigKey("log.cleaner.delete.retention.ms", ConfigType.LONG, 86_400_000, at_least(0),
                  "The amount of time to retain tombstone markers for log compacted topics."),
        ConfigKey("log.cleaner.min.compaction.lag.ms", ConfigType.LONG, 0, at_least(0),
                  "The minimum time a message will remain uncompacted in the log."),
        ConfigKey("log.cleaner.max.compaction.lag.ms", ConfigType.LONG, LONG_MAX, at_least(1),
                  "The maximum time a message will remain ineligible for compaction in the log."),
        ConfigKey(WORKER_PROCESSES, ConfigType.BOOLEAN, True, None,
                  "Run each cleaner thread's cleaning passes in its own worker process (minikafka only), so "
                  "cleaning does not compete with the broker's event loop for the GIL; false cleans in the "
                  "cleaner thread itself."),
    ]
)


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's `log.cleaner.*` settings. Immutable value object; safe to share between threads.

    Attribute names are the Kafka keys without the `log.cleaner.` prefix (and the project-only key without
    `minikafka.log.cleaner.`), dots replaced by underscores.
    """

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 134_217_728
    io_buffer_size: int = 524_288
    io_buffer_load_factor: float = 0.9
    io_max_bytes_per_second: float = DOUBLE_MAX
    backoff_ms: int = 15_000
    min_cleanable_ratio: float = 0.5
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    #: `minikafka.log.cleaner.worker.processes`: clean in one worker process per cleaner thread
    worker_processes: bool = True

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> CleanerConfig:
        """Parse the `log.cleaner.*` keys (and `minikafka.log.cleaner.worker.processes`) of broker properties;
        other keys are ignored.

        Raises InvalidConfigError naming the key, the value and the rule.
        """
        parsed: dict[str, Any] = CLEANER_CONFIG_DEF.parse(props)
        config = cls(**{name.removeprefix("minikafka.").removeprefix("log.cleaner.").replace(".", "_"): value
                        for name, value in parsed.items()})
        config.validate()
        return config

    def validate(self) -> None:
        """Kafka's cross-key startup check (`KafkaConfig`): more than 1 MiB of dedupe buffer per thread."""
        if self.threads <= 0 or self.dedupe_buffer_size // self.threads <= _ONE_MIB:
            raise InvalidConfigError(
                f"Invalid value {self.dedupe_buffer_size} for configuration log.cleaner.dedupe.buffer.size "
                f"with log.cleaner.threads={self.threads}: log.cleaner.dedupe.buffer.size must be at least "
                f"1MB per cleaner thread"
            )

    @property
    def dedupe_buffer_bytes_per_thread(self) -> int:
        """Offset-map memory of one cleaner thread: min(size / threads, 2^31 - 1) as Kafka."""
        return min(self.dedupe_buffer_size // max(self.threads, 1), INT_MAX)

    @property
    def io_buffer_bytes_per_thread(self) -> int:
        """Size of each of a thread's two I/O buffers (read and write)."""
        return self.io_buffer_size // max(self.threads, 1) // 2

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

from protocol.errors import InvalidConfigError

LONG_MAX = 9_223_372_036_854_775_807
INT_MAX = 2_147_483_647
DOUBLE_MAX = 1.7976931348623157e308
_ONE_MIB = 1024 * 1024

# (name, type, default, minimum, maximum) as Kafka's CleanerConfig.CONFIG_DEF; inclusive bounds, None = none.
# TODO(integrator): move onto storage.config_def.ConfigDef once it lands (same table, same messages).
_KEYS: tuple[tuple[str, str, Any, float | None, float | None], ...] = (
    ("log.cleaner.enable", "boolean", True, None, None),
    ("log.cleaner.threads", "int", 1, 0, None),
    ("log.cleaner.dedupe.buffer.size", "long", 134_217_728, None, None),
    ("log.cleaner.io.buffer.size", "int", 524_288, 0, None),
    ("log.cleaner.io.buffer.load.factor", "double", 0.9, None, None),
    ("log.cleaner.io.max.bytes.per.second", "double", DOUBLE_MAX, None, None),
    ("log.cleaner.backoff.ms", "long", 15_000, 0, None),
    ("log.cleaner.min.cleanable.ratio", "double", 0.5, 0.0, 1.0),
    ("log.cleaner.delete.retention.ms", "long", 86_400_000, 0, None),
    ("log.cleaner.min.compaction.lag.ms", "long", 0, 0, None),
    ("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, 1, None),
)
CLEANER_CONFIG_NAMES = frozenset(k[0] for k in _KEYS)
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def _invalid(name: str, raw: str, rule: str) -> InvalidConfigError:
    return InvalidConfigError(f"Invalid value {raw} for configuration {name}: {rule}")


def _parse_value(name: str, type_name: str, raw: str, minimum: float | None, maximum: float | None) -> Any:
    text = raw.strip()
    value: Any
    if type_name == "boolean":
        if text.lower() not in ("true", "false"):
            raise _invalid(name, raw, "Expected value to be either true or false")
        return text.lower() == "true"
    try:
        value = float(text) if type_name == "double" else int(text, 10)
    except ValueError:
        raise _invalid(name, raw, f"Not a number of type {type_name.upper()}") from None
    if type_name in _INT_RANGE:
        low, high = _INT_RANGE[type_name]
        if not low <= value <= high:
            raise _invalid(name, raw, f"Not a number of type {type_name.upper()}")
    if minimum is not None and maximum is not None and not minimum <= value <= maximum:
        raise _invalid(name, raw, f"Value must be no less than {minimum} and no more than {maximum}")
    if minimum is not None and value < minimum:
        raise _invalid(name, raw, f"Value must be at least {minimum}")
    return value


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's `log.cleaner.*` settings. Immutable value object; safe to share between threads.

    Attribute names are the Kafka keys without the `log.cleaner.` prefix, dots replaced by underscores.
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

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> CleanerConfig:
        """Parse the `log.cleaner.*` keys of broker properties; other keys are ignored.

        Raises InvalidConfigError naming the key, the value and the rule.
        """
        values: dict[str, Any] = {}
        for name, type_name, default, minimum, maximum in _KEYS:
            raw = props.get(name)
            value = default if raw is None else _parse_value(name, type_name, raw, minimum, maximum)
            values[name.removeprefix("log.cleaner.").replace(".", "_")] = value
        config = cls(**values)
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

from __future__ import annotations

import pytest

from minikafka.cleaner.config import CLEANER_CONFIG_DEF, DOUBLE_MAX, LONG_MAX, CleanerConfig
from minikafka.protocol.errors import InvalidConfigError


def test_defaults_are_kafkas() -> None:
    config = CleanerConfig.from_props({})
    assert config == CleanerConfig()
    assert config.enable is True
    assert config.threads == 1
    assert config.dedupe_buffer_size == 134_217_728
    assert config.io_buffer_size == 524_288
    assert config.io_buffer_load_factor == 0.9
    assert config.io_max_bytes_per_second == DOUBLE_MAX
    assert config.backoff_ms == 15_000
    assert config.min_cleanable_ratio == 0.5
    assert config.delete_retention_ms == 86_400_000
    assert config.min_compaction_lag_ms == 0
    assert config.max_compaction_lag_ms == LONG_MAX
    assert config.dedupe_buffer_bytes_per_thread == 134_217_728
    assert config.io_buffer_bytes_per_thread == 262_144


def test_parses_kafka_names_and_ignores_other_keys() -> None:
    config = CleanerConfig.from_props({
        "log.cleaner.enable": " FALSE ",
        "log.cleaner.threads": "4",
        "log.cleaner.dedupe.buffer.size": "67108864",
        "log.cleaner.io.buffer.load.factor": "0.75",
        "log.cleaner.backoff.ms": "100",
        "log.cleaner.min.cleanable.ratio": "0.01",
        "log.cleaner.delete.retention.ms": "0",
        "log.cleaner.max.compaction.lag.ms": "1000",
        "log.segment.bytes": "not-a-cleaner-key",
    })
    assert config.enable is False
    assert config.threads == 4
    assert config.dedupe_buffer_bytes_per_thread == 16_777_216
    assert config.io_buffer_bytes_per_thread == 65_536
    assert config.io_buffer_load_factor == 0.75
    assert config.backoff_ms == 100
    assert config.min_cleanable_ratio == 0.01
    assert config.delete_retention_ms == 0
    assert config.max_compaction_lag_ms == 1000


def test_config_def_lists_every_cleaner_key() -> None:
    kafka_keys = [name for name in CLEANER_CONFIG_DEF.names() if not name.startswith("minikafka.")]
    assert len(kafka_keys) == 11
    assert all(name.startswith("log.cleaner.") for name in kafka_keys)
    assert set(CLEANER_CONFIG_DEF.names()) - set(kafka_keys) == {"minikafka.log.cleaner.worker.processes"}


def test_per_thread_map_memory_capped_at_int_max() -> None:
    config = CleanerConfig.from_props({"log.cleaner.dedupe.buffer.size": str(8 * 2**30)})
    assert config.dedupe_buffer_bytes_per_thread == 2_147_483_647


@pytest.mark.parametrize(
    ("key", "value", "rule"),
    [
        ("log.cleaner.threads", "-1", "at least 0"),
        ("log.cleaner.threads", "1.5", "INT"),
        ("log.cleaner.threads", "2147483648", "INT"),
        ("log.cleaner.enable", "yes", "true or false"),
        ("log.cleaner.min.cleanable.ratio", "1.01", "no more than 1.0"),
        ("log.cleaner.min.cleanable.ratio", "-0.1", "at least 0.0"),
        ("log.cleaner.max.compaction.lag.ms", "0", "at least 1"),
        ("log.cleaner.delete.retention.ms", "-5", "at least 0"),
        ("log.cleaner.backoff.ms", "soon", "LONG"),
    ],
)
def test_invalid_values_name_key_value_and_rule(key: str, value: str, rule: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        CleanerConfig.from_props({key: value})
    message = str(info.value)
    assert key in message and value in message and rule in message


def test_dedupe_buffer_must_exceed_one_mib_per_thread() -> None:
    two_threads = {"log.cleaner.threads": "2"}
    CleanerConfig.from_props({"log.cleaner.dedupe.buffer.size": str(2 * 2**20 + 2), **two_threads})
    with pytest.raises(InvalidConfigError, match="at least 1MB per cleaner thread"):
        CleanerConfig.from_props({"log.cleaner.dedupe.buffer.size": str(2 * 2**20), **two_threads})
    with pytest.raises(InvalidConfigError, match=r"log\.cleaner\.dedupe\.buffer\.size"):
        CleanerConfig.from_props({"log.cleaner.threads": "0"})

"""Moved to `tests/kafka_jars.py` (the test suite needs it and must not import `bench`); kept so that
`from bench.kafka_jars import ...` in benchmarks written before the move still works."""

from tests.kafka_jars import (
    DEFAULT_CACHE_DIR,
    KAFKA_VERSION,
    REPO_ROOT,
    KafkaHarnessError,
    ensure_kafka_jars,
    find_main_class,
    java_command,
)

__all__ = ["DEFAULT_CACHE_DIR", "KAFKA_VERSION", "REPO_ROOT", "KafkaHarnessError", "ensure_kafka_jars",
           "find_main_class", "java_command"]

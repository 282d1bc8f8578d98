"""Moved to `tests/apache_kafka.py` (the test suite needs it and must not import `bench`); kept so that
`from bench.apache_kafka import ...` and `python -m bench.apache_kafka` still work."""

from tests.apache_kafka import ApacheKafka, DumpResult, KafkaHarnessError, check_dump_clean, dump_log, ensure_kafka_jars
from tests.apache_kafka import _main as _moved_main

__all__ = ["ApacheKafka", "DumpResult", "KafkaHarnessError", "check_dump_clean", "dump_log", "ensure_kafka_jars"]

if __name__ == "__main__":
    raise SystemExit(_moved_main())

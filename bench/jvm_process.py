"""Moved to `tests/jvm_process.py` (the test suite needs it and must not import `bench`); kept so that
`from bench.jvm_process import ...` still works."""

from tests.jvm_process import STOP_TIMEOUT_S, JvmProcess, log_tail

__all__ = ["STOP_TIMEOUT_S", "JvmProcess", "log_tail"]

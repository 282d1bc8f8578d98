"""Shared helpers for the record-batch tests."""

from __future__ import annotations

from minikafka.protocol.records import Record

SAMPLE_RECORDS = (
    Record(0, 1_700_000_000_000, b"k0", b"v0", (("trace", b"abc"), ("null", None))),
    Record(1, 1_700_000_000_005, None, b"value-without-key"),
    Record(2, 1_699_999_999_990, b"tombstone", None),
    Record(3, 1_700_000_000_007, b"", b"", (("empty", b""),)),
    Record(4, 1_700_000_000_010, b"k4", b"x" * 3000),
)

"""Micro-benchmark of the record-batch layer: ``.venv/bin/python -m minikafka.protocol.records.benchmark [BATCHES]``.

Workload as in kafka-protocol-notes §4.5: batches of 1,000 records, 10-byte key, 64-byte value,
one header, uncompressed unless stated. Prints records per second for each path.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from minikafka.protocol.records.attributes import CompressionType
from minikafka.protocol.records.builder import build_batch
from minikafka.protocol.records.record import Record
from minikafka.protocol.records.record_batch import RecordBatch, iter_batches

RECORDS_PER_BATCH = 1000


def _records(batch_index: int) -> list[Record]:
    base = batch_index * RECORDS_PER_BATCH
    value = os.urandom(32).hex().encode()
    return [
        Record(base + i, 1_700_000_000_000 + i, b"key-%06d" % (i % 999_999), value, (("h", b"v"),))
        for i in range(RECORDS_PER_BATCH)
    ]


def _rate(label: str, total_records: int, action: Callable[[], object], repeat: int = 3) -> float:
    elapsed = float("inf")
    for _ in range(repeat):  # best of N: the machine is shared, so the minimum is the signal
        started = time.perf_counter()
        action()
        elapsed = min(elapsed, time.perf_counter() - started)
    rate = total_records / elapsed
    print(f"{label:<48} {rate / 1e6:6.2f} M rec/s")
    return rate


def main(batch_count: int = 200) -> None:
    inputs = [_records(i) for i in range(batch_count)]
    total = batch_count * RECORDS_PER_BATCH
    built: list[bytes] = []

    def build() -> None:
        built[:] = [build_batch(records, base_offset=records[0].offset) for records in inputs]

    def build_python() -> None:
        for records in inputs:
            build_batch(records, base_offset=records[0].offset, delete_horizon_ms=0)

    _rate("build_batch (aiokafka Cython encoder)", total, build)
    _rate("build_batch (pure Python, delete-horizon path)", total, build_python)
    log = b"".join(built)

    def consume(method: str, codec_log: bytes) -> Callable[[], None]:
        def run() -> None:
            for batch in iter_batches(codec_log):
                for _ in getattr(batch, method)():
                    pass

        return run

    _rate("records() aiokafka Cython -> Record", total, consume("records", log))
    _rate("records() pure-Python varint loop -> Record", total, consume("_records_python", log))
    _rate("keys() via aiokafka Cython", total, consume("keys", log))
    _rate("keys() pure-Python scan", total, consume("_keys_python", log))

    def validate() -> None:
        for batch in iter_batches(log):
            batch.ensure_valid()

    _rate("iter_batches + ensure_valid (header + CRC)", total, validate)
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD):
        codec_log = b"".join(
            build_batch(records, base_offset=records[0].offset, compression=codec) for records in inputs
        )
        _rate(f"records() {codec.name}", total, consume("records", codec_log))
    view = RecordBatch(built[0])
    assert view.records_count == RECORDS_PER_BATCH


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)

"""Apache Kafka's kafka-dump-log (DumpLogSegments) must read our segment, index and snapshot files.

Uses the official jars from Maven Central through bench/apache_kafka.py (skips with the reason when Java or
Maven are missing). Multi-segment logs with indexes and producer-state snapshots, which the broker-level
interop test (tests/interop/test_dump_log.py) does not reach.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.unified_log import UnifiedLog
from tests.apache_kafka import KafkaHarnessError, check_dump_clean, dump_log, ensure_kafka_jars
from tests.storage.conftest import T0, batch

pytestmark = pytest.mark.interop


def _lib_dir() -> Path:
    try:
        return ensure_kafka_jars()
    except KafkaHarnessError as error:
        pytest.skip(f"Apache Kafka's tools are not available: {error}")


def test_kafka_dump_log_accepts_our_files(tmp_path: Path) -> None:
    lib_dir = _lib_dir()
    config = LogConfig.from_props({"segment.bytes": "2000", "index.interval.bytes": "100"})
    log = UnifiedLog(tmp_path / "t-0", config, clock=FakeClock(T0))
    for i in range(40):
        log.append_as_leader(batch(b"x" * 20, b"y" * i, timestamp_ms=T0 + i * 10, producer_id=7,
                                   producer_epoch=0, base_sequence=2 * i))
    log.close()
    dir = tmp_path / "t-0"
    logs = sorted(dir.glob("*.log"))
    indexes = sorted(dir.glob("*.index")) + sorted(dir.glob("*.timeindex"))
    assert len(logs) >= 2
    dumped = dump_log(logs + indexes, deep=True, index_sanity=False, lib_dir=lib_dir)
    assert check_dump_clean(dumped) == []
    assert dumped.stdout.count("isvalid: true") == 40
    sanity = dump_log(indexes, deep=False, index_sanity=True, lib_dir=lib_dir)
    assert sanity.stdout.count("passed sanity check") == len(indexes), sanity.stdout + sanity.stderr
    snapshot = sorted(dir.glob("*.snapshot"))[-1]
    dumped_snapshot = dump_log([snapshot], deep=False, index_sanity=False, lib_dir=lib_dir)
    assert "producerId: 7 producerEpoch: 0" in dumped_snapshot.stdout
    assert "lastSequence: 79 lastOffset: 79" in dumped_snapshot.stdout


def test_kafka_dump_log_reads_our_txnindex_and_markers(tmp_path: Path) -> None:
    lib_dir = _lib_dir()
    log = UnifiedLog(tmp_path / "t-0", LogConfig.from_props({}), clock=FakeClock(T0))
    log.append_as_leader(batch(b"a", producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True))
    log.append_as_leader(batch(b"b", producer_id=6, producer_epoch=0, base_sequence=0, is_transactional=True))
    log.append_transaction_marker(5, 0, 3, commit=False)  # offset 2; producer 6 still open from offset 1
    log.append_transaction_marker(6, 0, 3, commit=False)  # offset 3
    log.close()
    dir = tmp_path / "t-0"
    [txn_index] = sorted(dir.glob("*.txnindex"))
    dumped = dump_log([txn_index], deep=False, index_sanity=False, lib_dir=lib_dir)
    assert "version: 0 producerId: 5 firstOffset: 0 lastOffset: 2 lastStableOffset: 1" in dumped.stdout, \
        dumped.stdout + dumped.stderr
    assert "version: 0 producerId: 6 firstOffset: 1 lastOffset: 3 lastStableOffset: 4" in dumped.stdout
    segment = dump_log(sorted(dir.glob("*.log")), deep=True, index_sanity=False, lib_dir=lib_dir)
    assert check_dump_clean(segment) == []
    assert segment.stdout.count("endTxnMarker: ABORT coordinatorEpoch: 3") == 2, segment.stdout
    assert segment.stdout.count("isTransactional: true") == 4

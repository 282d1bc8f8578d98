"""Apache Kafka's kafka-dump-log (DumpLogSegments) must read our segment, index and snapshot files.

Needs `java` and a classpath with kafka-tools and its dependencies: `MINIKAFKA_KAFKA_CLASSPATH`, else
`/tmp/kpom/lib/*` when present. Skips with a visible reason otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from storage.clock import FakeClock
from storage.log_config import LogConfig
from storage.unified_log import UnifiedLog
from tests.storage.conftest import T0, batch

pytestmark = pytest.mark.interop


def _classpath() -> str | None:
    configured = os.environ.get("MINIKAFKA_KAFKA_CLASSPATH")
    if configured:
        return configured
    fallback = Path("/tmp/kpom/lib")
    if fallback.is_dir() and list(fallback.glob("kafka-tools-*.jar")):
        return f"{fallback}/*"
    return None


def _dump(classpath: str, files: list[Path], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["java", "-cp", classpath, "org.apache.kafka.tools.DumpLogSegments", "--files",
         ",".join(str(f) for f in files), *extra],
        capture_output=True, text=True, timeout=120, check=False)


def test_kafka_dump_log_accepts_our_files(tmp_path: Path) -> None:
    classpath = _classpath()
    if shutil.which("java") is None or classpath is None:
        pytest.skip("java or the Kafka tools classpath (MINIKAFKA_KAFKA_CLASSPATH) is not available")
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
    dumped = _dump(classpath, logs + indexes)
    assert dumped.returncode == 0, dumped.stderr
    assert dumped.stdout.count("isvalid: true") == 40
    assert "isvalid: false" not in dumped.stdout
    assert "invalid bytes" not in dumped.stdout + dumped.stderr
    assert "Mismatches" not in dumped.stdout + dumped.stderr
    sanity = _dump(classpath, indexes, "--index-sanity-check")
    assert sanity.stdout.count("passed sanity check") == len(indexes), sanity.stdout + sanity.stderr
    snapshot = sorted(dir.glob("*.snapshot"))[-1]
    dumped_snapshot = _dump(classpath, [snapshot])
    assert "producerId: 7 producerEpoch: 0" in dumped_snapshot.stdout
    assert "lastSequence: 79 lastOffset: 79" in dumped_snapshot.stdout

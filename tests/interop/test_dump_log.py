"""Apache Kafka's kafka-dump-log reads segment files cleanly: Kafka's own (oracle check) and minikafka's."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.apache_kafka import ApacheKafka, DumpResult, check_dump_clean, dump_log

pytestmark = pytest.mark.interop

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 2
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


def _produce_each_codec(bootstrap: str, topic: str, records_per_codec: int = 200) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    for codec in CODECS:
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5,
                             "enable.idempotence": codec in ("lz4", "zstd")})
        for i in range(records_per_codec):
            producer.produce(topic, key=f"{codec}-{i}".encode(), value=bytes(i % 251) * 3,
                             headers=[("codec", codec.encode())])
        assert producer.flush(30) == 0
    return len(CODECS) * records_per_codec


def _segment_files(log_dir: Path, topic: str) -> list[Path]:
    files = sorted(path for path in log_dir.glob(f"{topic}-*/*") if path.suffix in SEGMENT_SUFFIXES)
    assert {path.parent.name for path in files} == {f"{topic}-{p}" for p in range(PARTITIONS)}
    return files


def _assert_clean(files: list[Path], lib_dir: Path | None) -> DumpResult:
    sanity = dump_log(files, deep=True, index_sanity=True, lib_dir=lib_dir)
    assert check_dump_clean(sanity) == [], sanity.stdout[-3000:] + sanity.stderr[-3000:]
    full = dump_log(files, deep=True, index_sanity=False, lib_dir=lib_dir)  # also checks index entries
    assert check_dump_clean(full) == [], full.stdout[-3000:] + full.stderr[-3000:]
    return full


def _assert_batches_cover(result: DumpResult, records: int) -> None:
    record_lines = [line for line in result.stdout.splitlines() if line.startswith("| offset:")]
    assert len(record_lines) == records
    codecs_seen = {line.split("compresscodec: ")[1].split()[0] for line in result.stdout.splitlines()
                   if "compresscodec: " in line}
    assert codecs_seen == set(CODECS)


def test_dump_log_reads_apache_kafka_segments(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    """The oracle itself: Kafka's own files pass, so a failure on ours means our files differ."""
    topic = f"dump-{uuid.uuid4().hex[:8]}"
    with ApacheKafka(tmp_path / "kafka", lib_dir=apache_kafka.lib_dir) as kafka:
        records = _produce_each_codec(kafka.bootstrap, topic)
    result = _assert_clean(_segment_files(kafka.log_dir, topic), apache_kafka.lib_dir)
    _assert_batches_cover(result, records)


def test_check_dump_clean_reports_trailing_junk(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    segment = tmp_path / "junk-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"junk!")  # a batch header cut short
    problems = check_dump_clean(dump_log([segment], lib_dir=apache_kafka.lib_dir))
    assert any("invalid bytes" in problem for problem in problems), problems


def test_dump_log_reads_minikafka_segments(broker: Any, apache_kafka: ApacheKafka) -> None:
    topic = f"dump-{uuid.uuid4().hex[:8]}"
    records = _produce_each_codec(broker.bootstrap, topic)
    broker.stop()
    result = _assert_clean(_segment_files(Path(broker.data_dir), topic), apache_kafka.lib_dir)
    _assert_batches_cover(result, records)


def test_check_dump_clean_ignores_the_tools_first_offset_report_but_not_real_gaps() -> None:
    header = "Non-consecutive offsets in 00036.log\n"
    first_of_segment = DumpResult(stdout="", stderr=header + "  -1 is followed by 36\n", rc=0)
    real_gap = DumpResult(stdout="", stderr=header + "  37 is followed by 40\n", rc=0)
    assert check_dump_clean(first_of_segment) == []
    assert check_dump_clean(real_gap) == ["stderr: non-consecutive offsets: 37 is followed by 40"]

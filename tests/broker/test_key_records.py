"""broker/key_records.py on real segment files: every data file of a partition directory is read (`.log` and the
`.cleaned`/`.swap`/`.deleted` leftovers, not indexes), compressed batches are decoded, control batches skipped, a
torn tail ignored; keys parse from a string or hex."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.key_records import default_partition, parse_key, scan_partition_dir
from minikafka.protocol.records import CompressionType, Record, build_batch, build_control_batch


def batch(base: int, pairs: list[tuple[bytes, bytes | None]], compression: CompressionType = CompressionType.NONE
          ) -> bytes:
    records = [Record(base + i, 1_000 + base + i, key, value) for i, (key, value) in enumerate(pairs)]
    return build_batch(records, base_offset=base, compression=compression)


def test_every_segment_file_and_leftover_is_read(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log.deleted").write_bytes(batch(0, [(b"k", b"v0"), (b"x", b"x0")]))
    (tmp_path / "00000000000000000000.log.cleaned").write_bytes(batch(2, [(b"k", b"v2")], CompressionType.ZSTD))
    (tmp_path / "00000000000000000000.log.swap").write_bytes(batch(3, [(b"k", b"v3")], CompressionType.GZIP))
    control = build_control_batch(base_offset=5, producer_id=1, producer_epoch=0, commit=True,
                                  coordinator_epoch=0, timestamp_ms=1)
    torn = batch(7, [(b"k", b"torn")])[:-5]
    (tmp_path / "00000000000000000004.log").write_bytes(batch(4, [(b"k", None)], CompressionType.LZ4) + control
                                                        + batch(6, [(b"k", b"v6")]) + torn)
    (tmp_path / "00000000000000000004.index").write_bytes(batch(4, [(b"k", b"not a log file")]))

    scan, value = scan_partition_dir(tmp_path, b"k", with_values_at=6)
    assert [(r.offset, r.value_bytes, r.file) for r in scan.records] == [
        (0, 2, "00000000000000000000.log.deleted"),
        (2, 2, "00000000000000000000.log.cleaned"),
        (3, 2, "00000000000000000000.log.swap"),
        (4, -1, "00000000000000000004.log"),
        (6, 2, "00000000000000000004.log"),
    ]
    assert value == b"v6" and len(scan.files) == 4
    assert [r.offset for r in scan.older_than(4)] == [0, 2, 3]
    assert scan_partition_dir(tmp_path, b"k")[1] is None  # no value unless asked
    assert scan_partition_dir(tmp_path / "gone", b"k")[0].records == []


def test_keys_and_partitions() -> None:
    assert parse_key("user-1", None) == b"user-1"
    assert parse_key(None, "00ff") == b"\x00\xff"
    for bad in [(None, None), ("a", "00"), (None, "zz")]:
        with pytest.raises(ValueError):
            parse_key(*bad)
    # Kafka's Utils.murmur2 vectors (clients/src/test/.../UtilsTest.java testMurmur2), through toPositive
    vectors = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
               b"a-little-bit-longer-string": -1486304829,
               b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for key, murmur in vectors.items():
        assert default_partition(key, 2**31) == murmur & 0x7FFFFFFF
        assert default_partition(key, 7) == (murmur & 0x7FFFFFFF) % 7
    assert all(0 <= default_partition(f"k{i}".encode(), 3) < 3 for i in range(100))


def test_a_key_scan_holds_one_batch_at_a_time_not_the_segment(tmp_path: Path) -> None:
    """A 24 MiB segment of 64 KiB batches is scanned with well under one MiB allocated at its peak: the lookup
    streams batches (a segment may be segment.bytes = 1 GiB)."""
    import tracemalloc

    value = b"v" * (64 * 1024)
    with open(tmp_path / "00000000000000000000.log", "wb") as segment:
        for offset in range(384):
            segment.write(batch(offset, [(b"k%d" % (offset % 7), value)]))
    tracemalloc.start()
    try:
        scan, shown = scan_partition_dir(tmp_path, b"k3", with_values_at=3)
        _current, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [record.offset for record in scan.records] == list(range(3, 384, 7)) and shown == value
    assert scan.bytes_scanned > 24 * 1024 * 1024
    assert peak_bytes < 1024 * 1024, peak_bytes

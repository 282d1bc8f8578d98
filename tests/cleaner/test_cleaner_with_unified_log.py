"""The pure core against storage's real UnifiedLog: produce, clean, crash-safe swap, reopen."""

from __future__ import annotations

from pathlib import Path

from minikafka.cleaner.cleaner import Cleaner, LastProducerRecord
from minikafka.cleaner.log_to_clean import LogToClean, cleanable_offsets
from minikafka.cleaner.offset_map import OffsetMap
from minikafka.protocol.records import Record, iter_batches
from minikafka.protocol.records.builder import build_batch
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.unified_log import UnifiedLog

T0 = 1_700_000_000_000


def produce(log: UnifiedLog, pairs: list[tuple[bytes, bytes | None]], *, producer_id: int = -1,
            base_sequence: int = -1) -> None:
    records = [Record(i, T0, key, value) for i, (key, value) in enumerate(pairs)]
    log.append_as_leader(build_batch(records, base_offset=0, producer_id=producer_id,
                                     producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence))


def read_all(log: UnifiedLog) -> list[tuple[int, bytes | None, bytes | None]]:
    data = log.read(log.log_start_offset, 1 << 30).records
    return [(r.offset, r.key, r.value) for b in iter_batches(data) if not b.is_control for r in b.records()]


def clean_once(log: UnifiedLog, clock: FakeClock, checkpoint: int | None) -> int:
    segments = log.segments()
    offsets = cleanable_offsets(segments, log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
                                checkpoint_offset=checkpoint, last_stable_offset=log.last_stable_offset,
                                min_compaction_lag_ms=log.config.min_compaction_lag_ms, now_ms=clock.time_ms())
    to_clean = LogToClean.of(segments, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)
    producers = {pid: LastProducerRecord(entry.last_data_offset if entry.batches else None, entry.producer_epoch)
                 for pid, entry in log.producer_state.active_producers().items()}
    cleaner = Cleaner(OffsetMap(1 << 20), clock)
    result = cleaner.clean(
        segments, first_dirty_offset=offsets.first_dirty_offset,
        first_uncleanable_offset=to_clean.first_uncleanable_offset, now_ms=clock.time_ms(), config=log.config,
        producers=producers, on_group_cleaned=lambda group: log.replace_segments([group.cleaned], group.sources))
    return result.end_offset


def test_clean_swap_and_reload_keep_latest_values_and_producer_state(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    config = LogConfig.from_props({"cleanup.policy": "compact"})
    directory = tmp_path / "topic-0"
    log = UnifiedLog(directory, config, clock=clock)
    produce(log, [(b"k1", b"a"), (b"k2", b"b")], producer_id=7, base_sequence=0)
    produce(log, [(b"k1", b"c"), (b"k3", b"d")])
    produce(log, [(b"k2", None)], producer_id=7, base_sequence=2)
    log.roll()
    produce(log, [(b"k4", b"e")])
    end = clean_once(log, clock, None)
    assert end == 5
    expected = [(1, b"k2", b"b"), (2, b"k1", b"c"), (3, b"k3", b"d"), (4, b"k2", None), (5, b"k4", b"e")]
    expected.pop(0)  # k2=b superseded by the tombstone at 4
    assert read_all(log) == expected
    assert not list(directory.glob("*.cleaned")) and not list(directory.glob("*.swap"))
    log.close()

    reopened = UnifiedLog(directory, config, clock=clock)
    assert read_all(reopened) == expected
    assert reopened.log_start_offset == 0 and reopened.log_end_offset == 6
    # The idempotent producer's batch at 0-1 survives as an empty header only if it is its last; it is not.
    assert reopened.producer_state.active_producers()[7].last_sequence == 2
    # A duplicate of the producer's last batch is still recognised after cleaning and reload.
    records = [Record(0, T0, b"k2", None)]
    info = reopened.append_as_leader(build_batch(records, base_offset=0, producer_id=7, producer_epoch=0,
                                                 base_sequence=2))
    assert info.duplicate and info.first_offset == 4
    reopened.close()


def _crash_fixture(tmp_path: Path) -> tuple[UnifiedLog, FakeClock, LogConfig, Path, list]:  # type: ignore[type-arg]
    clock = FakeClock(T0)
    config = LogConfig.from_props({"cleanup.policy": "compact"})
    directory = tmp_path / "topic-0"
    log = UnifiedLog(directory, config, clock=clock)
    for round_ in range(3):
        produce(log, [(b"k%d" % i, b"v%d" % round_) for i in range(4)])
        log.roll()
    produce(log, [(b"tail", b"x")])
    segments = log.segments()
    to_clean = LogToClean.of(segments, 0, segments[-1].base_offset)
    cleaner = Cleaner(OffsetMap(1 << 20), clock)
    result = cleaner.clean(segments, first_dirty_offset=0, first_uncleanable_offset=to_clean.first_uncleanable_offset,
                           now_ms=clock.time_ms(), config=config)
    for group in result.groups:
        group.cleaned.close()
    return log, clock, config, directory, result.groups


ORIGINAL = [(o, b"k%d" % (o % 4), b"v%d" % (o // 4)) for o in range(12)] + [(12, b"tail", b"x")]
CLEANED = [(o, b"k%d" % (o % 4), b"v2") for o in range(8, 12)] + [(12, b"tail", b"x")]


def test_S44_crash_with_only_cleaned_files_keeps_the_original_data(tmp_path: Path) -> None:
    log, clock, config, directory, _groups = _crash_fixture(tmp_path)
    assert list(directory.glob("*.log.cleaned"))
    log.close()
    reopened = UnifiedLog(directory, config, clock=clock)
    assert read_all(reopened) == ORIGINAL
    assert not list(directory.glob("*.cleaned"))
    reopened.close()


def test_S44_crash_after_rename_to_swap_keeps_the_cleaned_data(tmp_path: Path) -> None:
    log, clock, config, directory, _groups = _crash_fixture(tmp_path)
    log.close()
    for path in directory.glob("*.cleaned"):
        path.rename(path.with_name(path.name.removesuffix(".cleaned") + ".swap"))
    reopened = UnifiedLog(directory, config, clock=clock)
    assert read_all(reopened) == CLEANED
    assert not list(directory.glob("*.swap"))
    reopened.close()


def test_S44_crash_after_swap_with_deleted_files_pending(tmp_path: Path) -> None:
    log, clock, config, directory, groups = _crash_fixture(tmp_path)
    log.close()
    for group in groups:
        for source in group.sources:
            for path in directory.glob(f"{source.base_offset:020d}.*"):
                if not path.name.endswith((".cleaned", ".snapshot")):
                    path.rename(path.with_name(path.name + ".deleted"))
    for path in directory.glob("*.cleaned"):
        path.rename(path.with_name(path.name.removesuffix(".cleaned")))
    reopened = UnifiedLog(directory, config, clock=clock)
    assert read_all(reopened) == CLEANED
    assert not list(directory.glob("*.deleted"))
    reopened.close()

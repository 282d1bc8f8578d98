"""Spec §2.2 partition selection: scenarios S2-S6, S37, S55 at the filthiest-log choice (cleaner/filthiest_log.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from minikafka.cleaner.filthiest_log import PartitionView, grab_filthiest_compacted_log

T0 = 1_700_000_000_000
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class FakeSegment:
    base_offset: int
    size_bytes: int
    largest_timestamp: int = T0
    rolling_based_timestamp: int | None = T0


def view(name: str, bases_and_sizes: list[tuple[int, int]], log_end_offset: int, **overrides: object) -> PartitionView:
    segments = [FakeSegment(base, size) for base, size in bases_and_sizes]
    fields: dict[str, object] = {
        "topic_partition": (name, 0), "segments": segments, "log_start_offset": 0,
        "log_end_offset": log_end_offset, "last_stable_offset": log_end_offset, "checkpoint_offset": None,
        "compact": True, "min_cleanable_ratio": 0.5, "min_compaction_lag_ms": 0, "max_compaction_lag_ms": LONG_MAX,
    }
    fields.update(overrides)
    return PartitionView(**fields)  # type: ignore[arg-type]


def ranged(name: str, uncleanable: int) -> PartitionView:
    """Checkpoint 20; one closed segment per 5 offsets up to `uncleanable` (the active segment's base)."""
    bases = list(range(0, uncleanable + 1, 5))
    return view(name, [(b, 100) for b in bases], uncleanable + 1, checkpoint_offset=20, min_cleanable_ratio=0.0)


def test_S5_dirtiest_log_first_in_progress_and_uncleanable_skipped() -> None:
    logs = [ranged("a", 20), ranged("b", 25), ranged("c", 30)]
    assert grab_filthiest_compacted_log(logs, T0).chosen.view.topic_partition == ("c", 0)  # type: ignore[union-attr]
    logs[2] = replace(logs[2], uncleanable=True)
    assert grab_filthiest_compacted_log(logs, T0).chosen.view.topic_partition == ("b", 0)  # type: ignore[union-attr]
    logs[1] = replace(logs[1], cleaning_in_progress=True)
    assert grab_filthiest_compacted_log(logs, T0).chosen is None


def test_S2_only_an_active_segment_is_skipped() -> None:
    result = grab_filthiest_compacted_log([view("a", [(0, 500)], 3, min_cleanable_ratio=0.0)], T0)
    assert result.chosen is None and result.max_dirty_percent == 0


def test_S3_ratio_is_strict_and_excludes_the_active_segment() -> None:
    # clean 600 bytes below the checkpoint, dirty 600, active 10,000 (not counted): ratio exactly 0.5
    log = view("a", [(0, 600), (10, 600), (20, 10_000)], 25, checkpoint_offset=10)
    result = grab_filthiest_compacted_log([log], T0)
    assert result.chosen is None and result.max_dirty_percent == 50
    more = view("a", [(0, 600), (10, 601), (20, 10_000)], 25, checkpoint_offset=10)
    chosen = grab_filthiest_compacted_log([more], T0).chosen
    assert chosen is not None and chosen.log_to_clean.first_uncleanable_offset == 20


def test_S4_ratio_one_never_ratio_zero_any_dirty_byte() -> None:
    never = view("never", [(0, 1), (10, 100_000), (20, 5)], 25, checkpoint_offset=10, min_cleanable_ratio=1.0)
    anything = view("any", [(0, 100_000), (10, 1), (20, 5)], 25, checkpoint_offset=10, min_cleanable_ratio=0.0)
    result = grab_filthiest_compacted_log([never, anything], T0)
    assert result.chosen is not None and result.chosen.view.topic_partition == ("any", 0)
    assert result.pre_clean_stats.cleanable_partitions == 1


def test_S6_invalid_checkpoints_are_reported_for_persisting_even_if_not_chosen() -> None:
    high = view("high", [(0, 100), (20, 5)], 20, checkpoint_offset=200, min_cleanable_ratio=1.0)
    low = view("low", [(10, 100), (20, 5)], 21, checkpoint_offset=0, log_start_offset=10, min_cleanable_ratio=1.0)
    result = grab_filthiest_compacted_log([high, low], T0)
    assert result.chosen is None
    assert dict(result.checkpoint_updates) == {("high", 0): 0, ("low", 0): 10}


def test_S37_max_compaction_lag_bypasses_the_ratio_but_not_priority() -> None:
    overdue = view("overdue", [(0, 1000), (10, 10), (20, 5)], 25, checkpoint_offset=10, min_cleanable_ratio=1.0,
                   max_compaction_lag_ms=1000)
    result = grab_filthiest_compacted_log([overdue], T0 + 5000)
    assert result.chosen is not None and result.chosen.need_compaction_now
    assert result.pre_clean_stats.max_compaction_delay_ms == 4000
    assert result.pre_clean_stats.delayed_partitions == 1
    dirtier = view("dirtier", [(0, 10), (10, 1000), (20, 5)], 25, checkpoint_offset=10, min_cleanable_ratio=0.0)
    result = grab_filthiest_compacted_log([overdue, dirtier], T0 + 5000)
    assert result.chosen is not None and result.chosen.view.topic_partition == ("dirtier", 0)
    assert result.pre_clean_stats.cleanable_partitions == 2


def test_S55_max_dirty_percent_reported_below_threshold() -> None:
    log = view("a", [(0, 700), (10, 300), (20, 5)], 25, checkpoint_offset=10, min_cleanable_ratio=0.5)
    result = grab_filthiest_compacted_log([log], T0)
    assert result.chosen is None and result.max_dirty_percent == 30
    assert result.pre_clean_stats.max_compaction_delay_ms == 0


def test_non_compacted_logs_are_ignored_and_failures_isolated() -> None:
    plain = view("plain", [(0, 100), (10, 5)], 15, compact=False, min_cleanable_ratio=0.0)
    broken = view("broken", [], 0)
    broken = replace(broken, segments=[FakeSegment(0, 1)], last_stable_offset="x")  # type: ignore[arg-type]
    good = view("good", [(0, 100), (10, 5)], 15, min_cleanable_ratio=0.0)
    result = grab_filthiest_compacted_log([plain, broken, good], T0)
    assert result.chosen is not None and result.chosen.view.topic_partition == ("good", 0)
    assert list(result.failures) == [("broken", 0)]

"""`share.auto.offset.reset` parsed as Kafka 4.3.1's ShareGroupAutoOffsetResetStrategy, and the offset it gives."""

from __future__ import annotations

import pytest

from minikafka.broker.share.auto_offset_reset import ShareAutoOffsetReset, resolve_start_offset


def test_auto_offset_reset() -> None:
    def by_timestamp(ts: int) -> int | None:
        return 42 if ts <= 1_000_000 else None

    kwargs = {"earliest_offset": 3, "latest_offset": 99, "offset_for_timestamp": by_timestamp}
    assert resolve_start_offset(ShareAutoOffsetReset.parse("earliest"), now_ms=0, **kwargs) == 3  # type: ignore[arg-type]
    assert resolve_start_offset(ShareAutoOffsetReset.parse("latest"), now_ms=0, **kwargs) == 99  # type: ignore[arg-type]
    one_hour = ShareAutoOffsetReset.parse("by_duration:PT1H")
    assert one_hour.duration_ms == 3_600_000
    assert resolve_start_offset(one_hour, now_ms=4_600_000, **kwargs) == 42  # type: ignore[arg-type]
    assert resolve_start_offset(one_hour, now_ms=4_600_001, **kwargs) == 99  # type: ignore[arg-type]
    assert ShareAutoOffsetReset.parse("by_duration:P1DT2M3.5S").duration_ms == 86_400_000 + 120_000 + 3_500
    for bad in ("none", "by_duration:", "by_duration:PT", "by_duration:1H"):
        with pytest.raises(ValueError):
            ShareAutoOffsetReset.parse(bad)

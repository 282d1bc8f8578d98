"""`share.auto.offset.reset` as Apache Kafka 4.3.1 parses it (`ShareGroupAutoOffsetResetStrategy`), and the start
offset it gives a share partition the group has never read. Pure functions and immutable values; thread-safe."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ShareAutoOffsetReset", "resolve_start_offset"]

_DURATION = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


@dataclass(frozen=True, slots=True)
class ShareAutoOffsetReset:
    """`share.auto.offset.reset`: `latest` (Kafka's default), `earliest`, or `by_duration:<ISO-8601 duration>`."""

    strategy: str
    duration_ms: int = 0

    @classmethod
    def parse(cls, value: str) -> ShareAutoOffsetReset:
        text = value.strip().lower()
        if text in ("latest", "earliest"):
            return cls(text)
        if text.startswith("by_duration:"):
            spec = value.strip()[len("by_duration:") :].upper()
            match = _DURATION.match(spec)
            if match is None or spec in ("P", "PT"):
                raise ValueError(f"Invalid duration: {spec} for share.auto.offset.reset")
            seconds = (
                int(match["days"] or 0) * 86400
                + int(match["hours"] or 0) * 3600
                + int(match["minutes"] or 0) * 60
                + float(match["seconds"] or 0)
            )
            return cls("by_duration", int(seconds * 1000))
        raise ValueError(
            f"Invalid value `{value}` for configuration share.auto.offset.reset. "
            "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
        )


def resolve_start_offset(
    reset: ShareAutoOffsetReset,
    *,
    earliest_offset: int,
    latest_offset: int,
    offset_for_timestamp: Callable[[int], int | None],
    now_ms: int,
) -> int:
    """The SPSO of a partition the share group has never read (`share.auto.offset.reset`): the log start
    (`earliest`), the log end (`latest`, Kafka's default), or the first offset with a timestamp at or after
    now - duration (`by_duration:...`; the log end when no record is that recent)."""
    strategy = reset
    if strategy.strategy == "earliest":
        return earliest_offset
    if strategy.strategy == "latest":
        return latest_offset
    found = offset_for_timestamp(now_ms - strategy.duration_ms)
    return latest_offset if found is None else found

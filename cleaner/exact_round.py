"""Where an exact round (issue 10) may go and what it checkpoints: pure functions of a partition and a plan.

The plan's range `[start, end)` must lie inside `[log start offset, first uncleanable offset)` of the partition as it
is when the round runs: `min.compaction.lag.ms`, the last stable offset and the active segment bound it as they bound
an ordinary round (`log_to_clean.exact_round_end_limit`; the broker rolls the active segment first when the plan
reaches into it, as manual compaction does). A plan that no longer fits (retention moved the log start past it, the
topic was recreated) is refused, never applied in part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.cleaner.log_to_clean import LogToClean, SegmentInfo, exact_round_end_limit
from minikafka.cleaner.retained_offset_plan import InvalidRetainedOffsetPlanError, RetainedOffsetPlan
from minikafka.storage.unified_log import UnifiedLog


def exact_end_limit(log: UnifiedLog, checkpoint_offset: int | None, now_ms: int, *, roll_active: bool) -> int:
    """The largest end offset a plan for `log` may have now (see `exact_round_end_limit`)."""
    return exact_round_end_limit(
        log.segments(), log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
        checkpoint_offset=checkpoint_offset, last_stable_offset=log.last_stable_offset,
        min_compaction_lag_ms=log.config.min_compaction_lag_ms, now_ms=now_ms, roll_active=roll_active)


def check_plan_range(plan: RetainedOffsetPlan, log: UnifiedLog, end_limit_offset: int) -> None:
    """InvalidRetainedOffsetPlanError unless log start offset <= start <= end <= `end_limit_offset`."""
    log_start_offset = log.log_start_offset
    if plan.start_offset < log_start_offset or plan.end_offset > end_limit_offset:
        raise InvalidRetainedOffsetPlanError(
            f"plan range [{plan.start_offset}, {plan.end_offset}) is outside what {log.topic_partition} can clean "
            f"now: [{log_start_offset}, {end_limit_offset}) (from the log start offset to the first uncleanable "
            "offset: min.compaction.lag.ms, the last stable offset, the log end)")


@dataclass(frozen=True, slots=True)
class ExactRoundRange:
    """What `LogCleaner` hands the core for an exact round, and whether the round may checkpoint its end."""

    #: first dirty offset = the plan's start; first uncleanable offset = the first segment base at or above its end
    to_clean: LogToClean
    #: True when the plan starts at (or below) the log start offset: every key then has at most one record below
    #: the end afterwards. Otherwise records below the start were kept as they are and may repeat keys of the
    #: range, so the checkpoint must not move.
    checkpoint_end: bool

    @classmethod
    def of(cls, plan: RetainedOffsetPlan, segments: Sequence[SegmentInfo], log_start_offset: int) -> ExactRoundRange:
        """`segments` oldest first, active last; the plan's end is at most the active segment's base."""
        upper = next((s.base_offset for s in segments if s.base_offset >= plan.end_offset), None)
        if upper is None:  # callers check the range first; never clean into the active segment
            raise InvalidRetainedOffsetPlanError(f"plan end {plan.end_offset} is inside the active segment")
        sized = LogToClean.of(segments, plan.start_offset, upper)
        return cls(LogToClean(plan.start_offset, upper, sized.clean_bytes, sized.cleanable_bytes),
                   plan.start_offset <= log_start_offset)

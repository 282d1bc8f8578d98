"""`PlanRetention`: the keep-or-drop decision of an exact round, read from a retained-offset plan (issue 10).

An ordinary round asks the offset map whether a keyed record is the latest of its key; an exact round asks the plan
(`cleaner.retained_offset_plan`) instead, for the offsets in the plan's range `[start, end)`:

- a keyed data record in `[start, end)` survives iff its offset is in the plan (then the tombstone rule applies as
  usual: a tombstone past its delete horizon goes);
- a keyed data record below `start` is outside the plan's scope and survives (tombstone rule as usual); one at or
  beyond `end` is not part of the round and survives untouched;
- keyless records, control batches and records of aborted transactions follow the cleaner's usual rules (the
  caller, `Cleaner._filter_batch`, decides those before asking): keyless records below `end` are dropped.

The plan is a sorted stream merged with the log (`RetainedOffsetCursor`): memory is one 64 KiB chunk of the plan
plus one batch's offsets, whatever the key count; nothing is hashed, so two keys can never be confused.

Before the recopy pass, `verify` reads `[start, end)` of the log once (batch headers and markers; it replaces the
map pass and decodes one batch) and refuses the plan (InvalidRetainedOffsetPlanError, before anything is written):
- if it retains an offset of a control batch or of an aborted transaction: such a plan was computed without
  read_committed, and trusting it would drop the committed value under an aborted one;
- if it ends below the range's last committed keyed record, which is always the latest of its key: the plan does
  not cover its range (a read that stopped early, an empty plan for a range with data) and would drop every record
  of the keys it missed.
A plan offset that names no record any more (removed since by ordinary cleaning or retention) is fine: a record is
only removed when a later record of its key exists, so a late plan still drops nothing that is not superseded.
What `verify` cannot see without the keys is a plan missing offsets in the middle of its range; the plan's producer
(a Spark job's complete group-by) is trusted for that.

Keyless records inside a batch the plan answers whole (`latest_offsets_of`) are dropped unless the plan names them
(a plan never does), without counting them as invalid; elsewhere they count, as in an ordinary round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.log_to_clean import segments_overlapping
from minikafka.cleaner.record_codec import RecordLike
from minikafka.cleaner.retained_offset_plan import InvalidRetainedOffsetPlanError, RetainedOffsetPlan
from minikafka.cleaner.transaction_metadata import CleanedTransactionMetadata
from minikafka.protocol.records import RecordBatch
from minikafka.storage.log_segment import LogSegment
from minikafka.storage.transaction_index import AbortedTransaction


class PlanRetention:
    """One exact round's retain decisions. Owns an open cursor over the plan file (one chunk of it in memory).

    Not thread-safe: used by the thread (or worker process) running the round, batches in log order."""

    def __init__(self, plan: RetainedOffsetPlan) -> None:
        self.plan = plan
        self.start_offset = plan.start_offset
        self.end_offset = plan.end_offset
        self._cursor = plan.cursor()
        self._next_offset = 0  # batches must come in log order: the cursor only moves forward

    def close(self) -> None:
        self._cursor.close()

    # ------------------------------------------------------------- first pass
    def verify(
        self,
        segments: Sequence[LogSegment],
        collect_aborted_transactions: Callable[[int, int], Sequence[AbortedTransaction]],
        stats: CleanerStats,
        *,
        check_done: Callable[[], None] = lambda: None,
        throttle: Callable[[int], None] = lambda _bytes: None,
    ) -> None:
        """Refuse (InvalidRetainedOffsetPlanError) a plan retaining a control record or an aborted record."""
        start, end = self.start_offset, self.end_offset
        if start >= end:
            return
        cursor = self.plan.cursor()
        transactions = CleanedTransactionMetadata()
        transactions.add_aborted_transactions(collect_aborted_transactions(start, end))
        last_committed: RecordBatch | None = None  # the range's last committed data batch holding records
        try:
            for segment in segments_overlapping(segments, start, end):
                check_done()
                _, position = segment.offset_index.lookup(start)
                for _, batch in segment.log.batches(position):
                    if batch.base_offset >= end:
                        break
                    throttle(batch.size_bytes)
                    stats.map_bytes_read += batch.size_bytes
                    stats.map_messages_read += batch.records_count
                    if batch.is_control:
                        transactions.on_control_batch_read(batch)
                        what = "a transaction marker"
                    elif transactions.on_batch_read(batch):
                        what = "a record of an aborted transaction"
                    else:
                        if batch.records_count and batch.last_offset >= start:
                            last_committed = batch
                        continue
                    retained = cursor.take(batch.base_offset, batch.last_offset)
                    if retained:
                        raise InvalidRetainedOffsetPlanError(
                            f"plan retains offset {retained[0]}, {what}: plans must be computed from committed "
                            "records only (read_committed), keyless records, markers and aborted records excluded")
        finally:
            cursor.close()
        self._verify_coverage(last_committed)

    def _verify_coverage(self, last_committed: RecordBatch | None) -> None:
        """The plan must reach the range's last committed keyed record (the latest of its key, necessarily)."""
        if last_committed is None:
            return
        keyed = [offset for offset, key in last_committed.keys()  # noqa: SIM118 - a record batch, not a dict
                 if key is not None and self.start_offset <= offset < self.end_offset]
        if keyed and self.plan.last_offset < keyed[-1]:
            ends = f"ends at offset {self.plan.last_offset}" if self.plan.count else "is empty"
            raise InvalidRetainedOffsetPlanError(
                f"plan {ends}, but [{self.start_offset}, {self.end_offset}) holds a committed record at offset "
                f"{keyed[-1]}, the latest of its key: the plan does not cover its range (a partial read?)")

    # ------------------------------------------------------------ second pass
    def _retained_offsets(self, batch: RecordBatch) -> set[int]:
        base_offset = batch.base_offset
        if base_offset < self._next_offset:
            raise RuntimeError(f"batches out of order: {base_offset} after {self._next_offset - 1}")
        self._next_offset = batch.last_offset + 1
        return set(self._cursor.take(base_offset, batch.last_offset))

    def latest_offsets_of(self, batch: RecordBatch) -> set[int] | None:
        """The offsets of a data batch that survive, when the plan answers for every record (the batch lies
        inside the range); None otherwise (the caller decodes and asks `retained_records`)."""
        if batch.base_offset < self.start_offset or batch.last_offset >= self.end_offset:
            return None
        return self._retained_offsets(batch)

    def retained_records(self, batch: RecordBatch, records: Sequence[RecordLike], retain_deletes: bool,
                         stats: CleanerStats) -> tuple[Sequence[RecordLike], bool]:
        """The records of a data batch that survive, and whether a tombstone is among them."""
        start, end = self.start_offset, self.end_offset
        if batch.base_offset >= end:  # not part of the round
            return records, any(record.value is None for record in records)
        retained_offsets = self._retained_offsets(batch) if batch.last_offset >= start else set()
        retained: list[RecordLike] = []
        contains_tombstones = False
        for record in records:
            offset = record.offset
            if offset >= end:
                keep = True
            elif record.key is None:
                stats.invalid_messages_read += 1
                continue
            else:
                keep = (offset < start or offset in retained_offsets) and (record.value is not None or retain_deletes)
            if keep:
                retained.append(record)
                if record.value is None:
                    contains_tombstones = True
        return retained, contains_tombstones

"""Loads one partition directory at startup: swap recovery, segment loading, crash recovery.

Order (Kafka's LogLoader, spec §2.8):
1. delete `*.deleted` files and stray `*.tmp` files;
2. with `minCleaned` = the smallest base offset of any `*.cleaned` file, delete every `*.swap` file at or
   above it (an incomplete multi-segment swap), then every `*.cleaned` file;
3. for each remaining `.log.swap`, delete the live segment files whose base offset is inside the swap
   segment's `[base, next offset)` range, then rename every `*.swap` file to its live name;
4. open the segments; rebuild the indexes of any segment whose index is missing or, from the segment holding the
   recovery point on, fails its sanity check (older segments' indexes are trusted and read lazily, as Kafka's);
5. without a clean shutdown, recover (validate + truncate torn tail + rebuild indexes) every segment from the
   one holding the recovery point; a segment that had to be truncated drops every later segment.
   Recovering a segment replays its producer batches into a throwaway producer state that starts as of the
   segment's base offset (newest snapshot at or below it + the batches after), which rebuilds the segment's
   `.txnindex` (Kafka's LogLoader.recoverSegment); the log's own producer state is rebuilt afterwards.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from minikafka.storage.file_records import FileRecords, fill_ahead_bytes_for
from minikafka.storage.indexes import IndexCorruptError
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_segment import CLEANED_SUFFIX, DELETED_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, LogSegment
from minikafka.storage.producer_state import ProducerStateManager

logger = logging.getLogger(__name__)


@dataclass
class LoadedLog:
    """The result of loading a partition directory."""

    segments: list[LogSegment]
    log_end_offset: int
    log_start_offset: int
    recovery_point: int
    truncated_bytes: int


def _base_offset(path: Path) -> int | None:
    try:
        return int(path.name.split(".", 1)[0])
    except ValueError:
        return None


class LogLoader:
    """Stateless per call; the caller guarantees nobody else touches the directory while it loads."""

    def __init__(self, dir: Path, config: LogConfig, *, recovery_point: int = 0, log_start_offset: int = 0,
                 clean_shutdown: bool = False, now_ms: int = 0) -> None:
        self.dir = Path(dir)
        self.config = config
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self.clean_shutdown = clean_shutdown
        self.now_ms = now_ms

    def _new_segment(self, base_offset: int, suffix: str = "") -> LogSegment:
        # filled ahead unless a swap file's: the last one loaded is the one appended to
        return LogSegment(self.dir, base_offset, index_interval_bytes=self.config.index_interval_bytes,
                          max_index_size_bytes=self.config.segment_index_bytes, suffix=suffix,
                          rolling_jitter_ms=self.config.random_segment_jitter_ms(), created_ms=self.now_ms,
                          fill_ahead_bytes=0 if suffix else fill_ahead_bytes_for(self.dir))

    # --------------------------------------------------------------- swap recovery
    def remove_temp_files_and_complete_swaps(self) -> None:
        files = [p for p in self.dir.iterdir() if p.is_file()]
        for path in files:
            if path.name.endswith(DELETED_SUFFIX) or path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
        files = [p for p in self.dir.iterdir() if p.is_file()]
        cleaned = [p for p in files if p.name.endswith(CLEANED_SUFFIX)]
        swaps = [p for p in files if p.name.endswith(SWAP_SUFFIX)]
        cleaned_bases = [b for b in (_base_offset(p) for p in cleaned) if b is not None]
        if cleaned_bases:
            min_cleaned = min(cleaned_bases)
            for path in swaps:
                base = _base_offset(path)
                if base is not None and base >= min_cleaned:
                    logger.info("Deleting incomplete swap file %s", path)
                    path.unlink(missing_ok=True)
            for path in cleaned:
                path.unlink(missing_ok=True)
        swaps = [p for p in self.dir.iterdir() if p.name.endswith(SWAP_SUFFIX)]
        log_swaps = [p for p in swaps if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
        if log_swaps:
            ranges = []
            for path in log_swaps:
                base = _base_offset(path)
                if base is None:
                    continue
                records = FileRecords(path)
                next_offset = base
                try:
                    for _, batch in records.batches(allow_torn_tail=True):
                        next_offset = batch.next_offset
                finally:
                    records.close()
                ranges.append((base, next_offset))
            min_swap_base = min(r[0] for r in ranges)
            max_swap_next = max(r[1] for r in ranges)
            for path in self.dir.iterdir():
                if not path.is_file() or path.name.endswith(SWAP_SUFFIX) or path.name.endswith(".snapshot"):
                    continue
                base = _base_offset(path)
                if base is not None and min_swap_base <= base < max_swap_next and \
                        path.name.split(".", 1)[1] in ("log", "index", "timeindex", "txnindex"):
                    logger.info("Deleting segment file %s replaced by a swap segment", path)
                    path.unlink(missing_ok=True)
        for path in swaps:
            if path.exists():
                path.rename(path.with_name(path.name[: -len(SWAP_SUFFIX)]))

    # -------------------------------------------------------------------- load
    def load(self) -> LoadedLog:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.remove_temp_files_and_complete_swaps()
        bases = sorted(b for b in (_base_offset(p) for p in self.dir.glob("*" + LOG_SUFFIX)) if b is not None)
        segments: list[LogSegment] = []
        for i, base in enumerate(bases):
            segment = self._new_segment(base)
            # a segment wholly below the recovery point was flushed: its indexes are trusted and left unread
            below_recovery_point = i + 1 < len(bases) and bases[i + 1] <= self.recovery_point
            try:
                segment.sanity_check(check_indexes=not below_recovery_point)
            except IndexCorruptError as exc:
                logger.warning("Rebuilding indexes of %s: %s", segment.log.path, exc)
                segment.recover(self._producer_state_at(segments, base))
            segments.append(segment)
        truncated = 0
        if not self.clean_shutdown:
            truncated = self._recover_unflushed(segments)
        if not segments:
            segments.append(self._new_segment(max(self.log_start_offset, 0)))
        log_end_offset = segments[-1].next_offset
        log_start_offset = max(self.log_start_offset, segments[0].base_offset)
        if log_start_offset > log_end_offset:
            log_start_offset = log_end_offset
        recovery_point = min(max(self.recovery_point, 0), log_end_offset)
        if not self.clean_shutdown:
            recovery_point = log_end_offset  # every segment past the old point was just validated
        return LoadedLog(segments, log_end_offset, log_start_offset, recovery_point, truncated)

    def _producer_state_at(self, segments: list[LogSegment], offset: int) -> ProducerStateManager:
        """Producer state as of `offset` from the snapshots and the batches of `segments` below it."""
        state = ProducerStateManager(self.dir)
        start = state.load_snapshot_at_or_below(offset)
        if start is None:
            start = self.log_start_offset
        for segment in segments:
            if segment.next_offset <= start or segment.base_offset >= offset:
                continue
            _, position = segment.offset_index.lookup(start)
            for _, batch in segment.log.batches(position, allow_torn_tail=True):
                if batch.base_offset >= offset:
                    break
                if batch.last_offset >= start and batch.producer_id >= 0:
                    completed = state.update(batch)
                    if completed is not None:
                        state.complete_txn(completed)
        return state

    def _recover_unflushed(self, segments: list[LogSegment]) -> int:
        truncated_total = 0
        state: ProducerStateManager | None = None
        i = 0
        while i < len(segments):
            segment = segments[i]
            is_last = i == len(segments) - 1
            if not is_last and segments[i + 1].base_offset <= self.recovery_point:
                i += 1
                continue
            logger.info("Recovering unflushed segment %d in %s", segment.base_offset, segment.dir)
            if state is None:
                state = self._producer_state_at(segments[:i], segment.base_offset)
            truncated = segment.recover(state)
            truncated_total += truncated
            if truncated:
                logger.warning("Truncated %d invalid bytes at the end of %s", truncated, segment.log.path)
                for later in segments[i + 1 :]:
                    logger.warning("Deleting segment %s after a corrupt segment", later.log.path)
                    later.delete()
                del segments[i + 1 :]
                if segment.is_empty and i > 0:
                    segment.delete()
                    del segments[i]
                break
            i += 1
        return truncated_total

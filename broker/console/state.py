"""What the console shows, read from the broker's live objects: topics with their size and compaction status,
consumer groups with their lag, a topic's partitions and segments as the cleaner sees them, and a key's records.

Plain dataclasses, no HTML (broker/console/pages.py renders them). `topic_views`, `topic_detail` and `key_lookup` read
logs, the cleaner checkpoint and files: call them in a worker thread (the logs and the cleaner are thread-safe).
`group_lags` and `share_group_views` read the group and share coordinators' maps, which only the event loop may
touch: call them on the loop.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

from minikafka.broker.groups.group_coordinator import GroupCoordinator
from minikafka.broker.key_records import KeyRecord, default_partition, scan_partition_dir
from minikafka.broker.share.share_coordinator import ShareCoordinator
from minikafka.cleaner.cleaner_metrics import PartitionCleaningStatus
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog

#: max.compaction.lag.ms at its default (Long.MAX_VALUE): no KIP-354 deadline
NO_DEADLINE_MS = 2**63 - 1
INTERNAL_PREFIX = "__"


@dataclass(frozen=True)
class SegmentView:
    """One segment as drawn: `kind` is clean (below the cleaner checkpoint), dirty, or active."""

    base_offset: int
    end_offset: int
    size_bytes: int
    first_timestamp_ms: int | None
    last_timestamp_ms: int | None
    kind: str


@dataclass(frozen=True)
class PartitionView:
    partition: int
    log_start_offset: int
    log_end_offset: int
    size_bytes: int
    checkpoint_offset: int | None
    dirty_ratio: float | None
    dirty_bytes: int
    deadline_ms: int | None  # KIP-354: the oldest dirty record must be cleaned by then (None: no deadline/dirt)
    last_clean_ms: int | None
    records_removed: int
    bytes_removed: int
    tombstones_pending: int
    tombstone_horizon_ms: int | None
    failure: str | None
    segments: list[SegmentView] = field(default_factory=list)


@dataclass(frozen=True)
class TopicView:
    name: str
    partitions: int
    policy: str
    compacted: bool
    size_bytes: int
    offset_span: int  # log end minus log start, summed: the records a delete topic holds, an upper bound if compacted
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    delete_retention_ms: int
    status: str  # the compaction status in a few words ("" for a delete topic)
    partition_views: list[PartitionView] = field(default_factory=list)


@dataclass(frozen=True)
class GroupLag:
    group_id: str
    group_type: str
    state: str
    lag: int
    partitions: list[tuple[str, int, int, int]]  # (topic, partition, committed offset, lag)


@dataclass(frozen=True)
class ShareGroupView:
    """A share group (KIP-932): its members and, per share partition this broker has loaded, the records in flight
    (available or acquired) and archived between the share-partition start offset and its end."""

    group_id: str
    state: str
    members: list[tuple[str, str, str]]  # (member id, client id, client host)
    in_flight: int
    archived: int
    partitions: list[tuple[str, int, int, int, int]]  # (topic, partition, start offset, in flight, archived)


@dataclass(frozen=True)
class KeyLookup:
    topic: str
    partition: int
    key: bytes
    records: list[KeyRecord]
    latest_offset: int | None
    files: list[str]
    gone_by: dict[int, str]  # offset -> when that superseded record will be gone, in words
    value: bytes | None = None
    value_offset: int | None = None


class ConsoleState:
    """Reads for the console pages; owns nothing (see the module docstring for threads)."""

    def __init__(self, log_manager: LogManager, log_cleaner: LogCleaner) -> None:
        self.log_manager = log_manager
        self.log_cleaner = log_cleaner

    def topic_views(self, now_ms: int, *, internal: bool = False) -> list[TopicView]:
        statuses = self._statuses()
        views = []
        for name in sorted(self.log_manager.topics()):
            if internal or not name.startswith(INTERNAL_PREFIX):
                view = self.topic_detail(name, now_ms, statuses=statuses, with_segments=False)
                if view is not None:
                    views.append(view)
        return views

    def _statuses(self) -> dict[tuple[str, int], PartitionCleaningStatus]:
        return {(s.topic, s.partition): s for s in self.log_cleaner.partition_status()}

    def topic_detail(self, name: str, now_ms: int, *, statuses: dict[tuple[str, int], PartitionCleaningStatus]
                     | None = None, with_segments: bool = True) -> TopicView | None:
        meta = self.log_manager.topic(name)
        if meta is None:
            return None
        config = self.log_manager.log_config(name)
        statuses = self._statuses() if statuses is None else statuses
        checkpoints = self.log_cleaner.cleaner_checkpoints()
        marks = self.log_cleaner.manager.uncleanable_partitions()
        partitions = []
        for index in range(meta.num_partitions):
            log = self.log_manager.get_log(name, index)
            if log is None:
                continue
            mark = marks.get((name, index))
            failure = (f"{mark.reason} ({mark.failures} failed round(s){', uncleanable' if mark.permanent else ''})"
                       if mark is not None and mark.log_identity == id(log) else None)
            partitions.append(self._partition(log, checkpoints.get((name, index)), statuses.get((name, index)),
                                              failure, with_segments))
        compacted = config.compact
        return TopicView(
            name=name, partitions=meta.num_partitions, policy=",".join(config.cleanup_policy), compacted=compacted,
            size_bytes=sum(p.size_bytes for p in partitions),
            offset_span=sum(p.log_end_offset - p.log_start_offset for p in partitions),
            min_cleanable_dirty_ratio=config.min_cleanable_dirty_ratio,
            min_compaction_lag_ms=config.min_compaction_lag_ms, max_compaction_lag_ms=config.max_compaction_lag_ms,
            delete_retention_ms=config.delete_retention_ms,
            status=_compaction_status(partitions, config.min_cleanable_dirty_ratio, now_ms) if compacted else "",
            partition_views=partitions,
        )

    def _partition(self, log: UnifiedLog, checkpoint: int | None, status: PartitionCleaningStatus | None,
                   failure: str | None, with_segments: bool) -> PartitionView:
        segments = log.segments()
        log_end = log.log_end_offset
        first_dirty = max(checkpoint or 0, log.log_start_offset)
        views = []
        for i, segment in enumerate(segments):
            end = segments[i + 1].base_offset if i + 1 < len(segments) else log_end
            if i == len(segments) - 1:
                kind = "active"
            elif checkpoint is not None and end <= checkpoint:
                kind = "clean"
            else:
                kind = "dirty"
            first_ts = segment.rolling_based_timestamp
            last_ts = segment.max_timestamp_so_far if segment.max_timestamp_so_far >= 0 else None
            views.append(SegmentView(segment.base_offset, end, segment.size_bytes, first_ts, last_ts, kind))
        deadline_ms = None
        config = log.config
        if config.compact and config.max_compaction_lag_ms < NO_DEADLINE_MS and first_dirty < log_end:
            dirty_firsts = [v.first_timestamp_ms for v in views if v.end_offset > first_dirty and v.size_bytes
                            and v.first_timestamp_ms is not None and v.first_timestamp_ms > 0]
            if dirty_firsts:
                deadline_ms = min(dirty_firsts) + config.max_compaction_lag_ms
        record = status.record if status is not None else self.log_cleaner.cleaning_record(log)
        return PartitionView(
            partition=log.partition, log_start_offset=log.log_start_offset, log_end_offset=log_end,
            size_bytes=sum(v.size_bytes for v in views), checkpoint_offset=checkpoint,
            dirty_ratio=status.dirty_ratio if status is not None else None,
            dirty_bytes=status.dirty_bytes if status is not None else 0, deadline_ms=deadline_ms,
            last_clean_ms=record.last_clean_ms, records_removed=record.records_removed,
            bytes_removed=record.bytes_removed, tombstones_pending=record.tombstones_pending,
            tombstone_horizon_ms=record.tombstone_horizon_ms, failure=failure,
            segments=views if with_segments else [],
        )

    def key_lookup(self, topic: str, key: bytes, partition: int | None, now_ms: int,
                   show_offset: int | None = None) -> KeyLookup | None:
        meta = self.log_manager.topic(topic)
        if meta is None:
            return None
        if partition is None:
            partition = default_partition(key, meta.num_partitions)
        log = self.log_manager.get_log(topic, partition)
        if log is None:
            return None
        scan, value = scan_partition_dir(Path(log.dir), key, with_values_at=show_offset)
        live = [r for r in scan.records if r.file.endswith(".log")]
        latest = live[-1].offset if live else None
        config = log.config
        gone_by: dict[int, str] = {}
        for record in scan.records:
            if record.file.endswith(".deleted"):
                gone_by[record.offset] = (f"in a segment waiting for deletion: unlinked within "
                                          f"file.delete.delay.ms ({_duration(config.file_delete_delay_ms)})")
            elif record.offset == latest:
                gone_by[record.offset] = (
                    "the latest record: a tombstone stays until delete.retention.ms after a round cleans past it"
                    if record.value_bytes < 0 else "the latest value: kept")
            elif latest is not None and config.compact:
                newest = live[-1].timestamp_ms
                floor_ms = newest + config.min_compaction_lag_ms
                if config.max_compaction_lag_ms < NO_DEADLINE_MS:
                    gone_by[record.offset] = (
                        f"superseded: gone {_when(max(floor_ms, newest + config.max_compaction_lag_ms), now_ms)}"
                        " (max.compaction.lag.ms, plus one cleaner backoff)")
                else:
                    gone_by[record.offset] = (
                        f"superseded: gone at a round after {_iso(floor_ms)} once the dirty ratio "
                        f"reaches min.cleanable.dirty.ratio={config.min_cleanable_dirty_ratio:g} "
                        "(no deadline: max.compaction.lag.ms is not set)")
            else:
                gone_by[record.offset] = "kept (the topic is not compacted)"
        return KeyLookup(topic, partition, key, scan.records, latest, scan.files, gone_by,
                         value if show_offset is not None else None, show_offset)


def group_lags(coordinator: GroupCoordinator | None, log_manager: LogManager) -> list[GroupLag]:
    """Every listed consumer group (classic and KIP-848) with its committed offsets' lag. Event loop only."""
    if coordinator is None or not coordinator.active:
        return []
    _error, listed = coordinator.admin.handle_list_groups()
    lags = []
    for group_id, _protocol, state, group_type in sorted(listed):
        group = coordinator.manager.groups.get(group_id)
        rows = []
        for (topic, partition), committed in sorted((group.offsets if group is not None else {}).items()):
            log = log_manager.get_log(topic, partition)
            end = log.log_end_offset if log is not None else committed.offset
            rows.append((topic, partition, committed.offset, max(end - committed.offset, 0)))
        lags.append(GroupLag(group_id, group_type, state, sum(row[3] for row in rows), rows))
    return lags


def share_group_views(share: ShareCoordinator | None) -> list[ShareGroupView]:
    """Every share group with its members and record counts (the minikafka_share_group_records gauge's), from the
    share coordinator's read model. Event loop only."""
    if share is None:
        return []
    model = share.read_model()
    partitions: dict[str, list[tuple[str, int, int, int, int]]] = {}
    for p in model.partitions:
        partitions.setdefault(p.group_id, []).append((p.topic, p.partition, p.start_offset, p.in_flight, p.archived))
    views = []
    for group in model.groups:
        rows = sorted(partitions.get(group.group_id, []))
        views.append(ShareGroupView(group.group_id, group.state, list(group.members), sum(r[3] for r in rows),
                                    sum(r[4] for r in rows), rows))
    return views


def _compaction_status(partitions: list[PartitionView], min_ratio: float, now_ms: int) -> str:
    if any(p.failure for p in partitions):
        return "cleaning failed"
    if any(p.deadline_ms is not None and p.deadline_ms <= now_ms for p in partitions):
        return "overdue (max.compaction.lag.ms)"
    ratios = [p.dirty_ratio for p in partitions if p.dirty_ratio is not None]
    worst = max(ratios, default=0.0)
    if worst >= min_ratio and worst > 0:
        return f"cleaning due: {worst:.0%} dirty"
    if not any(p.checkpoint_offset is not None for p in partitions):
        return f"never cleaned: {worst:.0%} dirty"
    return f"clean: {worst:.0%} dirty"


def _duration(ms: int) -> str:
    seconds = ms / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


def _iso(time_ms: int) -> str:
    return datetime.datetime.fromtimestamp(time_ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _when(time_ms: int, now_ms: int) -> str:
    left = time_ms - now_ms
    return f"within {_duration(left)}" if left > 0 else "at the next cleaning round"

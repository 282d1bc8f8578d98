"""Every partition log of one log dir, the topic registry and the log-dir level files.

Files in the log dir: `minikafka-topics.json` (topic id, partition count and config overrides per topic,
replaced atomically), `meta.properties`, `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`producer-id-block`, and `.kafka_cleanshutdown` (written last by `shutdown()`; its presence at startup skips
crash recovery). Each `<topic>-<partition>` directory gets Kafka's `partition.metadata`.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from minikafka.protocol.errors import (
    InvalidPartitionsError,
    InvalidTopicExceptionError,
    KafkaStorageError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from minikafka.storage.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    OffsetCheckpointFile,
    atomic_write,
)
from minikafka.storage.clock import Clock
from minikafka.storage.free_space import LOG_DIR_CONFIG_DEF, MIN_FREE_BYTES_CONFIG, FreeSpaceGuard
from minikafka.storage.log_config import LogConfig
from minikafka.storage.producer_id_manager import ProducerIdManager
from minikafka.storage.unified_log import DISK_FAILURE_ERRNOS, UnifiedLog

logger = logging.getLogger(__name__)

TOPIC_REGISTRY_FILE = "minikafka-topics.json"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES_FILE = "meta.properties"
PARTITION_METADATA_FILE = "partition.metadata"
DELETE_DIR_SUFFIX = "-delete"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def validate_topic_name(name: str) -> None:
    if not name:
        raise InvalidTopicExceptionError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicExceptionError('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicExceptionError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name}")
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise InvalidTopicExceptionError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'")


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    config_overrides: dict[str, str] = field(default_factory=dict)


class LogManager:
    """Owns the UnifiedLogs of one log dir and the topic registry.

    Thread-safe. `_lock` guards the in-memory registry and the log map and is held for memory work only: the
    event loop takes it for every lookup. `_registry_lock` serialises the admin changes (create, delete, add
    partitions, alter configs), which open logs, write files and wait for the cleaner under it; the event loop
    never takes it. Each UnifiedLog has its own lock.
    """

    def __init__(self, log_dir: Path, broker_props: Mapping[str, str], clock: Clock) -> None:
        self.log_dir = Path(log_dir)
        self.broker_props = dict(broker_props)
        self.clock = clock
        self._lock = threading.RLock()
        self._registry_lock = threading.RLock()
        self._topics: dict[str, TopicMetadata] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}  # topic id -> name, kept with _topics (Fetch v13+ per request)
        self._logs: dict[tuple[str, int], UnifiedLog] = {}
        self._recovery_checkpoint = OffsetCheckpointFile(self.log_dir / RECOVERY_POINT_CHECKPOINT)
        self._log_start_checkpoint = OffsetCheckpointFile(self.log_dir / LOG_START_OFFSET_CHECKPOINT)
        self.cleaner_offset_checkpoint = OffsetCheckpointFile(self.log_dir / CLEANER_OFFSET_CHECKPOINT)
        #: serialises read-modify-write cycles of `cleaner_offset_checkpoint` (cleaner threads, topic deletion)
        self.cleaner_checkpoint_lock = threading.RLock()
        #: why the log dir was taken offline (Kafka's offline log dir), None while it is online
        self.offline_reason: str | None = None
        self._producer_ids: ProducerIdManager | None = None
        min_free_bytes = int(LOG_DIR_CONFIG_DEF.parse(self.broker_props)[MIN_FREE_BYTES_CONFIG])
        #: `minikafka.log.dir.min.free.bytes`, shared by the logs of client topics (None: no floor)
        self.space_guard = FreeSpaceGuard(self.log_dir, min_free_bytes) if min_free_bytes else None
        self.started = False
        #: aborts any cleaning round of a partition and waits for it to stop (the LogCleaner registers it;
        #: Kafka's LogManager.asyncDelete calls cleaner.abortCleaning): called before a deleted log is closed
        self.abort_cleaning: Callable[[str, int], None] | None = None

    # ------------------------------------------------------------------ startup
    def startup(self) -> None:
        with self._lock:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._ensure_meta_properties()
            marker = self.log_dir / CLEAN_SHUTDOWN_FILE
            clean_shutdown = marker.exists()
            for path in self.log_dir.iterdir():
                if path.is_dir() and path.name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(path, ignore_errors=True)
            self._topics = self._read_registry()
            self._names_by_id = {meta.topic_id: name for name, meta in self._topics.items()}
            self._remove_orphan_partition_dirs()
            recovery_points = self._recovery_checkpoint.read()
            log_starts = self._log_start_checkpoint.read()
            for meta in self._topics.values():
                for partition in range(meta.num_partitions):
                    key = (meta.name, partition)
                    self._logs[key] = self._open_log(meta, partition, recovery_points.get(key, 0),
                                                     log_starts.get(key, 0), clean_shutdown)
            marker.unlink(missing_ok=True)
            self._producer_ids = ProducerIdManager(self.log_dir)
            self.started = True
            logger.info("Loaded %d logs from %s (clean shutdown: %s)", len(self._logs), self.log_dir,
                        clean_shutdown)

    def _remove_orphan_partition_dirs(self) -> None:
        """Partition dirs of topics no longer registered (a crash mid-delete) are removed, not resurrected."""
        for path in self.log_dir.iterdir():
            if not path.is_dir() or not (path / PARTITION_METADATA_FILE).exists():
                continue
            topic, _, partition = path.name.rpartition("-")
            meta = self._topics.get(topic)
            if meta is None or not partition.isdigit() or int(partition) >= meta.num_partitions:
                logger.warning("Removing partition directory %s of an unregistered topic", path)
                shutil.rmtree(path, ignore_errors=True)

    def _open_log(self, meta: TopicMetadata, partition: int, recovery_point: int, log_start_offset: int,
                  clean_shutdown: bool) -> UnifiedLog:
        dir = self.log_dir / f"{meta.name}-{partition}"
        config = LogConfig.from_props(meta.config_overrides, self.broker_props, allow_unknown=True)
        log = UnifiedLog(dir, config, clock=self.clock, recovery_point=recovery_point,
                         log_start_offset=log_start_offset, clean_shutdown=clean_shutdown,
                         topic=meta.name, partition=partition, on_log_dir_failure=self.mark_log_dir_offline,
                         space_guard=None if meta.name.startswith("__") else self.space_guard)
        metadata_path = dir / PARTITION_METADATA_FILE
        if not metadata_path.exists():
            atomic_write(metadata_path, f"version: 0\ntopic_id: {uuid_to_base64(meta.topic_id)}\n".encode())
        return log

    def _ensure_meta_properties(self) -> None:
        path = self.log_dir / META_PROPERTIES_FILE
        if path.exists():
            return
        node_id = self.broker_props.get("node.id", self.broker_props.get("broker.id", "1"))
        cluster_id = self.broker_props.get("minikafka.cluster.id") or uuid_to_base64(uuid.uuid4())
        text = (f"#\ncluster.id={cluster_id}\ndirectory.id={uuid_to_base64(uuid.uuid4())}\n"
                f"node.id={node_id}\nversion=1\n")
        atomic_write(path, text.encode())

    def _read_registry(self) -> dict[str, TopicMetadata]:
        path = self.log_dir / TOPIC_REGISTRY_FILE
        if not path.exists():
            return {}
        raw = json.loads(path.read_text())
        return {
            name: TopicMetadata(name, uuid.UUID(entry["topic_id"]), int(entry["num_partitions"]),
                                dict(entry.get("config_overrides", {})))
            for name, entry in raw.get("topics", {}).items()
        }

    def _write_registry(self, topics: Mapping[str, TopicMetadata]) -> None:
        """Replace the registry file with `topics`. Caller holds `_registry_lock` (not `_lock`: it fsyncs)."""
        data = {"version": 1, "topics": {
            name: {"topic_id": str(meta.topic_id), "num_partitions": meta.num_partitions,
                   "config_overrides": meta.config_overrides}
            for name, meta in sorted(topics.items())}}
        atomic_write(self.log_dir / TOPIC_REGISTRY_FILE, json.dumps(data, indent=1).encode())

    # ------------------------------------------------------------------- admin
    def create_topic(self, name: str, num_partitions: int, config_overrides: Mapping[str, str],
                     validate_only: bool = False) -> TopicMetadata:
        validate_topic_name(name)
        with self._registry_lock:
            if name in self.topics():
                raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
            if num_partitions == -1:
                num_partitions = int(self.broker_props.get("num.partitions", "1"))
            if num_partitions <= 0:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            overrides = {k: str(v) for k, v in config_overrides.items()}
            LogConfig.validate_overrides(overrides, self.broker_props)
            meta = TopicMetadata(name, uuid.uuid4(), num_partitions, overrides)
            if validate_only:
                return meta
            with self._storage_errors(f"creating topic {name}"):
                logs = self._open_new_logs(meta, range(num_partitions))
                try:
                    self._write_registry({**self.topics(), name: meta})
                except BaseException:
                    self._discard_new_logs(logs)
                    raise
            with self._lock:  # the topic appears with all its logs at once
                self._topics[name] = meta
                self._names_by_id[meta.topic_id] = name
                self._logs.update(((name, partition), log) for partition, log in logs.items())
            return meta

    def _open_new_logs(self, meta: TopicMetadata, partitions: range) -> dict[int, UnifiedLog]:
        """Fresh logs for `partitions` of `meta`: all of them, or (on an error) none, with their dirs removed."""
        logs: dict[int, UnifiedLog] = {}
        try:
            for partition in partitions:
                shutil.rmtree(self.log_dir / f"{meta.name}-{partition}", ignore_errors=True)
                logs[partition] = self._open_log(meta, partition, 0, 0, True)
        except BaseException:
            self._discard_new_logs(logs)
            for partition in partitions:
                shutil.rmtree(self.log_dir / f"{meta.name}-{partition}", ignore_errors=True)
            raise
        return logs

    @staticmethod
    def _discard_new_logs(logs: Mapping[int, UnifiedLog]) -> None:
        for log in logs.values():
            log.close()
            shutil.rmtree(log.dir, ignore_errors=True)

    @contextmanager
    def _storage_errors(self, operation: str) -> Iterator[None]:
        """An OSError of an admin operation (its changes already undone) becomes KAFKA_STORAGE_ERROR; a failed disk
        (not a full one) also takes the log dir offline, as an append's would."""
        try:
            yield
        except OSError as exc:
            if exc.errno in DISK_FAILURE_ERRNOS:
                self.mark_log_dir_offline(f"I/O error while {operation}: {exc}")
            else:
                logger.error("I/O error while %s: %s", operation, exc)
            raise KafkaStorageError(f"Error while {operation} in {self.log_dir}: {exc}") from exc

    def _require(self, name: str) -> TopicMetadata:
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} does not exist")
        return meta

    def delete_topic(self, name: str) -> None:
        """Forget the topic, abort and wait for any cleaning round of its partitions (Kafka's
        LogManager.asyncDelete -> abortCleaning), then close the logs and remove their directories. A topic of
        the same name cannot be created before this returns (`_registry_lock`), so a round of the old log
        never writes into the new one's directory."""
        with self._registry_lock:
            with self._lock:
                meta = self._require(name)
                del self._topics[name]
                self._names_by_id.pop(meta.topic_id, None)
                logs = {p: self._logs.pop((name, p)) for p in range(meta.num_partitions) if (name, p) in self._logs}
                topics = dict(self._topics)
            try:
                self._write_registry(topics)
            except BaseException:
                with self._lock:
                    self._topics[name] = meta
                    self._names_by_id[meta.topic_id] = name
                    self._logs.update(((name, partition), log) for partition, log in logs.items())
                raise
            if self.abort_cleaning is not None:
                for partition in logs:
                    self.abort_cleaning(name, partition)
            self._remove_deleted_logs(list(logs.values()))
            self._remove_cleaner_checkpoints(name)

    @staticmethod
    def _remove_deleted_logs(logs: list[UnifiedLog]) -> None:
        for log in logs:
            log.close()
            target = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
            log.dir.rename(target)
            shutil.rmtree(target, ignore_errors=True)

    def _remove_cleaner_checkpoints(self, topic: str) -> None:
        """A deleted partition's line leaves `cleaner-offset-checkpoint` (Kafka's updateCheckpoints with
        partitionToRemove; spec §2.9, S47)."""
        if self.offline_reason is not None:
            return
        with self.cleaner_checkpoint_lock:
            try:
                offsets = self.cleaner_offset_checkpoint.read()
            except KafkaStorageError:
                return
            kept = {tp: offset for tp, offset in offsets.items() if tp[0] != topic}
            if len(kept) != len(offsets):
                self.cleaner_offset_checkpoint.write(kept)

    def mark_log_dir_offline(self, reason: str) -> None:
        """Take the log dir offline (Kafka's maybeAddOfflineLogDir after an I/O error or a malformed
        checkpoint file): every partition answers KAFKA_STORAGE_ERROR until the broker restarts."""
        with self._lock:
            if self.offline_reason is not None:
                return
            self.offline_reason = reason
            logs = list(self._logs.values())
        logger.error("Log directory %s is offline: %s", self.log_dir, reason)
        for log in logs:
            log.mark_offline(reason)

    def create_partitions(self, name: str, new_total: int, validate_only: bool = False) -> None:
        with self._registry_lock:
            with self._lock:
                meta = self._require(name)
            if new_total < meta.num_partitions:
                raise InvalidPartitionsError(
                    f"Topic currently has {meta.num_partitions} partitions, which is higher than the "
                    f"requested {new_total}.")
            if new_total == meta.num_partitions:
                raise InvalidPartitionsError(f"Topic already has {meta.num_partitions} partitions.")
            if validate_only:
                return
            with self._storage_errors(f"adding partitions to {name}"):
                logs = self._open_new_logs(meta, range(meta.num_partitions, new_total))
                grown = TopicMetadata(meta.name, meta.topic_id, new_total, meta.config_overrides)
                try:
                    self._write_registry({**self.topics(), name: grown})
                except BaseException:
                    self._discard_new_logs(logs)
                    raise
            with self._lock:
                meta.num_partitions = new_total
                self._logs.update(((name, partition), log) for partition, log in logs.items())

    def alter_topic_config(self, name: str, overrides: Mapping[str, str], validate_only: bool = False) -> None:
        """Replace the topic's overrides (AlterConfigs semantics) and apply them to its logs."""
        with self._registry_lock:
            with self._lock:
                meta = self._require(name)
            new_overrides = {k: str(v) for k, v in overrides.items()}
            config = LogConfig.from_props(new_overrides, self.broker_props)
            if validate_only:
                return
            self._write_registry({**self.topics(), name: TopicMetadata(meta.name, meta.topic_id, meta.num_partitions,
                                                                       new_overrides)})
            with self._lock:
                meta.config_overrides = new_overrides
                logs = [self._logs.get((name, partition)) for partition in range(meta.num_partitions)]
            for log in logs:
                if log is not None:
                    log.update_config(config)

    def log_config(self, name: str) -> LogConfig:
        with self._lock:
            meta = self._require(name)
            return LogConfig.from_props(meta.config_overrides, self.broker_props, allow_unknown=True)

    # ------------------------------------------------------------------- lookup
    def topics(self) -> dict[str, TopicMetadata]:
        with self._lock:
            return dict(self._topics)

    def topic(self, name: str) -> TopicMetadata | None:
        with self._lock:
            return self._topics.get(name)

    def topic_name_for_id(self, topic_id: object) -> str | None:
        with self._lock:
            return self._names_by_id.get(topic_id)  # type: ignore[call-overload]

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        with self._lock:
            return dict(self._names_by_id)

    def get_log(self, topic: str, partition: int) -> UnifiedLog | None:
        with self._lock:
            return self._logs.get((topic, partition))

    def all_logs(self) -> list[UnifiedLog]:
        with self._lock:
            return list(self._logs.values())

    @property
    def cluster_id(self) -> str:
        """The cluster id recorded in meta.properties (written on first startup)."""
        for line in (self.log_dir / META_PROPERTIES_FILE).read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
        raise KafkaStorageError(f"{self.log_dir / META_PROPERTIES_FILE} has no cluster.id")

    def producer_ids(self) -> ProducerIdManager:
        if self._producer_ids is None:
            self._producer_ids = ProducerIdManager(self.log_dir)
        return self._producer_ids

    # ------------------------------------------------------------ housekeeping
    def checkpoint_recovery_points(self) -> None:
        self._recovery_checkpoint.write({(log.topic, log.partition): log.recovery_point for log in self.all_logs()})

    def checkpoint_log_start_offsets(self) -> None:
        self._log_start_checkpoint.write(
            {(log.topic, log.partition): log.log_start_offset for log in self.all_logs()})

    def roll_due_segments(self, now_ms: int) -> None:
        """Time-based rolls of idle active segments, fsync of every segment rolled since last time, and the
        unlinking of `.deleted` segments whose `file.delete.delay.ms` has passed."""
        for log in self.all_logs():
            log.roll_if_due(now_ms)
            log.flush_rolled_segments()
            log.delete_pending_segments(now_ms)

    def enforce_retention(self, now_ms: int) -> None:
        deleted = 0
        for log in self.all_logs():
            deleted += log.delete_retention_segments(now_ms)
        if deleted:
            self.checkpoint_log_start_offsets()

    def flush_dirty_logs(self, now_ms: int) -> None:
        for log in self.all_logs():
            config = log.config
            if log.unflushed_messages >= config.flush_messages or (
                    log.unflushed_messages > 0 and now_ms - log.last_flush_ms >= config.flush_ms):
                log.flush()

    def shutdown(self) -> None:
        """Flush and close every log (snapshots producer state), write checkpoints, then the clean marker."""
        with self._lock:
            for log in self._logs.values():
                log.close()
            try:
                self.checkpoint_recovery_points()
                self.checkpoint_log_start_offsets()
                atomic_write(self.log_dir / CLEAN_SHUTDOWN_FILE, b"")
            except OSError as exc:  # a full disk: without the clean marker the next start recovers as after a crash
                logger.error("Could not write the checkpoints of %s at shutdown: %s", self.log_dir, exc)
            self.started = False

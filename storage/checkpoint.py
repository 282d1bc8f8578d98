"""Kafka's offset checkpoint files (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`cleaner-offset-checkpoint`): text `0`, the entry count, then `topic partition offset` lines.

Writes are atomic: a `.tmp` sibling is written and fsynced, renamed over the file, and the directory fsynced.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minikafka.protocol.errors import KafkaStorageError

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
_VERSION = 0

TopicPartition = tuple[str, int]


#: fsync of a directory is not supported here (some filesystems, other platforms): nothing to make durable.
_DIR_FSYNC_UNSUPPORTED = frozenset({errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EOPNOTSUPP})


def fsync_dir(path: Path) -> None:
    """fsync a directory so renames inside it are durable (no-op where directories cannot be opened or synced);
    any other error (EIO) is raised, as Kafka's Utils.flushDir does."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _DIR_FSYNC_UNSUPPORTED:
            raise
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, durable: bool = True, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically (tmp + rename). `durable` adds the fsyncs that make it survive
    a power loss; without them it still survives a process crash (the page cache is the kernel's). With `mode`
    (0o600 for a file holding secrets) the file has that mode from before its first byte, whatever the umask."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if mode is None else mode)
        with open(fd, "wb") as f:
            if mode is not None:
                os.fchmod(fd, mode)  # a leftover .tmp keeps its old mode through O_CREAT
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not leave a `.tmp` behind
        raise
    if durable:
        fsync_dir(path.parent)


def read_json_document(path: Path, version: int) -> dict[str, Any] | None:
    """The JSON object in `path` (None when there is no file), checked to carry `"version": version`; ValueError
    (json.JSONDecodeError included) when it is not such an object. For the broker's small state files (ACLs, SCRAM
    credentials, client quotas) written with `atomic_write`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("version") != version:
        found = document.get("version") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"unsupported version {found!r}")
    return document


class OffsetCheckpointFile:
    """One checkpoint file; a lock serialises writers, so it is thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [str(_VERSION), str(len(offsets))]
        lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
        with self._lock:
            atomic_write(self.path, ("\n".join(lines) + "\n").encode())

    def read(self) -> dict[TopicPartition, int]:
        """The entries, or {} if the file does not exist; KafkaStorageError if it is malformed."""
        with self._lock:
            try:
                text = self.path.read_text()
            except FileNotFoundError:
                return {}
        lines = text.splitlines()
        try:
            if int(lines[0]) != _VERSION:
                raise ValueError(f"unsupported version {lines[0]}")
            count = int(lines[1])
            entries: dict[TopicPartition, int] = {}
            for line in lines[2 : 2 + count]:
                topic, partition, offset = line.split()
                entries[(topic, int(partition))] = int(offset)
            if len(entries) != count:
                raise ValueError(f"expected {count} entries, found {len(entries)}")
        except (ValueError, IndexError) as exc:
            raise KafkaStorageError(f"Malformed line in checkpoint file {self.path}: {exc}") from None
        return entries

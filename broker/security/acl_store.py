"""`AclStore`: the ACL bindings persisted in the log dir (`minikafka-acls.json`), where Kafka keeps them in its
metadata log.

The file is JSON `{"version": 1, "acls": [...]}` with one object per binding in Kafka's enum names, replaced
atomically (tmp + fsync + rename, `storage.checkpoint.atomic_write`). Writes carry the authorizer's generation
number so that, when two writes race in worker threads, an older snapshot never overwrites a newer one.
Thread-safe: a lock serialises writers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path

from minikafka.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.checkpoint import atomic_write, read_json_document

ACL_FILE = "minikafka-acls.json"
_VERSION = 1


class AclStore:
    def __init__(self, log_dir: Path) -> None:
        self.path = Path(log_dir) / ACL_FILE
        self._lock = threading.Lock()
        self._written_generation = -1

    def load(self) -> list[AclBinding]:
        """The stored bindings ([] when there is no file); KafkaStorageError when the file is malformed."""
        try:
            document = read_json_document(self.path, _VERSION)
            return [] if document is None else [_decode(item) for item in document["acls"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise KafkaStorageError(f"Malformed ACL file {self.path}: {exc}") from exc

    def write(self, generation: int, bindings: Iterable[AclBinding]) -> None:
        """Persist `bindings` unless a newer generation is already on disk. Blocking (fsync): not on the loop."""
        document = {"version": _VERSION, "acls": [_encode(binding) for binding in sorted(bindings)]}
        data = (json.dumps(document, indent=1) + "\n").encode()
        with self._lock:
            if generation <= self._written_generation:
                return
            atomic_write(self.path, data)
            self._written_generation = generation


def _encode(binding: AclBinding) -> dict[str, str]:
    pattern, entry = binding.pattern, binding.entry
    return {
        "resource_type": pattern.resource_type.name,
        "resource_name": pattern.name,
        "pattern_type": pattern.pattern_type.name,
        "principal": entry.principal,
        "host": entry.host,
        "operation": entry.operation.name,
        "permission_type": entry.permission_type.name,
    }


def _decode(item: dict[str, str]) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType[item["resource_type"]], str(item["resource_name"]),
                        PatternType[item["pattern_type"]]),
        AccessControlEntry(str(item["principal"]), str(item["host"]), AclOperation[item["operation"]],
                           AclPermissionType[item["permission_type"]]),
    )

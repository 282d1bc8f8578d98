"""`GroupConfigStore`: the group config overrides set with Describe/Incremental/AlterConfigs on GROUP resources.

Kafka keeps them as ConfigRecords in its metadata log, apart from the group itself: a group's configs exist before
the group does and outlive it (DescribeConfigs of any group name answers; deleting the group leaves them). minikafka
keeps them in `<first log dir>/group-configs.json` (`{"version": 1, "groups": {group: {name: value}}}`), replaced
atomically (tmp + fsync + rename) on every change. Overrides that the broker's bounds no longer allow (they changed
since) are kept and reported as set, and capped to the bounds where they are applied (Kafka's GroupConfig.evaluate).

Not thread-safe: the event-loop thread reads; `replace` is called by `AdminManager` under its alter lock (the write
itself runs in a worker thread via `persist`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minikafka.broker.groups.group_level_config import GROUP_LEVEL_KEYS, effective_configs
from minikafka.storage.checkpoint import atomic_write

log = logging.getLogger(__name__)

GROUP_CONFIGS_FILE = "group-configs.json"
_VERSION = 1


class GroupConfigStore:
    """Owns every group's config overrides and their file."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / GROUP_CONFIGS_FILE
        self._overrides: dict[str, dict[str, str]] = self._read()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            document = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("Ignoring unreadable group config file %s: %s", self.path, error)
            return {}
        groups = document.get("groups") if isinstance(document, dict) else None
        if document.get("version") != _VERSION or not isinstance(groups, dict):
            log.warning("Ignoring group config file %s: unknown layout", self.path)
            return {}
        overrides: dict[str, dict[str, str]] = {}
        for group_id, configs in groups.items():
            if not isinstance(configs, dict):
                continue
            known = {str(k): str(v) for k, v in configs.items() if k in GROUP_LEVEL_KEYS}
            if len(known) != len(configs):
                log.warning("Ignoring unknown group configs of %s in %s: %s", group_id, self.path,
                            sorted(set(configs) - set(known)))
            if known:
                overrides[str(group_id)] = known
        return overrides

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._overrides.get(group_id, {}))

    def group_ids(self) -> list[str]:
        return sorted(self._overrides)

    def effective(self, group_id: str, broker_props: Mapping[str, str]) -> dict[str, Any]:
        """Every group key's value for `group_id`: its overrides over the broker's values."""
        return effective_configs(self._overrides.get(group_id, {}), broker_props, group_id)

    def document(self, group_id: str, new_overrides: Mapping[str, str]) -> bytes:
        """The file's bytes with `group_id`'s overrides replaced."""
        groups = {g: dict(c) for g, c in self._overrides.items()}
        if new_overrides:
            groups[group_id] = dict(new_overrides)
        else:
            groups.pop(group_id, None)
        return (json.dumps({"version": _VERSION, "groups": groups}, indent=1, sort_keys=True) + "\n").encode()

    def persist(self, data: bytes) -> None:
        """Write the file (a worker thread's job: it fsyncs)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, data)

    def commit(self, group_id: str, new_overrides: Mapping[str, str]) -> None:
        if new_overrides:
            self._overrides[group_id] = dict(new_overrides)
        else:
            self._overrides.pop(group_id, None)

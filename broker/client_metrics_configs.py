"""`ClientMetricsConfigs`: the CLIENT_METRICS config resource (KIP-714 subscriptions, `kafka-configs --entity-type
client-metrics`), described, altered, validated and persisted as Kafka 4.3's ClientMetricsConfigs does.

minikafka does not serve KIP-714 telemetry (GetTelemetrySubscriptions/PushTelemetry are not advertised), so the
subscriptions are stored and reported only. Persisted in `<log dir>/client-metrics-configs.json`
(`{"version": 1, "subscriptions": {name: {key: value}}}`), replaced atomically on every change.

Event-loop thread; alterations serialised by `_lock`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path

from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.checkpoint import atomic_write
from minikafka.storage.config_def import ConfigKey, ConfigType, parse_value
from minikafka.storage.log_config import SOURCE_DEFAULT_CONFIG, ConfigEntry

log = logging.getLogger(__name__)

CLIENT_METRICS_FILE = "client-metrics-configs.json"
SOURCE_CLIENT_METRICS_CONFIG = 7
KEYS = {
    "interval.ms": ConfigKey("interval.ms", ConfigType.INT, 300_000, None, "Metrics push interval in milliseconds"),
    "match": ConfigKey("match", ConfigType.LIST, (), None, "Client match criteria"),
    "metrics": ConfigKey("metrics", ConfigType.LIST, (), None, "Telemetry metric name prefix list"),
}
_MATCH_PARAMS = frozenset(("client_instance_id", "client_id", "client_software_name", "client_software_version",
                           "client_source_address", "client_source_port"))
_VERSION = 1


def validate(name: str, configs: Mapping[str, str]) -> None:
    """Kafka's ClientMetricsConfigs.validate (its exceptions: INVALID_REQUEST or INVALID_CONFIG)."""
    if not name:
        raise InvalidRequestError("Subscription name can't be empty")
    for key in configs:
        if key not in KEYS:
            raise InvalidRequestError(f"Unknown client metrics configuration: {key}")
    parsed = {key: parse_value(KEYS[key], raw) for key, raw in configs.items()}
    for key in ("match", "metrics"):
        values = parsed.get(key, ())
        if len(set(values)) != len(values) or any(not value for value in values if len(values) > 1):
            raise InvalidConfigError(f"Invalid value {configs[key]} for configuration {key}: "
                                     "Values must not be duplicated or empty")
    interval_ms = parsed.get("interval.ms")
    if interval_ms is not None and not 100 <= interval_ms <= 3_600_000:
        raise InvalidRequestError(f"Invalid value {interval_ms} for interval.ms, interval must be between 100 and "
                                  "3600000 (1 hour)")
    for pattern in parsed.get("match", ()):
        param, _, regex = pattern.partition("=")
        if pattern.count("=") != 1 or param.strip() not in _MATCH_PARAMS:
            raise InvalidConfigError(f"Illegal client matching pattern: {pattern}")
        try:
            re.compile(regex.strip())
        except re.error:
            raise InvalidConfigError(f"Illegal client matching pattern: {pattern}") from None


class ClientMetricsConfigs:
    """Owns the client-metrics subscriptions and their file."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / CLIENT_METRICS_FILE
        self._subscriptions: dict[str, dict[str, str]] = self._read()
        self._lock = asyncio.Lock()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            document = json.loads(self.path.read_bytes())
            subscriptions = document["subscriptions"] if document.get("version") == _VERSION else {}
            return {str(n): {str(k): str(v) for k, v in c.items() if k in KEYS} for n, c in subscriptions.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, AttributeError) as error:
            log.warning("Ignoring unreadable client metrics config file %s: %s", self.path, error)
            return {}

    def configs(self, name: str) -> dict[str, str]:
        return dict(self._subscriptions.get(name, {}))

    def names(self) -> list[str]:
        """The subscriptions that have configs (Kafka's ClientMetricsManager.listClientMetricsResources)."""
        return sorted(self._subscriptions)

    def describe(self, name: str) -> list[ConfigEntry]:
        """ConfigHelper.createClientMetricsConfigEntry: every key, its value set or default, source 7 or 5."""
        if not name:
            raise InvalidRequestError("Client metrics subscription name must not be empty")
        configs = self._subscriptions.get(name, {})
        entries = []
        for key_name, key in KEYS.items():
            value = configs.get(key_name)
            shown = value if value is not None else ",".join(key.default) if key.type is ConfigType.LIST \
                else str(key.default)
            entries.append(ConfigEntry(
                name=key_name, value=shown,
                source=SOURCE_CLIENT_METRICS_CONFIG if value is not None else SOURCE_DEFAULT_CONFIG,
                is_sensitive=False, read_only=False, config_type=key.type.describe_code, documentation=key.doc,
                synonyms=[(key_name, value, SOURCE_CLIENT_METRICS_CONFIG)] if value is not None else []))
        return entries

    async def alter(self, name: str, new_configs: Mapping[str, str], validate_only: bool) -> None:
        null_names = [key for key, value in new_configs.items() if value is None]
        if null_names:
            raise InvalidConfigError(f"Null value not supported for client metrics configs: {','.join(null_names)}")
        validate(name, new_configs)
        if validate_only:
            return
        async with self._lock:
            subscriptions = {n: dict(c) for n, c in self._subscriptions.items()}
            if new_configs:
                subscriptions[name] = dict(new_configs)
            else:
                subscriptions.pop(name, None)
            data = (json.dumps({"version": _VERSION, "subscriptions": subscriptions}, indent=1, sort_keys=True)
                    + "\n").encode()
            await asyncio.to_thread(self._write, data)
            self._subscriptions = subscriptions

    def _write(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, data)

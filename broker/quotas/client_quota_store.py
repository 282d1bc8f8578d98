"""`ClientQuotaStore`: the broker's client quota configs (entity -> {key: value}), persisted in the log dir as
`client-quotas.json` and loaded at startup, with Kafka's AlterClientQuotas validation (ClientQuotaControlManager)
and DescribeClientQuotas filtering (ClientQuotasImage.describe).

Keys: `producer_byte_rate`, `consumer_byte_rate` (LONG), `request_percentage`, `controller_mutation_rate`
(DOUBLE) on user/client-id entities; `connection_creation_rate` (INT) on ip entities. All are stored and
described; the first three are enforced (`QuotaManagers`), `controller_mutation_rate` and the ip quota are
accepted and not enforced (minikafka's admin operations are not rate limited). Every change is written
atomically (`storage.checkpoint.atomic_write`: tmp + fsync + rename) before it becomes visible. Thread-safe:
one lock guards the map and the file; `alter()` does file IO with fsync, so event-loop callers run it in a
worker thread.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.broker.quotas.client_quota_manager import CLIENT_ID, IP, USER, QuotaEntity, quota_entity
from minikafka.protocol.errors import ErrorCode, InvalidRequestError, KafkaStorageError, UnsupportedVersionError
from minikafka.storage.checkpoint import atomic_write, read_json_document

CLIENT_QUOTAS_FILE = "client-quotas.json"
_VERSION = 1

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

#: QuotaConfig.userAndClientQuotaConfigs / ipConfigs: key -> type
USER_AND_CLIENT_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
                        CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
_INTEGRAL_MAX = {"SHORT": (2**15 - 1, "a SHORT"), "INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}

MATCH_TYPE_EXACT = 0
MATCH_TYPE_DEFAULT = 1
MATCH_TYPE_SPECIFIED = 2


@dataclass(frozen=True)
class QuotaAlteration:
    """One entry of AlterClientQuotas: the entity as sent (type, name or None) and its ops (key, value or None
    to remove)."""

    entity: tuple[tuple[str, str | None], ...]
    ops: tuple[tuple[str, float | None], ...]


@dataclass(frozen=True)
class AlterQuotaResult:
    entity: tuple[tuple[str, str | None], ...]
    error_code: ErrorCode
    error_message: str | None


class ClientQuotaStore:
    """All client quota configs; `path` None keeps them in memory only (tests, handler-only contexts)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        #: serialises writers (each persists before it publishes); readers on the event loop take no lock, they read
        #: the current dict, which writers replace and never change, so a request never waits for a write's fsync
        self._lock = threading.Lock()
        self._quotas: dict[QuotaEntity, dict[str, float]] = {}

    @classmethod
    def load(cls, log_dir: Path) -> ClientQuotaStore:
        """The store of a log dir: its file's quotas, or none yet."""
        store = cls(Path(log_dir) / CLIENT_QUOTAS_FILE)
        store._quotas = _read(store.path) if store.path is not None else {}
        return store

    def entities(self) -> dict[QuotaEntity, dict[str, float]]:
        return {entity: dict(values) for entity, values in self._quotas.items()}

    def alter(self, alterations: Sequence[QuotaAlteration], validate_only: bool = False) -> list[AlterQuotaResult]:
        """ClientQuotaControlManager.alterClientQuotas: every entity validated, the valid changes applied
        together (unless `validate_only`) and persisted before the results are returned."""
        with self._lock:
            results: dict[QuotaEntity, AlterQuotaResult] = {}
            changes: list[tuple[QuotaEntity, str, float | None]] = []
            for alteration in alterations:
                entity = quota_entity(dict(alteration.entity))
                as_sent = tuple(dict(alteration.entity).items())
                values: dict[str, float | None] = {}
                for key, value in alteration.ops:
                    if key in values:
                        results[entity] = _invalid(as_sent, f"Duplicate quota key {key} not updating quota for this "
                                                            f"entity {_describe_entity(entity)}")
                    else:
                        values[key] = value
                if entity in results:
                    results[entity] = _invalid(as_sent, f"Ignoring duplicate entity {_describe_entity(entity)}")
                    continue
                results[entity] = self._alter_entity(entity, as_sent, values, changes)
            if changes and not validate_only:
                updated = {entity: dict(values) for entity, values in self._quotas.items()}
                for entity, key, value in changes:
                    if value is None:
                        updated.get(entity, {}).pop(key, None)
                        if not updated.get(entity, True):
                            del updated[entity]
                    else:
                        updated.setdefault(entity, {})[key] = value
                self._save(updated)
                self._quotas = updated
            return list(results.values())

    def _alter_entity(self, entity: QuotaEntity, as_sent: tuple[tuple[str, str | None], ...],
                      values: dict[str, float | None], changes: list[tuple[QuotaEntity, str, float | None]]
                      ) -> AlterQuotaResult:
        if not entity:
            return _invalid(as_sent, "Invalid empty client quota entity")
        for entity_type, name in entity:
            if entity_type not in (USER, CLIENT_ID, IP):
                return _invalid(as_sent, f"Unhandled client quota entity type: {entity_type}")
            if name is not None and not name:
                return _invalid(as_sent, f"Empty {entity_type} not supported")
        types = dict(entity)
        if IP in types:
            if USER in types or CLIENT_ID in types:
                return _invalid(as_sent, "Invalid quota entity combination, IP entity shouldnot be combined with "
                                         "User or ClientId")
            if not _is_valid_ip_entity(types[IP]):
                return _invalid(as_sent, f"{types[IP]} is not a valid IP or resolvable host.")
            keys = IP_KEYS
        else:
            keys = USER_AND_CLIENT_KEYS
        current = self._quotas.get(entity, {})
        entity_changes: list[tuple[QuotaEntity, str, float | None]] = []
        for key, value in values.items():
            if value is None:
                if key in current:
                    entity_changes.append((entity, key, None))
                continue
            message = _validate_value(keys, key, value)
            if message is not None:
                return _invalid(as_sent, message)
            if current.get(key) != value:
                entity_changes.append((entity, key, value))
        changes.extend(entity_changes)
        return AlterQuotaResult(as_sent, ErrorCode.NONE, None)

    def describe(self, components: Sequence[tuple[str, int, str | None]], strict: bool
                 ) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """ClientQuotasImage.describe: the entities matching the filter (entity type, match type, match); raises
        InvalidRequestError / UnsupportedVersionError with Kafka's messages for a bad filter."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise InvalidRequestError("Invalid empty entity type.")
            if entity_type in exact or entity_type in specified:
                raise InvalidRequestError(f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in (IP, USER, CLIENT_ID):
                raise UnsupportedVersionError(f"Unsupported entity type {entity_type}")
            if match_type == MATCH_TYPE_EXACT:
                if match is None:
                    raise InvalidRequestError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == MATCH_TYPE_DEFAULT:
                if match is not None:
                    raise InvalidRequestError("Request specified MATCH_TYPE_DEFAULT, but also specified a match "
                                              "string.")
                exact[entity_type] = None
            elif match_type == MATCH_TYPE_SPECIFIED:
                if match is not None:
                    raise InvalidRequestError("Request specified MATCH_TYPE_SPECIFIED, but also specified a match "
                                              "string.")
                specified.add(entity_type)
            else:
                raise InvalidRequestError(f"Unknown match type {match_type}")
        if (IP in exact or IP in specified) and ({USER, CLIENT_ID} & (set(exact) | specified)):
            raise InvalidRequestError("Invalid entity filter component combination. IP filter component should not "
                                      "be used with user or clientId filter component.")
        return [(entity, dict(values)) for entity, values in self._quotas.items()
                if _matches(dict(entity), exact, specified, strict)]

    def _save(self, quotas: dict[QuotaEntity, dict[str, float]]) -> None:
        if self.path is None:
            return
        entries = [{"entity": [{"entity_type": entity_type, "entity_name": name} for entity_type, name in entity],
                    "values": dict(sorted(values.items()))}
                   for entity, values in sorted(quotas.items(), key=lambda item: repr(item[0]))]
        data = json.dumps({"version": _VERSION, "quotas": entries}, indent=1).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, data + b"\n")
        except OSError as error:
            raise KafkaStorageError(f"cannot write {self.path}: {error}") from error


def _matches(entity: dict[str, str | None], exact: dict[str, str | None], specified: set[str], strict: bool) -> bool:
    if strict and len(entity) != len(exact) + len(specified):
        return False
    for entity_type, name in exact.items():
        if entity_type not in entity or entity[entity_type] != name:
            return False
    return all(entity_type in entity for entity_type in specified)


def _invalid(entity: tuple[tuple[str, str | None], ...], message: str) -> AlterQuotaResult:
    return AlterQuotaResult(entity, ErrorCode.INVALID_REQUEST, message)


def _describe_entity(entity: QuotaEntity) -> str:
    """ClientQuotaEntity.toString."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def _validate_value(keys: dict[str, str], key: str, value: float) -> str | None:
    """ClientQuotaControlManager.validateQuotaKeyValue: Kafka's message, or None when valid."""
    key_type = keys.get(key)
    if key_type is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if key_type == "DOUBLE":
        return None
    maximum, name = _INTEGRAL_MAX[key_type]
    if value > maximum:
        return f"Proposed value for {key} is too large for {name}."
    if abs(value % 1.0) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def _is_valid_ip_entity(ip: str | None) -> bool:
    if ip is None:
        return True
    try:
        ipaddress.ip_address(ip)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(ip, None)
        return True
    except OSError:
        return False


def _read(path: Path) -> dict[QuotaEntity, dict[str, float]]:
    try:
        document = read_json_document(path, _VERSION)
        quotas: dict[QuotaEntity, dict[str, float]] = {}
        for entry in [] if document is None else document["quotas"]:
            entity = quota_entity({str(part["entity_type"]): None if part["entity_name"] is None
                                   else str(part["entity_name"]) for part in entry["entity"]})
            quotas[entity] = {str(key): float(value) for key, value in entry["values"].items()}
        return quotas
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise KafkaStorageError(f"malformed client quotas file {path}: {error}") from error

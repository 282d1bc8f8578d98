"""`ScramCredentialStore`: the broker's SCRAM credentials (user, mechanism) -> salted credential, persisted in
the log dir as `scram-credentials.json` and loaded at startup, so AlterUserScramCredentials survives restarts.

The file holds only what a SCRAM server needs (salt, StoredKey, ServerKey, iterations, base64): no password
or salted password is ever written. Every change rewrites the file atomically (`storage.checkpoint`'s
tmp + fsync + rename) before it becomes visible. `alter()` and `describe()` apply Kafka's rules and messages
(ScramControlManager, ScramImage). Thread-safe: one lock guards the map and the file; `alter()` and
`upsert()` do file IO with fsync, so event-loop callers run them in a worker thread.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.broker.security.scram import ScramCredential, ScramMechanism, credential_from_salted_password
from minikafka.protocol.errors import ErrorCode, KafkaStorageError
from minikafka.storage.checkpoint import atomic_write, read_json_document

SCRAM_CREDENTIALS_FILE = "scram-credentials.json"
_VERSION = 1

DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "
ALTER_TWICE = "A user credential cannot be altered twice in the same request"


@dataclass(frozen=True)
class ScramCredentialDeletion:
    user: str
    mechanism_type: int


@dataclass(frozen=True)
class ScramCredentialUpsertion:
    """As AlterUserScramCredentials carries it: the client salts and hashes the password itself."""

    user: str
    mechanism_type: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class AlterResult:
    user: str
    error_code: ErrorCode
    error_message: str | None


@dataclass(frozen=True)
class DescribeResult:
    user: str
    error_code: ErrorCode
    error_message: str | None
    credential_infos: tuple[tuple[int, int], ...]  # (mechanism type, iterations)


class ScramCredentialStore:
    """All SCRAM credentials of the broker; `path` None keeps them in memory only (tests, handler-only contexts)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        #: serialises writers (each persists before it publishes); readers on the event loop take no lock, they read
        #: the current dict, which writers replace and never change, so a login never waits for a write's fsync
        self._lock = threading.Lock()
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}

    @classmethod
    def load(cls, log_dir: Path) -> ScramCredentialStore:
        """The store of a log dir: its file's credentials, or none yet."""
        store = cls(Path(log_dir) / SCRAM_CREDENTIALS_FILE)
        store._credentials = _read(store.path) if store.path is not None else {}
        return store

    def get(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))  # a snapshot: writers replace the dict, never change it

    def users(self) -> list[str]:
        return sorted({user for user, _ in self._credentials})

    def upsert(self, user: str, mechanism: ScramMechanism, credential: ScramCredential) -> None:
        """Add or replace one credential (the `--add-scram` bootstrap)."""
        with self._lock:
            updated = dict(self._credentials)
            updated[(user, mechanism)] = credential
            self._save(updated)
            self._credentials = updated

    def alter(
        self, deletions: Sequence[ScramCredentialDeletion], upsertions: Sequence[ScramCredentialUpsertion]
    ) -> list[AlterResult]:
        """Apply an AlterUserScramCredentials request as Kafka's controller does: a user may appear once per
        request; the valid alterations are applied together and persisted before the results are returned."""
        with self._lock:
            errors: dict[str, AlterResult] = {}
            to_delete: dict[str, tuple[ScramCredentialDeletion, ScramMechanism]] = {}
            to_upsert: dict[str, tuple[ScramCredentialUpsertion, ScramMechanism]] = {}
            for deletion in deletions:
                if deletion.user in errors:
                    continue
                if to_delete.pop(deletion.user, None) is not None:
                    errors[deletion.user] = AlterResult(deletion.user, ErrorCode.DUPLICATE_RESOURCE, ALTER_TWICE)
                    continue
                mechanism, error = _validate_user_and_mechanism(deletion.user, deletion.mechanism_type)
                if error is None and mechanism is not None and (deletion.user, mechanism) not in self._credentials:
                    error = AlterResult(deletion.user, ErrorCode.RESOURCE_NOT_FOUND,
                                        "Attempt to delete a user credential that does not exist")
                if error is not None:
                    errors[deletion.user] = error
                elif mechanism is not None:
                    to_delete[deletion.user] = (deletion, mechanism)
            for upsertion in upsertions:
                if upsertion.user in errors:
                    continue
                if to_delete.pop(upsertion.user, None) is not None or to_upsert.pop(upsertion.user, None) is not None:
                    errors[upsertion.user] = AlterResult(upsertion.user, ErrorCode.DUPLICATE_RESOURCE, ALTER_TWICE)
                    continue
                mechanism, error = _validate_user_and_mechanism(upsertion.user, upsertion.mechanism_type)
                if error is None and mechanism is not None:
                    if upsertion.iterations < mechanism.min_iterations:
                        error = AlterResult(upsertion.user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
                    elif upsertion.iterations > mechanism.max_iterations:
                        error = AlterResult(upsertion.user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
                if error is not None:
                    errors[upsertion.user] = error
                elif mechanism is not None:
                    to_upsert[upsertion.user] = (upsertion, mechanism)
            updated = dict(self._credentials)
            for deletion, mechanism in to_delete.values():
                del updated[(deletion.user, mechanism)]
            for upsertion, mechanism in to_upsert.values():
                updated[(upsertion.user, mechanism)] = credential_from_salted_password(
                    mechanism, upsertion.salt, upsertion.salted_password, upsertion.iterations)
            if to_delete or to_upsert:
                self._save(updated)
                self._credentials = updated
            succeeded = [AlterResult(user, ErrorCode.NONE, None) for user in (*to_delete, *to_upsert)]
            return succeeded + list(errors.values())

    def describe(self, users: Iterable[str] | None) -> list[DescribeResult]:
        """DescribeUserScramCredentials: every user with a credential when `users` is None or empty; a user
        named twice gets DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND (Kafka's ScramImage.describe)."""
        credentials = self._credentials  # one snapshot (see get)
        requested = list(users or ())
        if not requested:
            requested = sorted({user for user, _ in credentials})
        duplicates = {user for user in requested if requested.count(user) > 1}
        results: list[DescribeResult] = []
        for user in dict.fromkeys(requested):
            if user in duplicates:
                results.append(DescribeResult(user, ErrorCode.DUPLICATE_RESOURCE, DESCRIBE_DUPLICATE_USER + user,
                                              ()))
                continue
            infos = tuple((mechanism.type_code, credential.iterations)
                          for mechanism in ScramMechanism
                          if (credential := credentials.get((user, mechanism))) is not None)
            if infos:
                results.append(DescribeResult(user, ErrorCode.NONE, None, infos))
            else:
                results.append(DescribeResult(user, ErrorCode.RESOURCE_NOT_FOUND,
                                              DESCRIBE_USER_THAT_DOES_NOT_EXIST + user, ()))
        return results

    def _save(self, credentials: dict[tuple[str, ScramMechanism], ScramCredential]) -> None:
        if self.path is None:
            return
        entries = [
            {
                "user": user,
                "mechanism": mechanism.mechanism_name,
                "salt": _b64(credential.salt),
                "stored_key": _b64(credential.stored_key),
                "server_key": _b64(credential.server_key),
                "iterations": credential.iterations,
            }
            for (user, mechanism), credential in sorted(credentials.items(), key=lambda item: (item[0][0],
                                                                                               item[0][1].type_code))
        ]
        data = json.dumps({"version": _VERSION, "credentials": entries}, indent=1).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, data + b"\n", mode=0o600)  # salted keys: offline guessing material
        except OSError as error:
            raise KafkaStorageError(f"cannot write {self.path}: {error}") from error


def _validate_user_and_mechanism(user: str, mechanism_type: int) -> tuple[ScramMechanism | None, AlterResult | None]:
    if not user:
        return None, AlterResult(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    mechanism = ScramMechanism.for_type(mechanism_type)
    if mechanism is None:
        return None, AlterResult(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return mechanism, None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read(path: Path) -> dict[tuple[str, ScramMechanism], ScramCredential]:
    try:
        document = read_json_document(path, _VERSION)
        credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}
        for entry in [] if document is None else document["credentials"]:
            mechanism = ScramMechanism.for_mechanism_name(entry["mechanism"])
            if mechanism is None:
                raise ValueError(f"unknown mechanism {entry['mechanism']!r}")
            credentials[(str(entry["user"]), mechanism)] = ScramCredential(
                salt=base64.b64decode(entry["salt"]),
                stored_key=base64.b64decode(entry["stored_key"]),
                server_key=base64.b64decode(entry["server_key"]),
                iterations=int(entry["iterations"]),
            )
        return credentials
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise KafkaStorageError(f"malformed SCRAM credentials file {path}: {error}") from error

"""`StandardAuthorizer`: Kafka's ACL authorizer rules (`StandardAuthorizerData.authorize`) over an in-memory
ACL index, with the bindings persisted in the log dir by an `AclStore`.

Rules, in Kafka's order: a principal listed in `super.users` is always allowed. Otherwise every ACL on the
resource applies — the literal name, the literal wildcard `*`, and each PREFIXED pattern the name starts with —
when its principal is the session's or `User:*` and its host is the client's address or `*`. A matching DENY
wins over any ALLOW. ALLOW ACLs imply operations: ALL implies everything, READ/WRITE/DELETE/ALTER imply
DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS (a DENY applies only to its own operation, or to all for
ALL). With no matching ACL the answer is DENIED, unless the resource has no ACL at all and
`allow.everyone.if.no.acl.found` is true. `authorize_by_resource_type` is Kafka's `Authorizer.
authorizeByResourceType` (KIP-679: may the session WRITE to *some* topic).

Thread-safety: mutations (create/delete) run on the event-loop thread; the index is copy-on-write (a new
immutable index replaces the old one), so `authorize` may be called from any thread. Persistence runs in a
worker thread and the request completes once the file is written, as Kafka answers once the metadata record
is committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.broker.security.acl_store import AclStore
from minikafka.broker.security.acls import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourceType,
    validate_new_binding,
)
from minikafka.broker.security.authorizer_config import AuthorizerConfig
from minikafka.broker.session import Session

log = logging.getLogger(__name__)
audit_log = logging.getLogger("kafka.authorizer.logger")

_IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


class _AclIndex:
    """Immutable lookup structure: entries per (resource type, pattern type, name), plus the lengths of the
    PREFIXED names per resource type so a lookup probes only prefixes that exist."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self.entries: dict[tuple[ResourceType, PatternType, str], list[AccessControlEntry]] = {}
        self.prefix_lengths: dict[ResourceType, list[int]] = {}
        lengths: dict[ResourceType, set[int]] = {}
        for binding in bindings:
            pattern = binding.pattern
            self.entries.setdefault((pattern.resource_type, pattern.pattern_type, pattern.name), []).append(
                binding.entry)
            if pattern.pattern_type is PatternType.PREFIXED:
                lengths.setdefault(pattern.resource_type, set()).add(len(pattern.name))
        self.prefix_lengths = {resource_type: sorted(found) for resource_type, found in lengths.items()}

    def applicable(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        found: list[AccessControlEntry] = []
        found += self.entries.get((resource_type, PatternType.LITERAL, name), ())
        if name != WILDCARD_RESOURCE:
            found += self.entries.get((resource_type, PatternType.LITERAL, WILDCARD_RESOURCE), ())
        for length in self.prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            found += self.entries.get((resource_type, PatternType.PREFIXED, name[:length]), ())
        return found


@dataclass(frozen=True)
class AclDeleteResult:
    """One DeleteAcls filter's outcome: the bindings removed, or the reason the filter was refused."""

    deleted: tuple[AclBinding, ...] = ()
    error: str | None = None


class StandardAuthorizer:
    """Owns the ACL bindings, their index and their store. See the module docstring for thread-safety."""

    def __init__(self, config: AuthorizerConfig, store: AclStore | None = None) -> None:
        self.config = config
        self._store = store
        self._bindings: frozenset[AclBinding] = frozenset(store.load() if store is not None else ())
        self._index = _AclIndex(self._bindings)
        self._generation = 0
        log.info("StandardAuthorizer loaded %d ACL bindings; super users: %s", len(self._bindings),
                 ", ".join(sorted(config.super_users)) or "none")

    # ------------------------------------------------------------------ authorization
    def is_super_user(self, session: Session) -> bool:
        return str(session.principal) in self.config.super_users

    def authorize(self, session: Session, actions: Sequence[Action]) -> list[bool]:
        """One answer per action (True = ALLOWED)."""
        if self.is_super_user(session):
            return [True] * len(actions)
        index = self._index
        return [self._authorize_one(index, session, action) for action in actions]

    def _authorize_one(self, index: _AclIndex, session: Session, action: Action) -> bool:
        principals = (str(session.principal), WILDCARD_PRINCIPAL)
        entries = index.applicable(action.resource_type, action.resource_name)
        allowed = False
        for entry in entries:
            result = _entry_result(action.operation, principals, session.client_address, entry)
            if result is AclPermissionType.DENY:
                allowed = False
                break
            if result is AclPermissionType.ALLOW:
                allowed = True
        else:
            if not entries:
                allowed = self.config.allow_everyone_if_no_acl_found
        if not allowed:
            audit_log.debug("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                           session.principal, action.operation.name, session.client_address,
                           action.resource_type.name, action.resource_name)
        return allowed

    def authorize_by_resource_type(self, session: Session, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Kafka's `Authorizer.authorizeByResourceType`: True when some resource of the type would be allowed
        by an ALLOW ACL not dominated by a DENY (super users and allow.everyone.if.no.acl.found via a probe)."""
        if self.authorize(session, [Action(operation, resource_type, "hardcode")])[0]:
            return True
        principal, host = str(session.principal), session.client_address
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for binding in self._bindings:
            pattern, entry = binding.pattern, binding.entry
            if pattern.resource_type is not resource_type or pattern.pattern_type not in deny:
                continue
            if entry.host not in (host, WILDCARD_HOST) or entry.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if entry.operation not in (operation, AclOperation.ALL):
                continue
            if entry.permission_type is AclPermissionType.DENY:
                if pattern.pattern_type is PatternType.LITERAL and pattern.name == WILDCARD_RESOURCE:
                    return False
                deny[pattern.pattern_type].add(pattern.name)
            elif entry.permission_type is AclPermissionType.ALLOW:
                if pattern.pattern_type is PatternType.LITERAL and pattern.name == WILDCARD_RESOURCE:
                    return True
                allow[pattern.pattern_type].add(pattern.name)
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type is PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:length] in deny[PatternType.PREFIXED] for length in range(1, len(name) + 1)):
                    return True
        return False

    # ------------------------------------------------------------------ ACL management
    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return sorted(binding for binding in self._bindings if binding_filter.matches(binding))

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[str | None]:
        """Add the valid bindings (an existing one is a no-op success); per binding None or why it is invalid."""
        errors = [validate_new_binding(binding) for binding in bindings]
        added = {binding for binding, error in zip(bindings, errors, strict=True) if error is None}
        if not added - self._bindings:
            return errors
        await self._replace(self._bindings | added)
        return errors

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        results: list[AclDeleteResult] = []
        removed: set[AclBinding] = set()
        for binding_filter in filters:
            if binding_filter.pattern_filter.is_unknown():
                results.append(AclDeleteResult(error="Unknown patternFilter."))
            elif binding_filter.entry_filter.is_unknown():
                results.append(AclDeleteResult(error="Unknown entryFilter."))
            else:
                matched = tuple(self.acls(binding_filter))
                removed.update(matched)
                results.append(AclDeleteResult(deleted=matched))
        if removed:
            await self._replace(self._bindings - removed)
        return results

    async def _replace(self, bindings: frozenset[AclBinding]) -> None:
        """Swap in the new bindings, then persist them; on a write failure the previous bindings come back
        (unless a later change already replaced them) and the error propagates."""
        previous = self._bindings
        self._generation += 1
        generation = self._generation
        self._bindings = bindings
        self._index = _AclIndex(bindings)
        if self._store is None:
            return
        try:
            await asyncio.to_thread(self._store.write, generation, bindings)
        except Exception:
            if self._generation == generation:
                self._bindings = previous
                self._index = _AclIndex(previous)
            raise


def _entry_result(operation: AclOperation, principals: tuple[str, str], host: str,
                  entry: AccessControlEntry) -> AclPermissionType | None:
    """Kafka's StandardAuthorizerData.findResult: the entry's permission when it applies, else None."""
    if entry.principal not in principals:
        return None
    if entry.host != WILDCARD_HOST and entry.host != host:
        return None
    if entry.operation is not AclOperation.ALL:
        if entry.permission_type is AclPermissionType.ALLOW:
            if operation is AclOperation.DESCRIBE:
                if entry.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation is AclOperation.DESCRIBE_CONFIGS:
                if entry.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation is not entry.operation:
                return None
        elif operation is not entry.operation:
            return None
    return entry.permission_type


def authorizer_from_props(props: Mapping[str, str], log_dir: Path | None) -> StandardAuthorizer | None:
    """The authorizer `authorizer.class.name` asks for (None when empty), its ACLs loaded from `log_dir`.
    InvalidConfigError for an unknown class or a bad value."""
    config = AuthorizerConfig.from_props(props)
    if not config.enabled:
        return None
    return StandardAuthorizer(config, AclStore(log_dir) if log_dir is not None else None)


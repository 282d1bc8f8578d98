"""Kafka's ACL model: resource patterns, access control entries, bindings, and the filters that select them.

Names and wire codes are Kafka's (`org.apache.kafka.common.acl` / `.resource`): `ResourceType`, `PatternType`,
`AclOperation`, `AclPermissionType`, `ResourcePattern`, `AccessControlEntry`, `AclBinding` and their `*Filter`
counterparts with Kafka's matching rules (`ResourcePatternFilter.matches`, `AccessControlEntryFilter.matches`).
A code the broker does not know decodes to UNKNOWN, as Kafka's `fromCode` does. Everything here is immutable and
thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Self

#: The name of a literal resource pattern that matches every resource of its type.
WILDCARD_RESOURCE = "*"
#: The principal of an entry that matches every principal.
WILDCARD_PRINCIPAL = "User:*"
#: The host of an entry that matches every host.
WILDCARD_HOST = "*"
#: The only name of the CLUSTER resource.
CLUSTER_NAME = "kafka-cluster"


class _CodedEnum(IntEnum):
    @classmethod
    def from_code(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            return cls(0)  # UNKNOWN


class ResourceType(_CodedEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_CodedEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_CodedEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_CodedEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True, order=True)
class ResourcePattern:
    """A resource (type + name) or, PREFIXED, every resource whose name starts with `name`."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, " \
               f"patternType={self.pattern_type.name})"


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    """Who (`principal` as `type:name`), from where (`host` or `*`), what, allowed or denied."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        e = self.entry
        return f"(pattern={self.pattern}, entry=(principal={e.principal}, host={e.host}, " \
               f"operation={e.operation.name}, permissionType={e.permission_type.name}))"


@dataclass(frozen=True)
class ResourcePatternFilter:
    """Selects resource patterns: ANY type/pattern type, `name` None for any name; MATCH selects the patterns
    that would apply to the literal resource `name` (the literal itself, the wildcard, matching prefixes)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def is_unknown(self) -> bool:
        return self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type is not pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and (
                self.pattern_type is not pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type is PatternType.ANY or self.pattern_type is pattern.pattern_type:
            return self.name == pattern.name
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False


@dataclass(frozen=True)
class AccessControlEntryFilter:
    """Selects entries: None principal/host and ANY operation/permission match everything (no wildcard logic)."""

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def is_unknown(self) -> bool:
        return self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN

    def matches(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not entry.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type is entry.permission_type


@dataclass(frozen=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)


#: Matches every binding.
ANY_BINDING = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)


@dataclass(frozen=True)
class Action:
    """One authorization question: may the session do `operation` on the literal resource?"""

    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


def validate_new_binding(binding: AclBinding) -> str | None:
    """Why Kafka refuses to create this binding (INVALID_REQUEST), or None: AclApis' CLUSTER-name and empty-name
    checks, then the controller's `AclControlManager.validateNewAcl` and the principal's `type:name` form."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not pattern.name:
        return "Invalid empty resource name"
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {pattern.resource_type.name}"
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {pattern.pattern_type.name}"
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {entry.operation.name}"
    if entry.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return f"Invalid permissionType {entry.permission_type.name}"
    principal_type, colon, principal_name = entry.principal.partition(":")
    if not colon:
        return (f"Could not parse principal from `{entry.principal}` (no colon is present separating the "
                "principal type from the principal name)")
    if not principal_type or not principal_name:
        return f"Invalid principal {entry.principal}"
    return None

"""The authorizer's broker properties, with Kafka's names and defaults, as one ConfigDef table.

`authorizer.class.name` chooses the authorizer: empty (Kafka's default) disables authorization; Kafka's
`org.apache.kafka.metadata.authorizer.StandardAuthorizer` or its older `kafka.security.authorizer.AclAuthorizer`
enable the ACL authorizer (both are served by the same rules here); any other class is a configuration error.
`super.users` is Kafka's semicolon-separated list of principals that are always allowed;
`allow.everyone.if.no.acl.found` answers a resource that has no ACL at all (default false: denied).
Immutable; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, ConfigValueError

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
AUTHORIZER_CLASSES = (STANDARD_AUTHORIZER, ACL_AUTHORIZER)


def _known_authorizer(value: Any) -> None:
    if value and value not in AUTHORIZER_CLASSES:
        raise ConfigValueError(f"Class {value} could not be found.")


AUTHORIZER_CONFIG_DEF = ConfigDef([
    ConfigKey("authorizer.class.name", ConfigType.STRING, "", _known_authorizer,
              "The fully qualified name of a class that implements the Authorizer interface, which is used by "
              "the broker for authorization. Empty disables authorization."),
    ConfigKey("super.users", ConfigType.STRING, "", None,
              "Semicolon-separated list of principals (User:alice;User:bob) that may perform every operation."),
    ConfigKey("allow.everyone.if.no.acl.found", ConfigType.BOOLEAN, False, None,
              "Whether an operation on a resource with no ACL at all is allowed."),
])


@dataclass(frozen=True)
class AuthorizerConfig:
    class_name: str
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool

    @property
    def enabled(self) -> bool:
        return bool(self.class_name)

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> AuthorizerConfig:
        """Parse the broker properties; InvalidConfigError for a bad value (unknown keys are ignored)."""
        values = AUTHORIZER_CONFIG_DEF.parse(props)
        super_users = frozenset(part.strip() for part in values["super.users"].split(";") if part.strip())
        return cls(values["authorizer.class.name"], super_users, values["allow.everyone.if.no.acl.found"])

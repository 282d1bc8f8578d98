"""ACL helpers of the authorization tests, through confluent-kafka's admin client."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

TIMEOUT_S = 30


def allow(principal: str, resource_type: ResourceType, name: str, operation: AclOperation,
          pattern_type: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    """An ALLOW binding for `principal` from any host."""
    return AclBinding(resource_type, name, pattern_type, principal, "*", operation, AclPermissionType.ALLOW)


def grant(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings)).values():
        future.result(timeout=TIMEOUT_S)


def error_code_of(future: Any) -> int:
    """The Kafka error code a failed admin future raised with."""
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=TIMEOUT_S)
    code: int = raised.value.args[0].code()
    return code

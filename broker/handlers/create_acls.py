"""CreateAcls (key 30), v1-3, as Kafka's AclApis.handleCreateAcls: ALTER on the CLUSTER is required (every
creation answers CLUSTER_AUTHORIZATION_FAILED), SECURITY_DISABLED when no authorizer is configured; each creation
is validated on its own (INVALID_REQUEST: a CLUSTER resource not named `kafka-cluster`, an empty name, ANY/UNKNOWN
or MATCH in a binding, a principal without `type:`). Creating an existing binding succeeds without change."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.broker.security.authorize import authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class


def _binding(creation: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.from_code(creation.resource_type), creation.resource_name,
                        PatternType.from_code(creation.resource_pattern_type)),
        AccessControlEntry(creation.principal, creation.host,
                           AclOperation.from_code(creation.operation),
                           AclPermissionType.from_code(creation.permission_type)),
    )


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.CREATE_ACLS, event.api_version)
    result_cls = cls.AclCreationResult
    creations = list(event.request.creations)

    def all_failed(code: ErrorCode, message: str) -> Any:
        return cls(throttle_time_ms=0,
                   results=[result_cls(error_code=code, error_message=message) for _ in creations])

    if not authorize_cluster(ctx, session, AclOperation.ALTER):
        return all_failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Request CreateAcls is not authorized.")
    if ctx.authorizer is None:
        return all_failed(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    try:
        errors = await ctx.authorizer.create_acls([_binding(creation) for creation in creations])
    except KafkaError as error:
        return all_failed(error.error_code, error.message or error.error_code.name)
    except OSError as error:
        return all_failed(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not persist the ACLs: {error}")
    return cls(throttle_time_ms=0, results=[
        result_cls(error_code=ErrorCode.NONE, error_message=None) if message is None
        else result_cls(error_code=ErrorCode.INVALID_REQUEST, error_message=message)
        for message in errors
    ])

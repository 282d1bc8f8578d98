"""DescribeAcls (key 29), v1-3, as Kafka's AclApis.handleDescribeAcls: DESCRIBE on the CLUSTER is required
(CLUSTER_AUTHORIZATION_FAILED), SECURITY_DISABLED when no authorizer is configured, INVALID_REQUEST for a filter
with UNKNOWN elements; otherwise the matching bindings grouped by resource pattern."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.acls import (
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.broker.security.authorize import authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


def binding_filter(request_filter: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter entry (same field names) as an AclBindingFilter."""
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.from_code(request_filter.resource_type_filter),
                              request_filter.resource_name_filter,
                              PatternType.from_code(request_filter.pattern_type_filter)),
        AccessControlEntryFilter(request_filter.principal_filter, request_filter.host_filter,
                                 AclOperation.from_code(request_filter.operation),
                                 AclPermissionType.from_code(request_filter.permission_type)),
    )


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.DESCRIBE_ACLS, event.api_version)

    def error(code: ErrorCode, message: str) -> Any:
        return cls(throttle_time_ms=0, error_code=code, error_message=message, resources=[])

    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE):
        return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Request DescribeAcls is not authorized.")
    if ctx.authorizer is None:
        return error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    request_filter = binding_filter(event.request)
    if request_filter.is_unknown():
        return error(ErrorCode.INVALID_REQUEST, f"Filter contain UNKNOWN elements, filter: {request_filter}")
    by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
    for binding in ctx.authorizer.acls(request_filter):
        by_pattern.setdefault(binding.pattern, []).append(binding)
    resource_cls = cls.DescribeAclsResource
    acl_cls = resource_cls.AclDescription
    resources = [
        resource_cls(
            resource_type=pattern.resource_type, resource_name=pattern.name, pattern_type=pattern.pattern_type,
            acls=[acl_cls(principal=b.entry.principal, host=b.entry.host, operation=b.entry.operation,
                          permission_type=b.entry.permission_type) for b in bindings],
        )
        for pattern, bindings in by_pattern.items()
    ]
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, resources=resources)

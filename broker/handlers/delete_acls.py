"""DeleteAcls (key 31), v1-3, as Kafka's AclApis.handleDeleteAcls: ALTER on the CLUSTER is required (every
filter answers CLUSTER_AUTHORIZATION_FAILED), SECURITY_DISABLED when no authorizer is configured; a filter with
UNKNOWN elements answers INVALID_REQUEST, every other filter removes and lists the bindings it matches."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.describe_acls import binding_filter
from minikafka.broker.security.acls import AclOperation
from minikafka.broker.security.authorize import authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.DELETE_ACLS, event.api_version)
    result_cls = cls.DeleteAclsFilterResult
    matching_cls = result_cls.DeleteAclsMatchingAcl
    filters = list(event.request.filters)

    def all_failed(code: ErrorCode, message: str) -> Any:
        return cls(throttle_time_ms=0, filter_results=[
            result_cls(error_code=code, error_message=message, matching_acls=[]) for _ in filters])

    if not authorize_cluster(ctx, session, AclOperation.ALTER):
        return all_failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Request DeleteAcls is not authorized.")
    if ctx.authorizer is None:
        return all_failed(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    try:
        results = await ctx.authorizer.delete_acls([binding_filter(entry) for entry in filters])
    except KafkaError as error:
        return all_failed(error.error_code, error.message or error.error_code.name)
    except OSError as error:
        return all_failed(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not persist the ACLs: {error}")
    filter_results = []
    for result in results:
        if result.error is not None:
            filter_results.append(result_cls(error_code=ErrorCode.INVALID_REQUEST, error_message=result.error,
                                             matching_acls=[]))
            continue
        filter_results.append(result_cls(error_code=ErrorCode.NONE, error_message=None, matching_acls=[
            matching_cls(error_code=ErrorCode.NONE, error_message=None, resource_type=b.pattern.resource_type,
                         resource_name=b.pattern.name, pattern_type=b.pattern.pattern_type,
                         principal=b.entry.principal, host=b.entry.host, operation=b.entry.operation,
                         permission_type=b.entry.permission_type)
            for b in result.deleted
        ]))
    return cls(throttle_time_ms=0, filter_results=filter_results)

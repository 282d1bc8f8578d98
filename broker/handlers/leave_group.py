"""LeaveGroup (key 13), v0-5: v0-2 name one member, v3+ a batch (static members by instance id)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.LEAVE_GROUP, version)
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return cls(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[])
    if version < 3:
        error, results = ctx.group_coordinator.handle_leave_group(request.group_id, [(request.member_id, None)])
        if error is ErrorCode.NONE and results:
            error = results[0]
        return cls(throttle_time_ms=0, error_code=error)
    identities = [(member.member_id, member.group_instance_id) for member in request.members]
    error, results = ctx.group_coordinator.handle_leave_group(request.group_id, identities)
    return cls(
        throttle_time_ms=0,
        error_code=error,
        members=[
            cls.MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=code)
            for (member_id, instance_id), code in zip(identities, results, strict=False)
        ],
    )

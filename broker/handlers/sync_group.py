"""SyncGroup (key 14), v0-5: followers wait for the leader's assignment (GroupCoordinator)."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.join_sync_messages import SyncGroupResult
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_class(ApiKey.SYNC_GROUP, version)(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, protocol_type=None,
            protocol_name=None, assignment=b"")
    future: asyncio.Future[SyncGroupResult] = asyncio.get_running_loop().create_future()

    def respond(result: SyncGroupResult) -> None:
        if not future.done():
            future.set_result(result)

    ctx.group_coordinator.handle_sync_group(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        request.group_instance_id if version >= 3 else None,
        {assignment.member_id: bytes(assignment.assignment) for assignment in request.assignments},
        respond,
    )
    result = await future
    ok = result.error is ErrorCode.NONE
    cls = response_class(ApiKey.SYNC_GROUP, version)
    return cls(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type if ok else None,
        protocol_name=result.protocol_name if ok else None,
        assignment=result.assignment if ok else b"",
    )

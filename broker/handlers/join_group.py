"""JoinGroup (key 11), v0-7: answered when the group's delayed join completes (GroupCoordinator)."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.join_sync_messages import JoinGroupRequestData, JoinGroupResult
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

CLIENT_HOST = "/127.0.0.1"


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    coordinator = ctx.group_coordinator
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_class(ApiKey.JOIN_GROUP, version)(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, generation_id=-1,
            protocol_type=None, protocol_name="" if version < 7 else None, leader="", skip_assignment=False,
            member_id="", members=[])
    if coordinator.validate_group_status(request.group_id) is ErrorCode.NONE:
        await coordinator.manager.ensure_topic()
    future: asyncio.Future[JoinGroupResult] = asyncio.get_running_loop().create_future()

    def respond(result: JoinGroupResult) -> None:
        if not future.done():
            future.set_result(result)

    join_request = JoinGroupRequestData(
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        group_instance_id=request.group_instance_id if version >= 5 else None,
        protocol_type=request.protocol_type,
        protocols=[(protocol.name, bytes(protocol.metadata)) for protocol in request.protocols],
        client_id=event.client_id or "",
        client_host=CLIENT_HOST,
        require_known_member_id=version >= 4,
    )
    coordinator.handle_join_group(request.group_id, request.member_id, join_request, respond)
    result = await future
    cls = response_class(ApiKey.JOIN_GROUP, version)
    ok = result.error is ErrorCode.NONE
    return cls(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id if ok else -1,
        protocol_type=result.protocol_type if ok else None,
        protocol_name=(result.protocol_name or "") if ok or version < 7 else None,
        leader=result.leader_id if ok else "",
        skip_assignment=False,
        member_id=result.member_id,
        members=[
            cls.JoinGroupResponseMember(member_id=member_id, group_instance_id=instance_id, metadata=metadata)
            for member_id, instance_id, metadata in result.members
        ],
    )

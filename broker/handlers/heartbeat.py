"""Heartbeat (key 12), v0-4: keeps a member's session alive; signals rebalances (GroupCoordinator)."""

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
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_class(ApiKey.HEARTBEAT, event.api_version)(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = ctx.group_coordinator.handle_heartbeat(
        request.group_id,
        request.member_id,
        request.group_instance_id if event.api_version >= 3 else None,
        request.generation_id,
    )
    return response_class(ApiKey.HEARTBEAT, event.api_version)(throttle_time_ms=0, error_code=error)

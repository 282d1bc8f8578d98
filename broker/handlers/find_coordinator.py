"""FindCoordinator (key 10), v0-4: this node coordinates every group (key_type 0) and every transactional id
(key_type 1). Creates `__consumer_offsets` / `__transaction_state` on first use, as Kafka does; while the
coordinator still loads its topic the answer is COORDINATOR_LOAD_IN_PROGRESS (retriable)."""

from __future__ import annotations

import logging
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class

log = logging.getLogger(__name__)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _denied(ctx: BrokerContext, session: Session, key: str, key_type: int) -> ErrorCode | None:
    """Kafka: DESCRIBE on the group or the transactional id, else *_AUTHORIZATION_FAILED."""
    if key_type == GROUP_KEY_TYPE and not authorize(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION_KEY_TYPE and not authorize(
            ctx, session, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


async def _lookup(ctx: BrokerContext, key: str, key_type: int) -> ErrorCode:
    if key_type == GROUP_KEY_TYPE:
        manager: Any = ctx.group_coordinator.manager
    elif key_type == TRANSACTION_KEY_TYPE:
        if not ctx.txn_coordinator.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        manager = ctx.txn_coordinator.manager
    else:
        return ErrorCode.INVALID_REQUEST
    try:
        await manager.ensure_topic()
    except KafkaError as error:
        log.warning("cannot create the coordinator topic for key type %d: %r", key_type, error)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if key_type == TRANSACTION_KEY_TYPE and manager.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return ErrorCode.NONE


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.FIND_COORDINATOR, version)
    key_type = request.key_type if version >= 1 else GROUP_KEY_TYPE
    # the coordinators live on the first broker of the process, whichever broker is asked
    coordinator_id = ctx.cluster.coordinator_id
    advertised = ctx.cluster.endpoint(coordinator_id, session.listener_name)  # on the listener the request used
    if version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error = _denied(ctx, session, key, key_type) or await _lookup(ctx, key, key_type)
            ok = error is ErrorCode.NONE
            coordinators.append(
                cls.Coordinator(
                    key=key,
                    node_id=coordinator_id if ok else -1,
                    host=advertised.host if ok else "",
                    port=advertised.port if ok else -1,
                    error_code=error,
                    error_message=None if ok else error.name,
                )
            )
        return cls(throttle_time_ms=0, coordinators=coordinators)
    error = _denied(ctx, session, request.key, key_type) or await _lookup(ctx, request.key, key_type)
    ok = error is ErrorCode.NONE
    return cls(
        throttle_time_ms=0,
        error_code=error,
        error_message=None if ok else error.name,
        node_id=coordinator_id if ok else -1,
        host=advertised.host if ok else "",
        port=advertised.port if ok else -1,
    )

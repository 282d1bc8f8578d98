"""FindCoordinator (key 10), v0-6: the broker that coordinates a group id (key_type 0), a transactional id
(key_type 1) or, v6+, a share partition's state (key_type 2, "groupId:topicId:partition"): the leader of the key's
partition of the internal topic (`coordinator_routing.py`), whichever broker is asked; COORDINATOR_NOT_AVAILABLE
while that partition has no leader. Creates `__consumer_offsets` / `__transaction_state` on first use, as Kafka
does; while the coordinator still loads its topic the answer is COORDINATOR_LOAD_IN_PROGRESS (retriable)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import KEY_TYPES
from minikafka.broker.partition_states import NO_LEADER
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class

log = logging.getLogger(__name__)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2


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
    elif key_type == SHARE_KEY_TYPE:
        # Kafka's SharePartitionKey.validate: "groupId:topicId:partition"
        group_id, _, rest = key.partition(":")
        topic_id, _, partition = rest.partition(":")
        try:
            uuid.UUID(topic_id)
            int(partition)
        except ValueError:
            return ErrorCode.INVALID_REQUEST
        return ErrorCode.NONE if group_id and ctx.share_coordinator is not None else ErrorCode.INVALID_REQUEST
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


def _coordinator(ctx: BrokerContext, key: str, key_type: int, error: ErrorCode) -> tuple[int, ErrorCode]:
    """(the broker coordinating `key`, the answer's error): COORDINATOR_NOT_AVAILABLE while its partition has no
    leader (the broker id is then the first broker's, only to build an endpoint nobody is told)."""
    if error is not ErrorCode.NONE or ctx.coordinators is None:
        return ctx.cluster.coordinator_id, error
    coordinator_id = ctx.coordinators.coordinator_id(KEY_TYPES[key_type], key)
    if coordinator_id == NO_LEADER:
        return ctx.cluster.coordinator_id, ErrorCode.COORDINATOR_NOT_AVAILABLE
    return coordinator_id, error


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.FIND_COORDINATOR, version)
    key_type = request.key_type if version >= 1 else GROUP_KEY_TYPE
    if key_type == SHARE_KEY_TYPE and version < 6:
        key_type = -1  # INVALID_REQUEST, as Kafka refuses a share key before v6
    if version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error = _denied(ctx, session, key, key_type) or await _lookup(ctx, key, key_type)
            coordinator_id, error = _coordinator(ctx, key, key_type, error)
            advertised = ctx.cluster.endpoint(coordinator_id, session.listener_name)  # the listener asked on
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
    coordinator_id, error = _coordinator(ctx, request.key, key_type, error)
    advertised = ctx.cluster.endpoint(coordinator_id, session.listener_name)
    ok = error is ErrorCode.NONE
    return cls(
        throttle_time_ms=0,
        error_code=error,
        error_message=None if ok else error.name,
        node_id=coordinator_id if ok else -1,
        host=advertised.host if ok else "",
        port=advertised.port if ok else -1,
    )

"""AddOffsetsToTxn (key 25), v0-3: add the group's `__consumer_offsets` partition to the transaction, so
the TxnOffsetCommit that follows is part of it and its marker completes the offsets."""

from __future__ import annotations

import logging
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.offsets_topic import OFFSETS_TOPIC
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class

log = logging.getLogger(__name__)


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ADD_OFFSETS_TO_TXN, event.api_version)
    if not authorize(ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return cls(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return cls(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    groups = ctx.group_coordinator.manager
    try:
        await groups.ensure_topic()
    except KafkaError as exc:
        log.warning("cannot create %s: %r", OFFSETS_TOPIC, exc)
        return cls(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = ctx.txn_coordinator.handle_add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(OFFSETS_TOPIC, groups.partition_for(request.group_id))],
    )
    return cls(throttle_time_ms=0, error_code=fenced_for(error, event.api_version))

"""InitProducerId (key 22), v0-4. Without a transactional id: an idempotent producer gets a fresh producer
id with epoch 0, and a KIP-360 bump (v3+, known id and epoch) the same id with the next epoch. With one: the
transaction coordinator fences the id's previous producer (aborting its open transaction) and bumps the
epoch. v0-3 clients do not know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH instead."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for
from minikafka.broker.security.authorize import (
    AclOperation,
    ResourceType,
    authorize,
    authorize_by_resource_type,
    authorize_cluster,
)
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

MAX_EPOCH = 32_767


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.INIT_PRODUCER_ID, event.api_version)
    producer_id = getattr(request, "producer_id", -1) if event.api_version >= 3 else -1
    producer_epoch = getattr(request, "producer_epoch", -1) if event.api_version >= 3 else -1
    if request.transactional_id is not None and not authorize(
            ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return cls(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                   producer_epoch=-1)
    # An idempotent producer needs IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679).
    if request.transactional_id is None and not authorize_cluster(ctx, session, AclOperation.IDEMPOTENT_WRITE) \
            and not authorize_by_resource_type(ctx, session, AclOperation.WRITE, ResourceType.TOPIC):
        return cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1,
                   producer_epoch=-1)
    if request.transactional_id is not None:
        result = await ctx.txn_coordinator.handle_init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, producer_id, producer_epoch
        )
        return cls(throttle_time_ms=0, error_code=fenced_for(result.error, event.api_version, since_version=4),
                   producer_id=result.producer_id, producer_epoch=result.producer_epoch)
    if producer_id >= 0 and 0 <= producer_epoch < MAX_EPOCH - 1:
        return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=producer_id,
                   producer_epoch=producer_epoch + 1)
    new_id = await asyncio.to_thread(ctx.producer_ids.next_producer_id)
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=new_id, producer_epoch=0)

"""EndTxn (key 26), v0-3: commit or abort the producer's transaction (the coordinator writes PrepareX,
the markers and CompleteX before answering)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.END_TXN, event.api_version)
    if not authorize(ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return cls(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error = ctx.txn_coordinator.handle_end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed)
    )
    return cls(throttle_time_ms=0, error_code=fenced_for(error, event.api_version))

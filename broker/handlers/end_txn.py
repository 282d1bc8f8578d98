"""EndTxn (key 26), v0-5: commit or abort the producer's transaction (the coordinator writes PrepareX, the
markers and CompleteX before answering). v5 is a transaction version 2 client (KIP-890 part 2): the epoch is
bumped with every transaction and the answer carries the producer id and epoch to continue under."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize
from minikafka.broker.session import Session
from minikafka.broker.transactions.transaction_version import for_end_txn, supports_epoch_bump
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.END_TXN, version)
    if not authorize(ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return cls(throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                   producer_id=-1, producer_epoch=-1)
    if supports_epoch_bump(for_end_txn(version)):
        result = await ctx.txn_coordinator.handle_end_txn_tv2(
            request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed))
        return cls(throttle_time_ms=0, error_code=result.error, producer_id=result.producer_id,
                   producer_epoch=result.producer_epoch)
    error = ctx.txn_coordinator.handle_end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed)
    )
    return cls(throttle_time_ms=0, error_code=fenced_for(error, version), producer_id=-1, producer_epoch=-1)

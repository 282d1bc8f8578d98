"""ListTransactions (key 66), v0-1: the transactional ids this coordinator knows, filtered by state, producer
id and (v1) minimum running time; unknown state names are echoed in unknown_state_filters."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names
from minikafka.broker.session import Session
from minikafka.broker.transactions.transaction_metadata import TransactionState
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.messages import response_class

_STATE_NAMES = {state.state_name for state in TransactionState}


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.LIST_TRANSACTIONS, event.api_version)
    state_filters = list(request.state_filters or ())
    known = {name for name in state_filters if name in _STATE_NAMES}
    unknown = [name for name in state_filters if name not in _STATE_NAMES]
    duration_ms = request.duration_filter if event.api_version >= 1 else -1
    error, listed = ctx.txn_coordinator.list_transactions(known, set(request.producer_id_filters or ()), duration_ms)
    if unknown and not known:
        listed = []  # only unknown states were asked for: nothing matches them
    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                   (metadata.transactional_id for metadata in listed))
    listed = [metadata for metadata in listed if metadata.transactional_id in describable]
    return cls(
        throttle_time_ms=0,
        error_code=error,
        unknown_state_filters=unknown,
        transaction_states=[
            cls.TransactionState(transactional_id=metadata.transactional_id, producer_id=metadata.producer_id,
                                 transaction_state=metadata.state.state_name)
            for metadata in listed
        ],
    )

"""AlterClientQuotas (key 49), v0-1: set or remove quota configs of user / client-id / ip entities (KIP-546),
with Kafka's validation and messages (ClientQuotaControlManager, `ClientQuotaStore.alter`): each entry answers
INVALID_REQUEST for an empty or unknown entity, an unknown key, a value <= 0 or a fractional byte rate, a key
twice or an entity twice; the valid changes are persisted together (fsync, in a worker thread) unless
`validate_only`, then applied to the quota managers at once. Needs ALTER_CONFIGS on the cluster
(else CLUSTER_AUTHORIZATION_FAILED for every entry).
"""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.quotas.client_quota_store import QuotaAlteration
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ALTER_CLIENT_QUOTAS, event.api_version)
    entry_cls = cls.EntryData
    alterations = [
        QuotaAlteration(
            entity=tuple((part.entity_type, part.entity_name) for part in entry.entity),
            ops=tuple((op.key, None if op.remove else float(op.value)) for op in entry.ops),
        )
        for entry in request.entries
    ]
    if not authorize_cluster(ctx, session, AclOperation.ALTER_CONFIGS):
        return cls(throttle_time_ms=0, entries=[
            entry_cls(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.",
                      entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in alteration.entity])
            for alteration in alterations])
    quotas = ctx.quotas
    results = await asyncio.to_thread(quotas.store.alter, alterations, bool(request.validate_only))
    if not request.validate_only:
        quotas.update(quotas.store.entities())
    return cls(throttle_time_ms=0, entries=[
        entry_cls(error_code=result.error_code, error_message=result.error_message,
                  entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in result.entity])
        for result in results])

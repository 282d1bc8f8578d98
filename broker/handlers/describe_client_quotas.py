"""DescribeClientQuotas (key 48), v0-1: the quota configs of the entities matching a filter (KIP-257), as Kafka's
ClientQuotasImage.describe (`ClientQuotaStore.describe`): components match an entity type exactly (a name), its
default, or any entity having that type; `strict` excludes entities with other types. A bad filter is answered
with INVALID_REQUEST (or UNSUPPORTED_VERSION for an unknown entity type) and null entries; without DESCRIBE_CONFIGS
on the cluster, CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DESCRIBE_CLIENT_QUOTAS, event.api_version)
    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE_CONFIGS):
        return cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                   error_message="Cluster authorization failed.", entries=None)
    components = [(component.entity_type, component.match_type, component.match) for component in request.components]
    try:
        matches = ctx.quotas.store.describe(components, bool(request.strict))
    except KafkaError as error:
        return cls(throttle_time_ms=0, error_code=error.error_code, error_message=error.message or None, entries=None)
    entry_cls = cls.EntryData
    return cls(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        entries=[
            entry_cls(
                entity=[entry_cls.EntityData(entity_type=entity_type, entity_name=name)
                        for entity_type, name in entity],
                values=[entry_cls.ValueData(key=key, value=value) for key, value in sorted(values.items())],
            )
            for entity, values in matches
        ],
    )

"""ListConfigResources (key 74), v0-1, as Apache Kafka 4.3's KafkaApis.handleListConfigResources answers it.

v0 (the former ListClientMetricsResources) lists the client-metrics subscriptions. v1 (KIP-1142) lists the config
resources of the types asked for, or of every supported type when none is asked for: the groups that have group
configs (GROUP), the client-metrics subscriptions (CLIENT_METRICS), this node as BROKER_LOGGER and as BROKER, and
every topic, internal ones included (TOPIC), in that order. A type the version does not support fails the whole
request with UNSUPPORTED_VERSION and no resources; DESCRIBE_CONFIGS on the cluster is required
(CLUSTER_AUTHORIZATION_FAILED otherwise). Event-loop thread only.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.describe_configs import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
)
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

#: Kafka's ListConfigResourcesRequest.supportedResourceTypes, per request version
SUPPORTED_RESOURCE_TYPES: dict[int, tuple[int, ...]] = {
    0: (RESOURCE_CLIENT_METRICS,),
    1: (RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP),
}


def config_resources(ctx: BrokerContext, resource_types: set[int]) -> list[tuple[str, int]]:
    """(name, type) of every config resource of `resource_types`, in Kafka's order of types."""
    node = str(ctx.node_id)
    listed: list[tuple[str, int]] = []
    if RESOURCE_GROUP in resource_types:
        listed += [(group_id, RESOURCE_GROUP) for group_id in ctx.admin.group_configs.group_ids()]
    if RESOURCE_CLIENT_METRICS in resource_types:
        listed += [(name, RESOURCE_CLIENT_METRICS) for name in ctx.admin.client_metrics.names()]
    if RESOURCE_BROKER_LOGGER in resource_types:
        listed.append((node, RESOURCE_BROKER_LOGGER))
    if RESOURCE_BROKER in resource_types:
        listed.append((node, RESOURCE_BROKER))
    if RESOURCE_TOPIC in resource_types:
        listed += [(topic, RESOURCE_TOPIC) for topic in sorted(ctx.replica_manager.topics())]
    return listed


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    version = event.api_version
    cls = response_class(ApiKey.LIST_CONFIG_RESOURCES, version)
    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE_CONFIGS):
        return cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    supported = SUPPORTED_RESOURCE_TYPES[version]
    asked = set(event.request.resource_types) if version >= 1 else set()
    if not asked <= set(supported):
        return cls(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    listed = config_resources(ctx, asked or set(supported))
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=[
        cls.ConfigResource(resource_name=name, resource_type=resource_type) for name, resource_type in listed])

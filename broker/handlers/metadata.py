"""Metadata (key 3), v0-12: the running brokers of this process, the first running one as controller, and each
partition's leader, leader epoch, replicas, ISR and offline replicas (`PartitionStates`). Unknown topics are created
when both the request (v4+) and `auto.create.topics.enable` allow it."""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.admin_manager import INTERNAL_TOPICS
from minikafka.broker.context import BrokerContext
from minikafka.broker.security.acls import CLUSTER_NAME
from minikafka.broker.security.authorize import (
    AclOperation,
    ResourceType,
    authorize_cluster,
    authorized_names,
    supported_authorized_operations,
)
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.messages import response_class
from minikafka.storage.log_manager import TopicMetadata

_ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.METADATA, version)
    topic_cls = cls.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition

    list_all = request.topics is None or (version == 0 and not request.topics)
    # v12+ may name topics by id (KIP-516; KIP-848 consumers look up their assigned topic ids). As Kafka's
    # handleTopicMetadataRequest: once any topic id is given, the request's names are ignored. v10-11 name by id
    # only when the name is null (minikafka's leniency; Kafka refuses such a request).
    requested_ids = [] if list_all else [topic.topic_id for topic in request.topics if version >= 10 and (
        topic.name is None or (version >= 12 and topic.topic_id not in (None, _ZERO_UUID)))]
    use_topic_ids = any(topic_id not in (None, _ZERO_UUID) for topic_id in requested_ids)
    by_id = {topic_id: ctx.admin.topic_name_for_id(topic_id) for topic_id in requested_ids}
    unknown_ids = [topic_id for topic_id, name in by_id.items() if name is None]
    id_of = {name: topic_id for topic_id, name in by_id.items() if name is not None}
    names: list[str]
    if list_all:
        names = sorted(ctx.replica_manager.topics())
    elif use_topic_ids:
        names = list(dict.fromkeys(name for name in by_id.values() if name is not None))
    else:
        names = list(dict.fromkeys(topic.name for topic in request.topics if topic.name is not None))
    allow_auto_create = (request.allow_auto_topic_creation if version >= 4 else True) and bool(
        ctx.config["auto.create.topics.enable"]
    )
    # Kafka's handleTopicMetadataRequest: topics not authorized for DESCRIBE are hidden from a list-all request
    # and answer TOPIC_AUTHORIZATION_FAILED otherwise (by id: with a null name, so an id does not reveal its
    # name); auto-creation needs CREATE on the cluster or the topic.
    describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    if list_all:
        names = [name for name in names if name in describable]
    creatable: set[str] | None = None
    if allow_auto_create and not authorize_cluster(ctx, session, AclOperation.CREATE):
        creatable = authorized_names(ctx, session, AclOperation.CREATE, ResourceType.TOPIC,
                                     (name for name in names if ctx.replica_manager.topic(name) is None))
    topic_operations = version >= 8 and bool(request.include_topic_authorized_operations)

    def operations(name: str) -> dict[str, Any]:
        """KIP-430, v8+: on the topics Kafka's getTopicMetadata answers (not on refused ones); None = INT_MIN."""
        if not topic_operations:
            return {}
        return {"authorized_operations": supported_authorized_operations(ctx, session, ResourceType.TOPIC, name)}

    topics = [topic_cls(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id, is_internal=False,
                        partitions=[]) for topic_id in unknown_ids]
    for name in names:
        if name not in describable and use_topic_ids:
            topics.append(topic_cls(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=None,
                                    topic_id=id_of[name], is_internal=False, partitions=[]))
            continue
        denied = name not in describable or (
            creatable is not None and name not in creatable and ctx.replica_manager.topic(name) is None)
        if denied:
            topics.append(topic_cls(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name,
                                    topic_id=_ZERO_UUID,
                                    is_internal=name in describable and name in INTERNAL_TOPICS, partitions=[]))
            continue
        metadata, error_code = await _lookup(ctx, name, allow_auto_create)
        if metadata is None:
            topics.append(topic_cls(error_code=error_code, name=name, topic_id=_ZERO_UUID, is_internal=False,
                                    partitions=[], **operations(name)))
            continue
        partitions = []
        for index in range(metadata.num_partitions):
            state = ctx.partitions.get(name, index)
            partitions.append(partition_cls(
                # Kafka's metadata cache: a partition without a live leader answers LEADER_NOT_AVAILABLE
                error_code=ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=index,
                leader_id=state.leader,
                leader_epoch=state.leader_epoch,
                replica_nodes=list(state.replicas),
                isr_nodes=list(state.isr),
                offline_replicas=ctx.partitions.offline_replicas(state),
            ))
        topics.append(
            topic_cls(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=metadata.topic_id,
                is_internal=name in INTERNAL_TOPICS,
                partitions=partitions,
                **operations(name),
            )
        )
    brokers = []
    for broker_id in ctx.cluster.running_ids():  # each on the listener the request came in on
        advertised = ctx.cluster.endpoint(broker_id, session.listener_name)
        brokers.append(cls.MetadataResponseBroker(node_id=broker_id, host=advertised.host, port=advertised.port,
                                                  rack=None))
    return cls(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=ctx.cluster_id,
        controller_id=ctx.cluster.controller_id(),
        topics=topics,
        **({"authorized_operations": _cluster_operations(ctx, session, request)} if 8 <= version <= 10 else {}),
    )


def _cluster_operations(ctx: BrokerContext, session: Session, request: Any) -> set[int] | None:
    """Metadata v8-10's ClusterAuthorizedOperations (KIP-430): none at all without DESCRIBE on the cluster;
    None encodes INT_MIN ("not requested"). v11 moved it to DescribeCluster."""
    if not request.include_cluster_authorized_operations:
        return None
    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE):
        return set()
    return supported_authorized_operations(ctx, session, ResourceType.CLUSTER, CLUSTER_NAME)


async def _lookup(ctx: BrokerContext, name: str, allow_auto_create: bool) -> tuple[TopicMetadata | None, ErrorCode]:
    metadata = ctx.replica_manager.topic(name)
    if metadata is not None:
        return metadata, ErrorCode.NONE
    if not allow_auto_create:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    try:
        return await ctx.admin.auto_create_topic(name), ErrorCode.NONE
    except KafkaError as error:
        metadata = ctx.replica_manager.topic(name)  # a concurrent request may have created it
        if metadata is not None:
            return metadata, ErrorCode.NONE
        if error.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION:
            return None, ErrorCode.INVALID_TOPIC_EXCEPTION
        return None, ErrorCode.LEADER_NOT_AVAILABLE

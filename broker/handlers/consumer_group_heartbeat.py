"""ConsumerGroupHeartbeat (key 68), v0-1: a KIP-848 member joins, heartbeats, reconciles and leaves; the
coordinator answers with its member epoch and, when it changed, its assignment (ConsumerGroupCoordinator).
v1 members name themselves (KIP-1082) and may subscribe by regular expression.

Authorization as Kafka's handleConsumerGroupHeartbeat: READ on the group; a subscription by name to a topic the
member may not DESCRIBE is refused with TOPIC_AUTHORIZATION_FAILED; a regular expression resolves only to the
topics the member may DESCRIBE (the coordinator's regex resolution, with this request's session)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.consumer_group_coordinator import HeartbeatRequestData
from minikafka.broker.handlers.join_group import CLIENT_HOST
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, version)
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _error(cls, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    subscribed = set(request.subscribed_topic_names or ())
    if subscribed and authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                       subscribed) != subscribed:
        return _error(cls, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    coordinator = ctx.group_coordinator
    if request.group_id and coordinator.validate_group_status(request.group_id) is ErrorCode.NONE:
        await coordinator.manager.ensure_topic()
    owned = request.topic_partitions
    result = coordinator.consumer.heartbeat(HeartbeatRequestData(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=request.subscribed_topic_regex if version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=None if owned is None else [(tp.topic_id, list(tp.partitions)) for tp in owned],
        client_id=event.client_id or "",
        client_host=CLIENT_HOST,
        version=version,
        describable_topics=lambda names: authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                          names),
    ))
    assignment = None
    if result.assignment is not None:
        assignment = cls.Assignment(topic_partitions=[
            cls.Assignment.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(result.assignment.items(), key=lambda item: str(item[0]))])
    return cls(
        throttle_time_ms=0,
        error_code=result.error,
        error_message=result.message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
    )


def _error(cls: Any, error_code: ErrorCode) -> Any:
    """Kafka's getErrorResponse: the error code and the schema's defaults (member epoch 0, no member id)."""
    return cls(throttle_time_ms=0, error_code=error_code, error_message=None, member_id=None, member_epoch=0,
               heartbeat_interval_ms=0, assignment=None)

"""ShareGroupHeartbeat (key 76), v1 (KIP-932): a share-group member joins (epoch 0, a member id it chose), heartbeats
and leaves (epoch -1); the share coordinator answers with its member epoch and, when it changed, its assignment.

Authorization as Kafka's handleShareGroupHeartbeatRequest: READ on the group, DESCRIBE on every subscribed topic
(TOPIC_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.share_group import ShareGroupError
from minikafka.broker.handlers.join_group import CLIENT_HOST
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.SHARE_GROUP_HEARTBEAT, event.api_version)
    share = ctx.share_coordinator
    if share is None:
        return _error(cls, ErrorCode.UNSUPPORTED_VERSION, "Share groups are not enabled.")
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _error(cls, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    subscribed = set(request.subscribed_topic_names or ())
    if subscribed and authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                       subscribed) != subscribed:
        return _error(cls, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    try:
        result = await share.heartbeat(
            request.group_id, request.member_id, request.member_epoch,
            subscribed_topic_names=request.subscribed_topic_names, rack_id=request.rack_id,
            client_id=event.client_id or "", client_host=CLIENT_HOST)
    except ShareGroupError as error:
        return _error(cls, ErrorCode(error.error_code), error.message)
    assignment = None
    if result.assignment is not None:
        assignment = cls.Assignment(topic_partitions=[
            cls.Assignment.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(result.assignment.items(), key=lambda item: str(item[0]))])
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, member_id=result.member_id,
               member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
               assignment=assignment)


def _error(cls: Any, error_code: ErrorCode, message: str | None) -> Any:
    return cls(throttle_time_ms=0, error_code=error_code, error_message=message, member_id=None, member_epoch=0,
               heartbeat_interval_ms=0, assignment=None)

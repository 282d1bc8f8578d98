"""ShareAcknowledge (key 79), v1-2 (KIP-932): a share-session member acknowledges (ACCEPT, RELEASE, REJECT; RENEW
from v2) records it acquired, without fetching. The session epoch must be the session's current one (or -1, which
closes the session and releases what the member still holds once its acknowledgements are applied); errors of the
session are top-level, errors of one partition's acknowledgements are that partition's, as in Kafka's
handleShareAcknowledgeRequest. READ on the group and on each topic; a member id of 1 to 36 characters (else
INVALID_REQUEST), not checked against the group's members, as in Kafka."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.share_acknowledgements import (
    acknowledge,
    current_leader,
    request_error,
    request_partitions,
)
from minikafka.broker.session import Session
from minikafka.broker.share.share_session_cache import FINAL_EPOCH, ShareSessionError
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.SHARE_ACKNOWLEDGE, version)
    refused = request_error(ctx, session, request.group_id, request.member_id)
    if refused is not None:
        return _error(cls, *refused)
    share = ctx.share_coordinator
    assert share is not None
    try:
        share.partitions.sessions.acknowledge_session_update(request.group_id, request.member_id,
                                                            request.share_session_epoch)
    except ShareSessionError as error:
        return _error(cls, ErrorCode(error.error_code), str(error))
    is_renew_ack = bool(request.is_renew_ack) if version >= 2 else False
    partition_cls = cls.ShareAcknowledgeTopicResponse.PartitionData
    by_topic: dict[Any, list[Any]] = defaultdict(list)
    for partition in request_partitions(ctx, session, request.topics):
        ack_error, message = await acknowledge(ctx, request.group_id, request.member_id, partition,
                                               is_renew_ack=is_renew_ack, version=version)
        by_topic[partition.topic_id].append(partition_cls(
            partition_index=partition.partition, error_code=ack_error, error_message=message,
            current_leader=current_leader(partition_cls.LeaderIdAndEpoch, ctx)))
    if request.share_session_epoch == FINAL_EPOCH:
        released = share.partitions.sessions.remove(request.group_id, request.member_id)
        share.partitions.release_member(request.group_id, request.member_id,
                                        list(released.partitions) if released is not None else None)
    response = cls(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
        responses=[cls.ShareAcknowledgeTopicResponse(topic_id=topic_id, partitions=partitions)
                   for topic_id, partitions in by_topic.items()],
        node_endpoints=[])
    if version >= 2:
        response.acquisition_lock_timeout_ms = share.settings(request.group_id).partition.record_lock_duration_ms
    return response


def _error(cls: Any, error_code: ErrorCode, message: str | None) -> Any:
    return cls(throttle_time_ms=0, error_code=error_code, error_message=message, responses=[], node_endpoints=[])

"""ShareFetch (key 78), v1-2 (KIP-932): a share-group member fetches records it acquires for
`share.record.lock.duration.ms`, acknowledging earlier ones on the way, within a share session.

As Kafka's handleShareFetchRequest: READ on the group (top-level GROUP_AUTHORIZATION_FAILED), a member id of 1 to 36
characters (else INVALID_REQUEST; whether the group knows the member is not checked, as in Kafka), the share session
first (epoch 0 opens it — acknowledgements then are INVALID_REQUEST —, -1 closes it: acknowledgements are applied,
the member's acquired records released, nothing fetched; session errors are top-level), then the piggybacked
acknowledgements (per partition: AcknowledgeErrorCode), then the fetch over the session's partitions: unknown topic
ids UNKNOWN_TOPIC_ID, unreadable topics TOPIC_AUTHORIZATION_FAILED, the rest acquired by the SharePartitionManager,
which long-polls up to MaxWaitMs while less than MinBytes was acquired. v2 adds ShareAcquireMode and IsRenewAck
(a renew-only request fetches nothing). The response lists the partitions with records, errors or
acknowledgements only, new session or not (as Apache Kafka 4.3.1 answers)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.handlers.share_acknowledgements import (
    RequestPartition,
    acknowledge,
    current_leader,
    request_error,
    request_partitions,
)
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names
from minikafka.broker.session import Session
from minikafka.broker.share.share_partition_manager import PartitionFetch
from minikafka.broker.share.share_session_cache import ContextKind, ShareSessionError
from minikafka.broker.share.share_types import ShareAcquireMode
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.SHARE_FETCH, version)
    group_id, member_id = request.group_id, request.member_id
    refused = request_error(ctx, session, group_id, member_id)
    if refused is not None:
        return _error(cls, *refused)
    share = ctx.share_coordinator
    assert share is not None
    requested = request_partitions(ctx, session, request.topics)
    forgotten = [(t.topic_id.bytes, p) for t in (request.forgotten_topics_data or ()) for p in t.partitions]
    has_acks = any(p.batches for p in requested)
    try:
        context = share.partitions.sessions.new_context(
            group_id, member_id, request.share_session_epoch,
            [(p.topic_id.bytes, p.partition) for p in requested], forgotten,
            acknowledgements_present=has_acks, connection_id=session.connection_id or session.client_address)
    except ShareSessionError as error:
        return _error(cls, ErrorCode(error.error_code), str(error))
    for evicted in context.evicted:  # idle sessions evicted to make room: their records go back
        share.partitions.release_member(evicted.group_id, evicted.member_id, list(evicted.partitions))
    is_renew_ack = bool(request.is_renew_ack) if version >= 2 else False
    ack_errors: dict[tuple[uuid.UUID, int], tuple[ErrorCode, str | None]] = {}
    for partition in requested:
        if partition.batches:
            ack_errors[(partition.topic_id, partition.partition)] = await acknowledge(
                ctx, group_id, member_id, partition, is_renew_ack=is_renew_ack, version=version)
    fetched: dict[tuple[uuid.UUID, int], PartitionFetch] = {}
    if context.kind is ContextKind.FINAL:
        released = share.partitions.sessions.remove(group_id, member_id)
        share.partitions.release_member(group_id, member_id,
                                        list(released.partitions) if released is not None else None)
    elif not is_renew_ack:
        fetched = await _fetch(ctx, session, request, version, group_id, member_id, context.partitions)
    partition_cls = cls.ShareFetchableTopicResponse.PartitionData
    by_topic: dict[uuid.UUID, list[Any]] = defaultdict(list)
    keys = list(fetched) + [k for k in ack_errors if k not in fetched]
    for key in keys:
        data = fetched.get(key, PartitionFetch())
        ack_error, ack_message = ack_errors.get(key, (ErrorCode.NONE, None))
        if not (data.acquired or data.error is not ErrorCode.NONE or key in ack_errors):
            continue  # as Kafka: a partition that acquired nothing is left out, even from a new session's answer
        by_topic[key[0]].append(partition_cls(
            partition_index=key[1], error_code=data.error, error_message=data.message,
            acknowledge_error_code=ack_error, acknowledge_error_message=ack_message,
            current_leader=current_leader(partition_cls.LeaderIdAndEpoch, ctx),
            records=data.records,
            acquired_records=[partition_cls.AcquiredRecords(first_offset=a.first_offset, last_offset=a.last_offset,
                                                            delivery_count=a.delivery_count)
                              for a in data.acquired]))
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
               acquisition_lock_timeout_ms=share.settings(group_id).partition.record_lock_duration_ms,
               responses=[cls.ShareFetchableTopicResponse(topic_id=topic_id, partitions=partitions)
                          for topic_id, partitions in by_topic.items()],
               node_endpoints=[])


async def _fetch(ctx: BrokerContext, session: Session, request: Any, version: int, group_id: str, member_id: str,
                 partitions: tuple[tuple[bytes, int], ...]) -> dict[tuple[uuid.UUID, int], PartitionFetch]:
    share = ctx.share_coordinator
    assert share is not None
    names = ctx.replica_manager.topic_names_by_id()
    keys = [(uuid.UUID(bytes=topic_id), partition) for topic_id, partition in partitions]
    readable = authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC,
                                (names[t] for t, _p in keys if t in names))
    results: dict[tuple[uuid.UUID, int], PartitionFetch] = {}
    to_fetch: list[tuple[str, uuid.UUID, int]] = []
    for topic_id, partition in keys:
        name = names.get(topic_id)
        if name is None:
            results[(topic_id, partition)] = PartitionFetch(ErrorCode.UNKNOWN_TOPIC_ID)
        elif name not in readable:
            results[(topic_id, partition)] = PartitionFetch(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif not 0 <= partition < ctx.replica_manager.topics()[name].num_partitions:
            results[(topic_id, partition)] = PartitionFetch(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            to_fetch.append((name, topic_id, partition))
    mode = ShareAcquireMode.BATCH_OPTIMIZED
    if version >= 2 and request.share_acquire_mode == ShareAcquireMode.RECORD_LIMIT.value:
        mode = ShareAcquireMode.RECORD_LIMIT
    if to_fetch:
        results.update(await share.partitions.fetch(
            group_id, member_id, to_fetch, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes,
            max_bytes=request.max_bytes, max_records=request.max_records, batch_size=request.batch_size,
            acquire_mode=mode))
    return results


def _error(cls: Any, error_code: ErrorCode, message: str | None) -> Any:
    return cls(throttle_time_ms=0, error_code=error_code, error_message=message, acquisition_lock_timeout_ms=0,
               responses=[], node_endpoints=[])


__all__ = ["RequestPartition", "handle"]

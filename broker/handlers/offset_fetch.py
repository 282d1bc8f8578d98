"""OffsetFetch (key 9), v1-9: committed offsets, -1 with NONE where nothing is committed; a null topic
list (v2+) means every partition the group committed. v8 batches several groups. v7+ require_stable: a
partition with a transactional commit still pending gets UNSTABLE_OFFSET_COMMIT (retriable). v9+ names the
member (id and epoch) a KIP-848 consumer group checks (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import GROUP, elsewhere
from minikafka.broker.groups.group_metadata import OffsetAndMetadata
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

Fetched = dict[str, list[tuple[int, OffsetAndMetadata | None, ErrorCode]]]


def _fetch(ctx: BrokerContext, session: Session, group_id: str, topics: Any,
           require_stable: bool, member: tuple[str | None, int] = (None, -1)) -> tuple[ErrorCode, Fetched]:
    """(group error, topic -> [(partition, committed offset or None, partition error)]). As Kafka: DESCRIBE on
    the group, and topics the session may not describe answer TOPIC_AUTHORIZATION_FAILED when named, and are
    left out when the request asks for every partition."""
    requested = None
    describable: set[str] | None = None
    if topics is not None:
        requested = [(topic.name, index) for topic in topics for index in topic.partition_indexes]
        describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                       (topic_name for topic_name, _ in requested))
    by_topic: Fetched = defaultdict(list)
    if not authorize(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif elsewhere(ctx.coordinators, ctx.node_id, GROUP, group_id):
        error = ErrorCode.NOT_COORDINATOR
    else:
        offsets_api = ctx.group_coordinator.offsets
        error, offsets = offsets_api.handle_fetch_offsets(
            group_id, None if requested is None else [tp for tp in requested if tp[0] in (describable or ())],
            *member)
    if error is not ErrorCode.NONE:
        for topic_name, partition in requested or ():
            by_topic[topic_name].append((partition, None, error))
        return error, by_topic
    if requested is None:
        visible = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                   (topic_name for topic_name, _ in offsets))
        offsets = {tp: value for tp, value in offsets.items() if tp[0] in visible}
    else:
        for topic_name, partition in requested:
            if describable is None or topic_name not in describable:
                by_topic[topic_name].append((partition, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    unstable = offsets_api.unstable_partitions(group_id, offsets) if require_stable else set()
    for (topic_name, partition), value in offsets.items():
        if (topic_name, partition) in unstable:
            by_topic[topic_name].append((partition, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
        else:
            by_topic[topic_name].append((partition, value, ErrorCode.NONE))
    return error, by_topic


def _partition_fields(index: int, value: OffsetAndMetadata | None, error: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": -1 if value is None else value.offset,
        "committed_leader_epoch": -1 if value is None else value.leader_epoch,
        "metadata": "" if value is None else value.metadata,
        "error_code": error,
    }


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.OFFSET_FETCH, version)
    if version >= 8:
        group_cls = cls.OffsetFetchResponseGroup
        topic_cls = group_cls.OffsetFetchResponseTopics
        partition_cls = topic_cls.OffsetFetchResponsePartitions
        groups = []
        for group in request.groups:
            member = (group.member_id, group.member_epoch) if version >= 9 else (None, -1)
            error, by_topic = _fetch(ctx, session, group.group_id, group.topics, bool(request.require_stable), member)
            if error is not ErrorCode.NONE:
                by_topic = {}  # Kafka's OffsetFetchResponse.groupError: v2+ answers a group error with no topics
            groups.append(
                group_cls(
                    group_id=group.group_id,
                    error_code=error,
                    topics=[
                        topic_cls(
                            name=name,
                            partitions=[
                                partition_cls(**_partition_fields(index, value, partition_error))
                                for index, value, partition_error in partitions
                            ],
                        )
                        for name, partitions in by_topic.items()
                    ],
                )
            )
        return cls(throttle_time_ms=0, groups=groups)
    topic_cls = cls.OffsetFetchResponseTopic
    partition_cls = topic_cls.OffsetFetchResponsePartition
    require_stable = version >= 7 and bool(request.require_stable)
    error, by_topic = _fetch(ctx, session, request.group_id, request.topics, require_stable)
    if error is not ErrorCode.NONE and version >= 2:
        by_topic = {}  # Kafka's OffsetFetchResponse.groupError: the top-level error alone, no topics
    return cls(
        throttle_time_ms=0,
        error_code=error,
        topics=[
            topic_cls(
                name=name,
                partitions=[
                    # v0-1 have no top-level error: `_fetch` puts a group error on every partition.
                    partition_cls(**_partition_fields(index, value, partition_error))
                    for index, value, partition_error in partitions
                ],
            )
            for name, partitions in by_topic.items()
        ],
    )

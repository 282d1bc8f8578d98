"""OffsetFetch (key 9), v1-8: committed offsets, -1 with NONE where nothing is committed; a null topic
list (v2+) means every partition the group committed. v8 batches several groups."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from broker.context import BrokerContext
from broker.groups.group_metadata import OffsetAndMetadata
from protocol.api_keys import ApiKey
from protocol.connection import RequestReceived
from protocol.errors import ErrorCode
from protocol.messages import response_class


def _fetch(
    ctx: BrokerContext, group_id: str, topics: Any
) -> tuple[ErrorCode, dict[str, list[tuple[int, OffsetAndMetadata | None]]]]:
    requested = None
    if topics is not None:
        requested = [(topic.name, index) for topic in topics for index in topic.partition_indexes]
    error, offsets = ctx.group_coordinator.offsets.handle_fetch_offsets(group_id, requested)
    by_topic: dict[str, list[tuple[int, OffsetAndMetadata | None]]] = defaultdict(list)
    if error is not ErrorCode.NONE:
        for topic_name, partition in requested or ():
            by_topic[topic_name].append((partition, None))
        return error, by_topic
    for (topic_name, partition), value in offsets.items():
        by_topic[topic_name].append((partition, value))
    return error, by_topic


def _partition_fields(index: int, value: OffsetAndMetadata | None, error: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": -1 if value is None else value.offset,
        "committed_leader_epoch": -1 if value is None else value.leader_epoch,
        "metadata": "" if value is None else value.metadata,
        "error_code": error,
    }


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.OFFSET_FETCH, version)
    if version >= 8:
        group_cls = cls.OffsetFetchResponseGroup
        topic_cls = group_cls.OffsetFetchResponseTopics
        partition_cls = topic_cls.OffsetFetchResponsePartitions
        groups = []
        for group in request.groups:
            error, by_topic = _fetch(ctx, group.group_id, group.topics)
            groups.append(
                group_cls(
                    group_id=group.group_id,
                    error_code=error,
                    topics=[
                        topic_cls(
                            name=name,
                            partitions=[
                                partition_cls(**_partition_fields(index, value, ErrorCode.NONE))
                                for index, value in partitions
                            ],
                        )
                        for name, partitions in by_topic.items()
                    ],
                )
            )
        return cls(throttle_time_ms=0, groups=groups)
    topic_cls = cls.OffsetFetchResponseTopic
    partition_cls = topic_cls.OffsetFetchResponsePartition
    error, by_topic = _fetch(ctx, request.group_id, request.topics)
    # v1 has no top-level error: it goes on every partition.
    partition_error = error if version < 2 else ErrorCode.NONE
    return cls(
        throttle_time_ms=0,
        error_code=error,
        topics=[
            topic_cls(
                name=name,
                partitions=[
                    partition_cls(**_partition_fields(index, value, partition_error)) for index, value in partitions
                ],
            )
            for name, partitions in by_topic.items()
        ],
    )

"""OffsetCommit (key 8), v2-9: per-partition codes; unknown topics get UNKNOWN_TOPIC_OR_PARTITION, the rest
go to the group coordinator (generation/member checks, then one append to `__consumer_offsets`). For a KIP-848
consumer group `generation_id_or_member_epoch` is the member epoch (STALE_MEMBER_EPOCH; v9+ only)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.group_offsets import CommitRequest
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


def split_unknown_partitions(
    ctx: BrokerContext, topics: Iterable[Any], authorized_topics: set[str] | None = None
) -> tuple[dict[tuple[str, int], ErrorCode], list[tuple[tuple[str, int], Any]]]:
    """A request's partitions split into those this broker does not have (UNKNOWN_TOPIC_OR_PARTITION) or
    whose topic is not in `authorized_topics` (TOPIC_AUTHORIZATION_FAILED; None: all are) and the others, each
    with its request entry (topics with `name` and `partitions[].partition_index`)."""
    unknown: dict[tuple[str, int], ErrorCode] = {}
    known: list[tuple[tuple[str, int], Any]] = []
    for topic in topics:
        metadata = ctx.replica_manager.topic(topic.name)
        for partition in topic.partitions:
            tp = (topic.name, partition.partition_index)
            if authorized_topics is not None and topic.name not in authorized_topics:
                unknown[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif metadata is None or not 0 <= partition.partition_index < metadata.num_partitions:
                unknown[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                known.append((tp, partition))
    return unknown, known


def commit_requests(
    known: Iterable[tuple[tuple[str, int], Any]], carries_leader_epoch: bool
) -> dict[tuple[str, int], CommitRequest]:
    """The requested commit of each known partition (its leader epoch only where the version carries one)."""
    return {
        tp: CommitRequest(
            partition.committed_offset,
            partition.committed_leader_epoch if carries_leader_epoch else -1,
            partition.committed_metadata,
        )
        for tp, partition in known
    }


def commit_response(
    cls: Any, topic_cls: Any, partition_cls: Any, topics: Iterable[Any], results: Mapping[tuple[str, int], ErrorCode]
) -> Any:
    """An (Txn)OffsetCommit response: every requested partition with its error code, in request order."""
    return cls(
        throttle_time_ms=0,
        topics=[
            topic_cls(
                name=topic.name,
                partitions=[
                    partition_cls(
                        partition_index=partition.partition_index,
                        error_code=results[(topic.name, partition.partition_index)],
                    )
                    for partition in topic.partitions
                ],
            )
            for topic in topics
        ],
    )


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    coordinator = ctx.group_coordinator
    cls = response_class(ApiKey.OFFSET_COMMIT, version)
    topic_cls = cls.OffsetCommitResponseTopic
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        denied = {(topic.name, partition.partition_index): ErrorCode.GROUP_AUTHORIZATION_FAILED
                  for topic in request.topics for partition in topic.partitions}
        return commit_response(cls, topic_cls, topic_cls.OffsetCommitResponsePartition, request.topics, denied)
    if coordinator.validate_group_status(request.group_id, allow_empty_id=True) is ErrorCode.NONE:
        await coordinator.manager.ensure_topic()
    results, known = split_unknown_partitions(
        ctx, request.topics, authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC,
                                              (topic.name for topic in request.topics)))
    commits = commit_requests(known, version >= 6)
    if commits:
        results.update(
            coordinator.offsets.handle_commit_offsets(
                request.group_id,
                request.member_id,
                request.group_instance_id if version >= 7 else None,
                request.generation_id_or_member_epoch,
                commits,
                api_version=version,
            )
        )
    return commit_response(cls, topic_cls, topic_cls.OffsetCommitResponsePartition, request.topics, results)

"""Fetch (key 1), v4-18, with incremental fetch sessions (KIP-227) and topic ids from v13 (KIP-516).

As Kafka's KafkaApis.handleFetchRequest: the request's partitions (named by topic id from v13, resolved to names
here) and its session metadata go to the FetchManager, whose context says which partitions to read; partitions of
unknown topic ids (UNKNOWN_TOPIC_ID) or unknown topics/partitions (UNKNOWN_TOPIC_OR_PARTITION) are answered
without a read, the rest are read by the ReplicaManager (long poll: max_wait_ms/min_bytes; read_committed stops
at the last stable offset and lists the aborted transactions, read_uncommitted sends null), and the context
chooses what to send: everything for a full fetch, only changed partitions for an incremental one. A partition
read by topic id whose topic was meanwhile recreated under another id gets INCONSISTENT_TOPIC_ID.
Event-loop thread only.
"""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.fetch_context import FetchResponseData
from minikafka.broker.fetch_manager import TOPIC_ID_VERSION
from minikafka.broker.fetch_session import ZERO_UUID, PartitionData, TopicIdPartition
from minikafka.broker.quotas.request_throttling import fetch_max_bytes
from minikafka.broker.replica_manager import LEADER_EPOCH, FetchPartitionRequest, PartitionRead
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize_cluster, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import (
    FencedLeaderEpochError,
    InconsistentTopicIdError,
    KafkaError,
    NotLeaderOrFollowerError,
    TopicAuthorizationFailedError,
    UnknownLeaderEpochError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from minikafka.protocol.fetch_response import AbortedTransaction, FetchableTopicResponse, FetchResponse
from minikafka.protocol.fetch_response import PartitionData as FetchPartitionData


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> FetchResponse:
    request = event.request
    version = event.api_version
    uses_topic_ids = version >= TOPIC_ID_VERSION
    topic_names = ctx.replica_manager.topic_names_by_id() if uses_topic_ids else {}
    fetch_data: dict[TopicIdPartition, PartitionData] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            fetch_data[_topic_partition(topic, partition.partition, uses_topic_ids, topic_names)] = PartitionData(
                fetch_offset=partition.fetch_offset,
                partition_max_bytes=partition.partition_max_bytes,
                current_leader_epoch=partition.current_leader_epoch if version >= 9 else -1,
                log_start_offset=partition.log_start_offset,
                last_fetched_epoch=partition.last_fetched_epoch if version >= 12 else -1,
            )
    forgotten_topics = (request.forgotten_topics_data or []) if version >= 7 else []
    to_forget = [_topic_partition(topic, index, uses_topic_ids, topic_names)
                 for topic in forgotten_topics for index in topic.partitions]
    context = ctx.fetch_manager.new_context(
        version,
        request.session_id if version >= 7 else 0,
        request.session_epoch if version >= 7 else -1,
        _is_from_follower(request, version),
        fetch_data, to_forget, topic_names,
    )

    erroneous: dict[TopicIdPartition, PartitionRead] = {}
    interesting: list[tuple[TopicIdPartition, PartitionData]] = []
    # A follower needs CLUSTER_ACTION on the cluster, a consumer READ on each topic (Kafka's handleFetchRequest);
    # an authorized follower is then refused per partition, since this single broker has no followers.
    partitions = context.partitions()
    from_follower = _is_from_follower(request, version)
    follower_denied = from_follower and not authorize_cluster(ctx, session, AclOperation.CLUSTER_ACTION)
    readable = set() if from_follower else authorized_names(
        ctx, session, AclOperation.READ, ResourceType.TOPIC,
        (str(tp.topic) for tp, _ in partitions if tp.topic is not None))
    for topic_partition, data in partitions:
        error = _metadata_error(ctx, topic_partition)
        if follower_denied or (not from_follower and topic_partition.topic is not None
                               and topic_partition.topic not in readable):
            error = TopicAuthorizationFailedError()
        elif from_follower and error is None:
            error = _not_a_replica(data)
        elif error is None:
            error = _leadership_error(ctx, topic_partition, data, version)
        if error is not None:
            # refused before the read: Kafka's FetchResponse.partitionResponse has an empty aborted list, while
            # ReplicaManager's refusal of a follower (a read error) leaves it null
            aborted: list[tuple[int, int]] | None = (
                None if isinstance(error, (NotLeaderOrFollowerError, UnknownLeaderEpochError,
                                           FencedLeaderEpochError)) else [])
            erroneous[topic_partition] = PartitionRead(error, b"", aborted_transactions=aborted)
        else:
            interesting.append((topic_partition, data))
    # A consumer never asks for more than its consumer_byte_rate quota could allow in one window (KafkaApis).
    max_bytes = request.max_bytes if from_follower else fetch_max_bytes(
        getattr(ctx, "quotas", None), event, session, request.max_bytes)
    reads = await ctx.replica_manager.fetch(
        [
            FetchPartitionRequest(
                topic=str(topic_partition.topic),
                partition=topic_partition.partition,
                fetch_offset=data.fetch_offset,
                partition_max_bytes=data.partition_max_bytes,
                current_leader_epoch=data.current_leader_epoch,
                replica_end_offset=_replica_end_offset(ctx, str(topic_partition.topic), topic_partition.partition),
            )
            for topic_partition, data in interesting
        ],
        max_wait_ms=request.max_wait_ms,
        min_bytes=min(request.min_bytes, max_bytes),
        max_bytes=max_bytes,
        isolation_level=request.isolation_level,
    )
    updates: dict[TopicIdPartition, PartitionRead] = {}
    for topic_partition, _data in interesting:
        updates[topic_partition] = _check_topic_id(ctx, topic_partition,
                                                   reads[(str(topic_partition.topic), topic_partition.partition)])
    updates.update(erroneous)  # Kafka answers the partitions refused before the read last
    return _response(version, context.update_and_generate_response(updates))


def _topic_partition(topic: Any, partition: int, uses_topic_ids: bool,
                     topic_names: dict[uuid.UUID, str]) -> TopicIdPartition:
    if uses_topic_ids:
        return TopicIdPartition(topic.topic_id, topic_names.get(topic.topic_id), partition)
    return TopicIdPartition(ZERO_UUID, topic.topic, partition)


def _leadership_error(ctx: BrokerContext, topic_partition: TopicIdPartition, data: PartitionData,
                      version: int) -> KafkaError | None:
    """Kafka's localLogWithEpochOrThrow for a consumer: from v11 (KIP-392 client metadata) a follower replica
    serves it too, before that only the leader; then the client's leader epoch."""
    try:
        ctx.partitions.require_leader(str(topic_partition.topic), topic_partition.partition, ctx.node_id,
                                      data.current_leader_epoch, follower_allowed=version >= 11)
    except KafkaError as error:
        return error
    return None


def _replica_end_offset(ctx: BrokerContext, topic: str, partition: int) -> int | None:
    """Where this broker's replica of the partition ends when it is a follower (None when it leads)."""
    followers = ctx.partitions.followers
    if followers is None or ctx.partitions.get(topic, partition).leader == ctx.node_id:
        return None
    return followers.replica_log_end_offset(topic, partition, ctx.node_id)


def _is_from_follower(request: Any, version: int) -> bool:
    """Kafka's isFromFollower: a replica id >= 0 (v15+: in the tagged ReplicaState). Follower sessions are
    privileged in the FetchSessionCache."""
    if version >= 15:
        return request.replica_state is not None and request.replica_state.replica_id >= 0
    return bool(request.replica_id >= 0)


def _not_a_replica(data: PartitionData) -> KafkaError:
    """This broker has no followers: Kafka's Partition.fetchRecords refuses a follower fetch from a replica
    that is not in the partition's replica set (followerReplicaOrThrow) before reading anything."""
    if data.current_leader_epoch == -1:
        return NotLeaderOrFollowerError(f"Replica is not a follower of this partition (leader epoch {LEADER_EPOCH})")
    return UnknownLeaderEpochError("Replica is not recognized as a valid replica of this partition")


def _metadata_error(ctx: BrokerContext, topic_partition: TopicIdPartition) -> KafkaError | None:
    if topic_partition.topic is None:
        return UnknownTopicIdError(f"Topic id {topic_partition.topic_id} does not exist")
    try:
        ctx.replica_manager.require_partition(topic_partition.topic, topic_partition.partition)
    except UnknownTopicOrPartitionError as error:
        return error
    return None


def _check_topic_id(ctx: BrokerContext, topic_partition: TopicIdPartition, read: PartitionRead) -> PartitionRead:
    """Kafka's ReplicaManager check that the log read has the topic id the fetcher named (the topic may have been
    deleted and recreated while the fetch waited)."""
    if topic_partition.topic_id == ZERO_UUID or read.error is not None:
        return read
    metadata = ctx.replica_manager.topic(str(topic_partition.topic))
    if metadata is not None and metadata.topic_id != topic_partition.topic_id:
        return PartitionRead(InconsistentTopicIdError(
            "Topic ID in the fetch session did not match the topic ID in the log."), b"")
    return read


def _response(version: int, data: FetchResponseData) -> FetchResponse:
    """Group consecutive partitions of the same topic into one topic entry, as Kafka's FetchResponse.of does. The
    hand-written response shares each read's record bytes (protocol/fetch_response.py)."""
    uses_topic_ids = version >= TOPIC_ID_VERSION
    responses: list[FetchableTopicResponse] = []
    previous: object = None
    for topic_partition, read in data.partitions:
        topic_key = topic_partition.topic_id if uses_topic_ids else topic_partition.topic
        if not responses or topic_key != previous:
            responses.append(FetchableTopicResponse(topic_id=topic_partition.topic_id) if uses_topic_ids
                             else FetchableTopicResponse(topic=topic_partition.topic))
            previous = topic_key
        responses[-1].partitions.append(
            FetchPartitionData(
                partition_index=topic_partition.partition,
                error_code=read.error.error_code if read.error is not None else 0,
                high_watermark=read.high_watermark,
                last_stable_offset=read.last_stable_offset,
                log_start_offset=read.log_start_offset,
                aborted_transactions=None if read.aborted_transactions is None else [
                    AbortedTransaction(producer_id, first_offset)
                    for producer_id, first_offset in read.aborted_transactions
                ],
                preferred_read_replica=-1,
                records=read.records,
            )
        )
    return FetchResponse(version, throttle_time_ms=0, error_code=data.error_code, session_id=data.session_id,
                         responses=responses)

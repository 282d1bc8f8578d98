"""DescribeShareGroupOffsets (key 90, v0-1), AlterShareGroupOffsets (91, v0) and DeleteShareGroupOffsets (92, v0):
a share group's start offsets per partition, as `kafka-share-groups --describe`, `--reset-offsets` and
`--delete-offsets` use them (KIP-932), answered from the share coordinator's `__share_group_state`.

As Kafka 4.3.1's GroupCoordinatorService: Describe with null topics lists every partition the group initialised;
a topic that does not exist answers start offset -1 (absence, not an error); v1 adds the lag, the log end offset
minus the start offset minus the records already delivered past it (-1 while not initialised). Alter and Delete
need an empty group (NON_EMPTY_GROUP otherwise) and write the new state (a fresh ShareSnapshot at the new start
offset with the state epoch bumped; tombstones) before answering, moving the topics through the group's
ShareGroupStatePartitionMetadata as Kafka does (Alter: initializing, then initialized; Delete: deleting, then
dropped; a topic the group never initialised is refused with "There is no offset information to delete.", and a
group that never initialised any answers no topic at all). Authorization: DESCRIBE (Describe), READ
(Alter) or DELETE (Delete) on the group, DESCRIBE/READ on each topic."""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import GROUP, elsewhere
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.broker.share.share_coordinator import ShareCoordinator
from minikafka.broker.share.share_coordinator_state import ShareStateError
from minikafka.broker.share.share_partition import UNINITIALIZED_START_OFFSET
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

ZERO_UUID = uuid.UUID(int=0)
_UNINITIALIZED_LAG = -1
_UNINITIALIZED_DELIVERY_COMPLETE_COUNT = -1
_TOPIC_AUTHORIZATION_FAILED = "Topic authorization failed."
_UNKNOWN_TOPIC_OR_PARTITION = "This server does not host this topic-partition."


async def handle_describe(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    cls = response_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version)
    group_cls = cls.DescribeShareGroupOffsetsResponseGroup
    topic_cls = group_cls.DescribeShareGroupOffsetsResponseTopic
    partition_cls = topic_cls.DescribeShareGroupOffsetsResponsePartition
    share = ctx.share_coordinator
    groups = []
    for group in request.groups:
        if not authorize(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
            groups.append(group_cls(group_id=group.group_id, topics=[],
                                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None))
            continue
        status = ctx.group_coordinator.validate_group_status(group.group_id)
        if elsewhere(ctx.coordinators, ctx.node_id, GROUP, group.group_id):
            status = ErrorCode.NOT_COORDINATOR
        if share is None or status is not ErrorCode.NONE:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE if share is None else status
            groups.append(group_cls(group_id=group.group_id, topics=[], error_code=error, error_message=None))
            continue
        wanted = _wanted(share, group.group_id, group.topics)
        describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC, list(wanted))
        topics = []
        for name, partitions in wanted.items():
            metadata = ctx.replica_manager.topic(name)
            if metadata is None:
                topics.append(topic_cls(topic_name=name, topic_id=ZERO_UUID, partitions=[
                    partition_cls(partition_index=p, start_offset=UNINITIALIZED_START_OFFSET, leader_epoch=0,
                                  lag=_UNINITIALIZED_LAG, error_code=0, error_message=None) for p in partitions]))
                continue
            if name not in describable:  # as Kafka: no topic id for a topic the caller may not describe
                topics.append(topic_cls(topic_name=name, topic_id=ZERO_UUID, partitions=[
                    partition_cls(partition_index=p, start_offset=UNINITIALIZED_START_OFFSET, leader_epoch=0,
                                  lag=_UNINITIALIZED_LAG, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                  error_message=None) for p in partitions]))
                continue
            topics.append(topic_cls(topic_name=name, topic_id=metadata.topic_id, partitions=[
                _describe_partition(ctx, share, partition_cls, group.group_id, name, metadata.topic_id, p)
                for p in partitions]))
        groups.append(group_cls(group_id=group.group_id, topics=topics, error_code=0, error_message=None))
    return cls(throttle_time_ms=0, groups=groups)


def _wanted(share: ShareCoordinator, group_id: str, topics: Any) -> dict[str, list[int]]:
    """The requested partitions; null topics: the group's initialised share partitions (Kafka's
    initializedShareGroupPartitions), of the topics that still exist."""
    if topics is not None:
        return {t.topic_name: list(t.partitions) for t in topics}
    names = {topic_id: name for name, (topic_id, _count) in share.topics_image().items()}
    group = share.groups.get(group_id)
    initialized = group.state_partitions.initialized if group is not None and group.state_partitions else {}
    return {names[topic_id]: sorted(partitions) for topic_id, (_name, partitions) in sorted(initialized.items())
            if topic_id in names}


def _describe_partition(ctx: BrokerContext, share: ShareCoordinator, partition_cls: Any, group_id: str, topic: str,
                        topic_id: uuid.UUID, partition: int) -> Any:
    state = share.persister.read_state(group_id, topic_id, partition)
    start = UNINITIALIZED_START_OFFSET if state is None else state.start_offset
    lag = _UNINITIALIZED_LAG
    if state is not None and start != UNINITIALIZED_START_OFFSET \
            and state.delivery_complete_count != _UNINITIALIZED_DELIVERY_COMPLETE_COUNT:
        try:
            end = ctx.replica_manager.log_for(topic, partition).high_watermark
        except Exception:
            end = None
        if end is not None:
            lag = end - start - state.delivery_complete_count
    return partition_cls(partition_index=partition, start_offset=start, leader_epoch=0 if state is None
                         else state.leader_epoch, lag=lag, error_code=0, error_message=None)


async def handle_alter(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ALTER_SHARE_GROUP_OFFSETS, event.api_version)
    topic_cls = cls.AlterShareGroupOffsetsResponseTopic
    partition_cls = topic_cls.AlterShareGroupOffsetsResponsePartition
    share = ctx.share_coordinator
    error = _group_error(ctx, session, share, request.group_id, AclOperation.READ, create=True)
    if error is not None:
        return cls(throttle_time_ms=0, error_code=error[0], error_message=error[1], responses=[])
    assert share is not None
    topics = list(request.topics or ())
    readable = authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC, [t.topic_name for t in topics])
    # the first request of a fresh cluster may be this one: create the topics its writes go to, as a heartbeat does
    await share.group_store.ensure_topic()
    await share.persister.ensure_ready()
    group = share.group_or_new(request.group_id)
    # Kafka records the altered partitions as initializing, initialises their state at the new start offsets,
    # then records them as initialized (ShareGroupStatePartitionMetadata)
    change: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
    offsets: dict[tuple[uuid.UUID, int], int] = {}
    for topic in topics:
        metadata = ctx.replica_manager.topic(topic.topic_name)
        if topic.topic_name in readable and metadata is not None:
            valid = {p.partition_index: p.start_offset for p in topic.partitions
                     if 0 <= p.partition_index < metadata.num_partitions}
            if valid:
                change[metadata.topic_id] = (topic.topic_name, frozenset(valid))
                offsets.update({(metadata.topic_id, index): offset for index, offset in valid.items()})
    messages: dict[tuple[uuid.UUID, int], str | None] = {}

    def write_state(topic_id: uuid.UUID, partition: int) -> ErrorCode:
        code, messages[(topic_id, partition)] = _reset(share, request.group_id, topic_id, partition,
                                                       offsets[(topic_id, partition)])
        return code

    codes = share.initialize(group, change, write_state) if change else {}
    responses = []
    for topic in topics:
        metadata = ctx.replica_manager.topic(topic.topic_name)
        results = []
        for partition in topic.partitions:
            code, message = ErrorCode.NONE, None
            if topic.topic_name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif metadata is None or not 0 <= partition.partition_index < metadata.num_partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                key = (metadata.topic_id, partition.partition_index)
                code, message = codes.get(key, ErrorCode.UNKNOWN_SERVER_ERROR), messages.get(key)
            results.append(partition_cls(partition_index=partition.partition_index, error_code=code,
                                         error_message=message))
        responses.append(topic_cls(topic_name=topic.topic_name,
                                   topic_id=metadata.topic_id if metadata else ZERO_UUID, partitions=results))
    return cls(throttle_time_ms=0, error_code=0, error_message=None, responses=responses)


def _reset(share: ShareCoordinator, group_id: str, topic_id: uuid.UUID, partition: int,
           start_offset: int) -> tuple[ErrorCode, str | None]:
    current = share.persister.read_state(group_id, topic_id, partition)
    try:
        code = share.persister.initialize_state(group_id, topic_id, partition,
                                                state_epoch=0 if current is None else current.state_epoch + 1,
                                                start_offset=start_offset)
    except ShareStateError as error:
        return ErrorCode(error.error_code), str(error)
    share.partitions.forget(group_id, topic_id, partition)  # reloaded at its next fetch
    return code, None


async def handle_delete(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DELETE_SHARE_GROUP_OFFSETS, event.api_version)
    topic_cls = cls.DeleteShareGroupOffsetsResponseTopic
    share = ctx.share_coordinator
    error = _group_error(ctx, session, share, request.group_id, AclOperation.DELETE)
    if error is not None:
        return cls(throttle_time_ms=0, error_code=error[0], error_message=error[1], responses=[])
    assert share is not None
    topics = list(request.topics or ())
    readable = authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC, [t.topic_name for t in topics])
    # Kafka's order: the topics the caller may not read, then the deleted ones, then the coordinator's refusals
    # (no topic id on a refusal)
    refused = [topic_cls(topic_name=t.topic_name, topic_id=ZERO_UUID, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         error_message=_TOPIC_AUTHORIZATION_FAILED) for t in topics if t.topic_name not in readable]
    unknown = set()
    deletable: list[tuple[str, uuid.UUID]] = []
    for topic in topics:
        metadata = ctx.replica_manager.topic(topic.topic_name)
        if topic.topic_name not in readable:
            continue
        if metadata is None:
            unknown.add(topic.topic_name)
        else:
            deletable.append((topic.topic_name, metadata.topic_id))
    results = share.delete_offsets(request.group_id, deletable)
    if results is None:  # no share partition ever initialised: Kafka's coordinator answers no topic at all
        return cls(throttle_time_ms=0, error_code=0, error_message=None, responses=refused)
    ids = dict(deletable)
    done: list[Any] = []
    rejected: list[Any] = []
    failed: list[Any] = []
    for topic in topics:
        name = topic.topic_name
        if name in unknown:
            rejected.append(topic_cls(topic_name=name, topic_id=ZERO_UUID,
                                      error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      error_message=_UNKNOWN_TOPIC_OR_PARTITION))
        elif name in results:
            code, message = results[name]
            if code is ErrorCode.NONE:
                done.append(topic_cls(topic_name=name, topic_id=ids[name], error_code=code, error_message=None))
            else:  # the coordinator's refusals (in request order), then the failed deletions
                (rejected if message else failed).append(
                    topic_cls(topic_name=name, topic_id=ZERO_UUID, error_code=code, error_message=message))
    return cls(throttle_time_ms=0, error_code=0, error_message=None, responses=refused + done + rejected + failed)


def _group_error(ctx: BrokerContext, session: Session, share: ShareCoordinator | None, group_id: str,
                 operation: AclOperation, create: bool = False) -> tuple[ErrorCode, str | None] | None:
    """The group-level refusal, if any; `create`: a share group that does not exist yet is no refusal (Kafka's
    AlterShareGroupOffsets creates it)."""
    if not authorize(ctx, session, operation, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    status = ctx.group_coordinator.validate_group_status(group_id)
    if share is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    if status is not ErrorCode.NONE:
        return status, None
    if ctx.group_coordinator.manager.is_classic_or_consumer_group(group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    group = share.groups.get(group_id)
    if group is None:
        return None if create else (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, "The group is not empty."
    return None

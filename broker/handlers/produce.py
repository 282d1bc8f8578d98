"""Produce (key 0), v3+: one magic-2 batch per partition, appended through the ReplicaManager.

acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS for every partition). acks=0 gets no response at all,
and when any partition failed the connection is closed so the client refreshes metadata, as Kafka does.
Errors land per partition; one bad partition never fails the others. A transactional batch must belong to
the ongoing transaction of the request's transactional id on that partition (Kafka 3.6+ verification):
otherwise INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11), or INVALID_PRODUCER_EPOCH for a fenced producer.
From v12 (transaction version 2) the first transactional batch adds its partition to the transaction.
The answer is the hand-written `protocol.produce_response.ProduceResponse` (the same bytes as kafka-python's
generic one, at a fraction of its cost per request); this broker never sets the KIP-951 leader hints.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikafka.broker.admin_manager import INTERNAL_TOPICS
from minikafka.broker.context import BrokerContext
from minikafka.broker.network import CloseConnection
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.broker.transactions.transaction_version import SupportedOperation
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode, KafkaError, NotEnoughReplicasError
from minikafka.protocol.produce_response import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from minikafka.protocol.records import batch_header
from minikafka.protocol.records.attributes import COMPRESSION_CODEC_MASK, TRANSACTIONAL_FLAG_MASK, CompressionType
from minikafka.protocol.records.batch_header import LAST_OFFSET_DELTA_OFFSET, PRODUCER_ID_OFFSET

log = logging.getLogger(__name__)



def _precheck(
    ctx: BrokerContext, records: bytes | None, api_version: int, transactional_id: str | None, tp: tuple[str, int]
) -> ErrorCode | None:
    """Checks that depend on the request, not the log: zstd needs v7+, a transactional batch needs its
    partition in the producer's ongoing transaction."""
    if records is None or len(records) < LAST_OFFSET_DELTA_OFFSET:
        return None  # the log's validation reports malformed batches with the right code
    attributes = batch_header.attributes(records)
    if attributes & COMPRESSION_CODEC_MASK == CompressionType.ZSTD and api_version < 7:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if attributes & TRANSACTIONAL_FLAG_MASK and \
            len(records) >= PRODUCER_ID_OFFSET + batch_header.PRODUCER_ID_AND_EPOCH.size:
        producer_id, producer_epoch = batch_header.producer_id_and_epoch(records)
        # v12+ (transaction version 2) adds the partition to the transaction itself (KIP-890 part 2).
        error = ctx.txn_coordinator.verify_partition(transactional_id, producer_id, producer_epoch, tp,
                                                     SupportedOperation.for_produce(api_version))
        if error in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
            return ErrorCode.NOT_ENOUGH_REPLICAS  # Kafka's retriable answer while verification cannot run yet
        return None if error is ErrorCode.NONE else error
    return None


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> ProduceResponse | None:
    request = event.request
    api_version = event.api_version
    acks = request.acks
    transactional_id = getattr(request, "transactional_id", None)
    if _has_transactional_records(request) and (transactional_id is None or not authorize(
            ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)):
        return _all_failed(api_version, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    writable = authorized_names(ctx, session, AclOperation.WRITE, ResourceType.TOPIC,
                                (topic.name for topic in request.topic_data))
    replica_manager = ctx.replica_manager
    failed = False
    topics = []
    #: acks=all appends a paused follower in the ISR holds back:
    #: (result list, position, topic, partition, offset to reach, leader epoch)
    waiting: list[tuple[list[PartitionProduceResponse], int, str, int, int, int]] = []
    acks_code = ErrorCode.INVALID_REQUIRED_ACKS if acks not in (-1, 0, 1) else None
    node_id = ctx.node_id
    for topic_data in request.topic_data:
        name = topic_data.name
        partitions: list[PartitionProduceResponse] = []
        # what fails every partition of the topic, in Kafka's order: acks, authorization, internal topic
        topic_code = acks_code
        if topic_code is None and name not in writable:
            topic_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if topic_code is None and name in INTERNAL_TOPICS:  # Kafka: "Cannot append to internal topic"
            topic_code = ErrorCode.INVALID_TOPIC_EXCEPTION
        for partition_data in topic_data.partition_data:
            index = partition_data.index
            records = partition_data.records
            code = topic_code or _precheck(ctx, records, api_version, transactional_id, (name, index))
            if code is not None:
                result = PartitionProduceResponse(index, code)
            elif records is None:
                result = PartitionProduceResponse(index, ErrorCode.INVALID_RECORD)
            else:
                try:
                    state = ctx.partitions.require_leader(name, index, node_id)
                    partition_log = replica_manager.log_for(name, index)
                    if acks == -1 and len(state.isr) < partition_log.config.min_insync_replicas:
                        raise NotEnoughReplicasError(
                            f"The size of the current ISR {state.isr} is insufficient to satisfy the min.isr "
                            f"requirement of {partition_log.config.min_insync_replicas} for partition {name}-{index}")
                    info = replica_manager.append(name, index, records, partition_log, state.leader_epoch)
                except KafkaError as error:
                    result = PartitionProduceResponse(
                        index, error.error_code, log_start_offset=replica_manager.log_start_offset(name, index),
                        record_errors=[BatchIndexAndErrorMessage(batch_index, message)
                                       for batch_index, message in error.record_errors],
                        error_message=error.message or None)
                except Exception as exc:  # a bug in one partition must not fail the others
                    log.exception("append to %s-%d failed", name, index)
                    result = PartitionProduceResponse(index, ErrorCode.UNKNOWN_SERVER_ERROR, error_message=repr(exc))
                else:
                    result = PartitionProduceResponse(index, ErrorCode.NONE, info.first_offset,
                                                      info.log_append_time_ms, info.log_start_offset)
                    if acks == -1 and partition_log.high_watermark <= info.last_offset:
                        waiting.append((partitions, len(partitions), name, index, info.last_offset + 1,
                                        state.leader_epoch))
            failed = failed or result.error_code != ErrorCode.NONE
            partitions.append(result)
        topics.append(TopicProduceResponse(name, partitions))
    if acks == 0:
        if failed:
            raise CloseConnection("acks=0 produce failed")
        return None
    if waiting and ctx.partitions.followers is not None:
        await _wait_for_replication(ctx, waiting, request.timeout_ms)
    return ProduceResponse(api_version, topics)


async def _wait_for_replication(ctx: BrokerContext,
                                waiting: list[tuple[list[PartitionProduceResponse], int, str, int, int, int]],
                                timeout_ms: int) -> None:
    """Kafka's DelayedProduce: each acks=all append waits until the high watermark passes it; REQUEST_TIMED_OUT
    when the request's timeout comes first, NOT_LEADER_OR_FOLLOWER when the leader changed meanwhile,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas."""
    followers = ctx.partitions.followers
    assert followers is not None
    outcomes = await asyncio.gather(*(
        followers.wait_for_high_watermark(name, index, offset, max(timeout_ms, 0) / 1000, epoch)
        for _, _, name, index, offset, epoch in waiting))
    for (results, position, name, index, _, _), code in zip(waiting, outcomes, strict=True):
        appended = results[position]
        if code == ErrorCode.NONE:
            min_isr = ctx.replica_manager.log_for(name, index).config.min_insync_replicas
            if len(ctx.partitions.get(name, index).isr) >= min_isr:
                continue
            code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        results[position] = PartitionProduceResponse(index, code, appended.base_offset, appended.log_append_time_ms,
                                                     appended.log_start_offset)


def _has_transactional_records(request: Any) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: some partition's first batch has the transactional flag."""
    for topic_data in request.topic_data:
        for partition_data in topic_data.partition_data:
            records = partition_data.records
            if records is None or len(records) < LAST_OFFSET_DELTA_OFFSET:
                continue
            if batch_header.attributes(records) & TRANSACTIONAL_FLAG_MASK:
                return True
    return False


def _all_failed(api_version: int, request: Any, code: ErrorCode) -> ProduceResponse:
    """Kafka's ProduceRequest.getErrorResponse: every partition answers `code`."""
    if request.acks == 0:
        raise CloseConnection(f"acks=0 produce failed: {code.name}")
    return ProduceResponse(api_version, [
        TopicProduceResponse(topic_data.name, [PartitionProduceResponse(partition_data.index, code)
                                               for partition_data in topic_data.partition_data])
        for topic_data in request.topic_data])

"""AddPartitionsToTxn (key 24), v0-3 (the client form): add partitions to the producer's transaction.

As Kafka: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and then every other partition
OPERATION_NOT_ATTEMPTED; otherwise the coordinator's one answer goes to every partition. v0-1 clients do not
know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH instead."""

from __future__ import annotations

from typing import Any

from minikafka.broker.admin_manager import INTERNAL_TOPICS
from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


def fenced_for(error: ErrorCode, api_version: int, since_version: int = 2) -> ErrorCode:
    """Kafka answers INVALID_PRODUCER_EPOCH to versions before PRODUCER_FENCED existed for the API."""
    if error is ErrorCode.PRODUCER_FENCED and api_version < since_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ADD_PARTITIONS_TO_TXN, event.api_version)
    requested = [(topic.name, partition) for topic in request.v3_and_below_topics for partition in topic.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    # Kafka (v3 and below): WRITE on the transactional id, then WRITE on each topic; internal topics never pass.
    if not authorize(ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                     request.v3_and_below_transactional_id):
        requested_errors = {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in requested}
        return _response(cls, requested_errors)
    writable = authorized_names(ctx, session, AclOperation.WRITE, ResourceType.TOPIC,
                                (topic_name for topic_name, _ in requested if topic_name not in INTERNAL_TOPICS))
    for topic_name, partition in requested:
        metadata = ctx.replica_manager.topic(topic_name)
        if topic_name not in writable:
            errors[(topic_name, partition)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif metadata is None or not 0 <= partition < metadata.num_partitions:
            errors[(topic_name, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if errors:
        for tp in requested:
            errors.setdefault(tp, ErrorCode.OPERATION_NOT_ATTEMPTED)
    else:
        error = ctx.txn_coordinator.handle_add_partitions(
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            requested,
        )
        error = fenced_for(error, event.api_version)
        errors = {tp: error for tp in requested}
    return _response(cls, errors)


def _response(cls: Any, errors: dict[tuple[str, int], ErrorCode]) -> Any:
    topic_cls = cls.AddPartitionsToTxnTopicResult
    partition_cls = topic_cls.AddPartitionsToTxnPartitionResult
    by_topic: dict[str, list[Any]] = {}
    for (topic_name, partition), error in errors.items():
        by_topic.setdefault(topic_name, []).append(
            partition_cls(partition_index=partition, partition_error_code=error)
        )
    return cls(
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            topic_cls(name=name, results_by_partition=results) for name, results in by_topic.items()
        ],
    )

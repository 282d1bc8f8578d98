"""AddPartitionsToTxn (key 24), v0-5: add partitions to the producer's transaction.

v0-3 is the client form: as Kafka, partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and then every
other partition OPERATION_NOT_ATTEMPTED; otherwise the coordinator's one answer goes to every partition. v0-1
clients do not know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH instead. v4+ is the broker's own batched
form (Kafka's AddPartitionsToTxnManager; CLUSTER_ACTION on the cluster): per transaction either verifyOnly
(NONE, or TRANSACTION_ABORTABLE for a partition outside the transaction — INVALID_TXN_STATE before v5) or an add
under transaction version 2. A single node verifies and adds its own produces in process; v4+ is served for
Kafka's tools and tests that speak it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minikafka.broker.admin_manager import INTERNAL_TOPICS
from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import TRANSACTION, elsewhere
from minikafka.broker.security.authorize import (
    AclOperation,
    ResourceType,
    authorize,
    authorize_cluster,
    authorized_names,
)
from minikafka.broker.session import Session
from minikafka.broker.transactions.transaction_version import for_add_partitions_to_txn
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

TopicPartition = tuple[str, int]


def fenced_for(error: ErrorCode, api_version: int, since_version: int = 2) -> ErrorCode:
    """Kafka answers INVALID_PRODUCER_EPOCH to versions before PRODUCER_FENCED existed for the API."""
    if error is ErrorCode.PRODUCER_FENCED and api_version < since_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ADD_PARTITIONS_TO_TXN, event.api_version)
    if event.api_version >= 4:
        return _handle_batch(ctx, event, session, cls)
    requested = [(topic.name, partition) for topic in request.v3_and_below_topics for partition in topic.partitions]
    # Kafka (v3 and below): WRITE on the transactional id, then WRITE on each topic; internal topics never pass.
    if not authorize(ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                     request.v3_and_below_transactional_id):
        requested_errors = {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in requested}
        return cls(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(cls, requested_errors))
    errors = _partition_errors(ctx, session, requested)
    if not errors and elsewhere(ctx.coordinators, ctx.node_id, TRANSACTION, request.v3_and_below_transactional_id):
        errors = {tp: ErrorCode.NOT_COORDINATOR for tp in requested}
    if not errors:
        error = ctx.txn_coordinator.handle_add_partitions(
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            requested,
        )
        error = fenced_for(error, event.api_version)
        errors = {tp: error for tp in requested}
    return cls(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(cls, errors))


def _handle_batch(ctx: BrokerContext, event: RequestReceived, session: Session, cls: Any) -> Any:
    """v4+: several transactions, each verified or added (transaction version 2) on its own."""
    if not authorize_cluster(ctx, session, AclOperation.CLUSTER_ACTION):
        return cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[])
    results = []
    for transaction in event.request.transactions:
        requested = [(topic.name, partition) for topic in transaction.topics for partition in topic.partitions]
        errors = _partition_errors(ctx, session, requested, check_write=False)
        if not errors and elsewhere(ctx.coordinators, ctx.node_id, TRANSACTION, transaction.transactional_id):
            errors = {tp: ErrorCode.NOT_COORDINATOR for tp in requested}
        if not errors and transaction.verify_only:
            errors = ctx.txn_coordinator.verify_partitions_in_transaction(
                transaction.transactional_id, transaction.producer_id, transaction.producer_epoch, requested)
        elif not errors:
            error = ctx.txn_coordinator.handle_add_partitions(
                transaction.transactional_id, transaction.producer_id, transaction.producer_epoch, requested,
                for_add_partitions_to_txn(event.api_version))
            errors = {tp: error for tp in requested}
        if event.api_version < 5:  # TRANSACTION_ABORTABLE is v5's
            errors = {tp: ErrorCode.INVALID_TXN_STATE if error is ErrorCode.TRANSACTION_ABORTABLE else error
                      for tp, error in errors.items()}
        results.append(cls.AddPartitionsToTxnResult(transactional_id=transaction.transactional_id,
                                                    topic_results=_topic_results(cls, errors)))
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=results)


def _partition_errors(
    ctx: BrokerContext, session: Session, requested: Iterable[TopicPartition], check_write: bool = True
) -> dict[TopicPartition, ErrorCode]:
    """Unauthorized or unknown partitions, then OPERATION_NOT_ATTEMPTED for the rest; empty when all pass.
    v4+ comes from brokers, already allowed CLUSTER_ACTION: Kafka checks no topic ACL then (`check_write`)."""
    requested = list(requested)
    errors: dict[TopicPartition, ErrorCode] = {}
    writable = authorized_names(ctx, session, AclOperation.WRITE, ResourceType.TOPIC,
                                (topic_name for topic_name, _ in requested if topic_name not in INTERNAL_TOPICS)
                                ) if check_write else {topic_name for topic_name, _ in requested}
    for topic_name, partition in requested:
        metadata = ctx.replica_manager.topic(topic_name)
        if topic_name not in writable:
            errors[(topic_name, partition)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif metadata is None or not 0 <= partition < metadata.num_partitions:
            errors[(topic_name, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if errors:
        for tp in requested:
            errors.setdefault(tp, ErrorCode.OPERATION_NOT_ATTEMPTED)
    return errors


def _topic_results(cls: Any, errors: dict[TopicPartition, ErrorCode]) -> list[Any]:
    topic_cls = cls.AddPartitionsToTxnTopicResult
    partition_cls = topic_cls.AddPartitionsToTxnPartitionResult
    by_topic: dict[str, list[Any]] = {}
    for (topic_name, partition), error in errors.items():
        by_topic.setdefault(topic_name, []).append(
            partition_cls(partition_index=partition, partition_error_code=error)
        )
    return [topic_cls(name=name, results_by_partition=results) for name, results in by_topic.items()]

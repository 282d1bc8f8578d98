"""TxnOffsetCommit (key 28), v0-5: offsets committed as part of a transaction. They are written now and
become visible to OffsetFetch when the transaction commits. The group's `__consumer_offsets` partition must
be in the producer's ongoing transaction (AddOffsetsToTxn first), as Kafka 3.6+ verifies; v3 adds the
KIP-447 member and generation checks, v4 TRANSACTION_ABORTABLE, and v5 (transaction version 2) adds the
partition to the transaction itself instead (KIP-890 part 2: a TV_2 producer sends no AddOffsetsToTxn)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.groups.offsets_topic import OFFSETS_TOPIC, TxnProducer
from minikafka.broker.handlers.offset_commit import commit_requests, commit_response, split_unknown_partitions
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.broker.transactions.transaction_version import SupportedOperation
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    coordinator = ctx.group_coordinator
    cls = response_class(ApiKey.TXN_OFFSET_COMMIT, version)
    topic_cls = cls.TxnOffsetCommitResponseTopic
    denied = None
    if not authorize(ctx, session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, request.group_id):
        denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if denied is not None:
        refused = {(topic.name, partition.partition_index): denied
                   for topic in request.topics for partition in topic.partitions}
        return commit_response(cls, topic_cls, topic_cls.TxnOffsetCommitResponsePartition, request.topics, refused)
    results, known = split_unknown_partitions(
        ctx, request.topics, authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC,
                                              (topic.name for topic in request.topics)))
    commits = commit_requests(known, version >= 2)
    if commits:
        error = coordinator.validate_group_status(request.group_id)
        if error is ErrorCode.NONE:
            offsets_partition = (OFFSETS_TOPIC, coordinator.manager.partition_for(request.group_id))
            error = ctx.txn_coordinator.verify_partition(
                request.transactional_id, request.producer_id, request.producer_epoch, offsets_partition,
                SupportedOperation.for_txn_offset_commit(version),  # v5 (TV_2) adds the partition itself
            )
        if error is not ErrorCode.NONE:
            results.update({tp: error for tp in commits})
        else:
            results.update(
                coordinator.offsets.handle_txn_commit_offsets(
                    request.group_id,
                    TxnProducer(request.producer_id, request.producer_epoch),
                    request.member_id if version >= 3 else "",
                    request.group_instance_id if version >= 3 else None,
                    request.generation_id if version >= 3 else -1,
                    commits,
                )
            )
    return commit_response(cls, topic_cls, topic_cls.TxnOffsetCommitResponsePartition, request.topics, results)

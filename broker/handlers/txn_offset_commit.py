"""TxnOffsetCommit (key 28), v0-3: offsets committed as part of a transaction. They are written now and
become visible to OffsetFetch when the transaction commits. The group's `__consumer_offsets` partition must
be in the producer's ongoing transaction (AddOffsetsToTxn first), as Kafka 3.6+ verifies; v3 adds the
KIP-447 member and generation checks."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.groups.group_offsets import CommitRequest
from broker.groups.offsets_topic import OFFSETS_TOPIC, TxnProducer
from broker.handlers.offset_commit import split_unknown_partitions
from protocol.api_keys import ApiKey
from protocol.connection import RequestReceived
from protocol.errors import ErrorCode
from protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    request = event.request
    version = event.api_version
    coordinator = ctx.group_coordinator
    results, known = split_unknown_partitions(ctx, request.topics)
    commits = {
        tp: CommitRequest(
            partition.committed_offset,
            partition.committed_leader_epoch if version >= 2 else -1,
            partition.committed_metadata,
        )
        for tp, partition in known
    }
    if commits:
        error = coordinator.validate_group_status(request.group_id)
        if error is ErrorCode.NONE:
            offsets_partition = (OFFSETS_TOPIC, coordinator.manager.partition_for(request.group_id))
            error = ctx.txn_coordinator.verify_partition(
                request.transactional_id, request.producer_id, request.producer_epoch, offsets_partition
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
    cls = response_class(ApiKey.TXN_OFFSET_COMMIT, version)
    topic_cls = cls.TxnOffsetCommitResponseTopic
    partition_cls = topic_cls.TxnOffsetCommitResponsePartition
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
            for topic in request.topics
        ],
    )

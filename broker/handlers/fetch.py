"""Fetch (key 1), v4-12, sessionless: every requested partition is answered, with session_id 0.

Long polling (max_wait_ms/min_bytes) is the ReplicaManager's; this module maps the request to
`FetchPartitionRequest`s and the reads back to the response, partition errors included. read_committed
(isolation_level 1) reads stop at the last stable offset and list the aborted transactions overlapping the
returned batches, which the consumer uses to drop those producers' records; read_uncommitted sends null.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.replica_manager import FetchPartitionRequest
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    request = event.request
    requests = [
        FetchPartitionRequest(
            topic=topic.topic,
            partition=partition.partition,
            fetch_offset=partition.fetch_offset,
            partition_max_bytes=partition.partition_max_bytes,
            current_leader_epoch=partition.current_leader_epoch if event.api_version >= 9 else -1,
        )
        for topic in request.topics
        for partition in topic.partitions
    ]
    reads = await ctx.replica_manager.fetch(
        requests,
        max_wait_ms=request.max_wait_ms,
        min_bytes=request.min_bytes,
        max_bytes=request.max_bytes,
        isolation_level=request.isolation_level,
    )
    cls = response_class(ApiKey.FETCH, event.api_version)
    topic_cls = cls.FetchableTopicResponse
    partition_cls = topic_cls.PartitionData
    aborted_cls = partition_cls.AbortedTransaction
    responses = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            read = reads[(topic.topic, partition.partition)]
            partitions.append(
                partition_cls(
                    partition_index=partition.partition,
                    error_code=read.error.error_code if read.error is not None else ErrorCode.NONE,
                    high_watermark=read.high_watermark,
                    last_stable_offset=read.last_stable_offset,
                    log_start_offset=read.log_start_offset,
                    aborted_transactions=None if read.aborted_transactions is None else [
                        aborted_cls(producer_id=producer_id, first_offset=first_offset)
                        for producer_id, first_offset in read.aborted_transactions
                    ],
                    preferred_read_replica=-1,
                    records=read.records,
                )
            )
        responses.append(topic_cls(topic=topic.topic, partitions=partitions))
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=responses)

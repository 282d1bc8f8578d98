"""DescribeLogDirs (key 35), v1-5: the one log dir, the bytes of each requested partition's segments, and
(v4+) the volume's total and usable bytes, as Kafka's ReplicaManager.describeLogDirs answers.

A null topic list means every hosted partition. Requested partitions this broker does not host are left out
(the schema has no per-partition error), and so are topics left without partitions. There is no future log
(AlterReplicaLogDirs) and the high watermark is the log end offset, so offset_lag is 0 and is_future_key false;
no dir is ever cordoned (v5). An offline log dir answers KAFKA_STORAGE_ERROR with no topics.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.purgatory import TopicPartition
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DESCRIBE_LOG_DIRS, event.api_version)
    result_cls = cls.DescribeLogDirsResult
    topic_cls = result_cls.DescribeLogDirsTopic
    partition_cls = topic_cls.DescribeLogDirsPartition
    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE):
        return cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])

    wanted: list[TopicPartition] | None = None
    if request.topics is not None:
        wanted = [(topic.topic, partition) for topic in request.topics for partition in topic.partitions]
    description = ctx.replica_manager.describe_log_dir(wanted)

    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), size_bytes in description.partition_sizes.items():
        by_topic.setdefault(topic, []).append(
            partition_cls(partition_index=partition, partition_size=size_bytes, offset_lag=0, is_future_key=False))
    error_code = ErrorCode.NONE if description.error is None else description.error.error_code
    result = result_cls(
        error_code=error_code,
        log_dir=description.log_dir,
        topics=[topic_cls(name=topic, partitions=partitions) for topic, partitions in by_topic.items()],
        total_bytes=description.total_bytes,
        usable_bytes=description.usable_bytes,
        is_cordoned=False,
    )
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, results=[result])

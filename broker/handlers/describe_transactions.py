"""DescribeTransactions (key 65), v0: the coordinator's state of each transactional id (kafka-transactions.sh
describe); an unknown id gets TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import TRANSACTION, elsewhere
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.DESCRIBE_TRANSACTIONS, event.api_version)
    state_cls = cls.TransactionState
    states = []
    for transactional_id in event.request.transactional_ids:
        if not authorize(ctx, session, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            error, metadata = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        elif elsewhere(ctx.coordinators, ctx.node_id, TRANSACTION, transactional_id):
            error, metadata = ErrorCode.NOT_COORDINATOR, None
        else:
            error, metadata = ctx.txn_coordinator.describe_transaction(transactional_id)
        if metadata is None or error is not ErrorCode.NONE:
            states.append(state_cls(error_code=error, transactional_id=transactional_id, transaction_state="",
                                    transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                                    producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                       (topic for topic, _ in metadata.topic_partitions))
        for topic, partition in sorted(metadata.topic_partitions):
            if topic in describable:  # Kafka leaves out the topics the session may not describe
                by_topic.setdefault(topic, []).append(partition)
        states.append(state_cls(
            error_code=ErrorCode.NONE,
            transactional_id=transactional_id,
            transaction_state=metadata.state.state_name,
            transaction_timeout_ms=metadata.txn_timeout_ms,
            transaction_start_time_ms=metadata.txn_start_timestamp_ms,
            producer_id=metadata.producer_id,
            producer_epoch=metadata.producer_epoch,
            topics=[state_cls.TopicData(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
        ))
    return cls(throttle_time_ms=0, transaction_states=states)

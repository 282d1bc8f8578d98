"""What ShareFetch and ShareAcknowledge share (KIP-932): reading a request's topics by id and its acknowledgement
batches, applying the acknowledgements with Kafka's request-level checks, and the per-partition leader fields.
Event-loop thread only."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize, authorized_names
from minikafka.broker.session import Session
from minikafka.broker.share.share_types import (
    AcknowledgementBatch,
    ShareAcknowledgeError,
    validate_acknowledgement_batches,
)
from minikafka.protocol.errors import ErrorCode

#: ShareFetch/ShareAcknowledge v2 added RENEW (KIP-1222).
RENEW_VERSION = 2
#: Kafka's KafkaApis.isMemberIdValid: a share member id (the client's UUID) is 1 to 36 characters.
MAX_MEMBER_ID_CHARS = 36
INVALID_MEMBER_ID_MESSAGE = "Invalid member id in the request."


def valid_member_id(member_id: str | None) -> bool:
    """Kafka's only check of a ShareFetch/ShareAcknowledge member id: its form. Whether the share group knows the
    member is not asked (a member that left or never joined fetches and acknowledges on its share session)."""
    return member_id is not None and 0 < len(member_id) <= MAX_MEMBER_ID_CHARS


def request_error(ctx: BrokerContext, session: Session, group_id: str,
                  member_id: str | None) -> tuple[ErrorCode, str | None] | None:
    """The top-level error ShareFetch and ShareAcknowledge answer before their share session is looked at: share
    groups off, no READ on the group, or a malformed member id; None when the request may go on."""
    if ctx.share_coordinator is None:
        return ErrorCode.UNSUPPORTED_VERSION, "Share groups are not enabled."
    if not authorize(ctx, session, AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    if not valid_member_id(member_id):
        return ErrorCode.INVALID_REQUEST, INVALID_MEMBER_ID_MESSAGE
    return None


@dataclass(frozen=True, slots=True)
class RequestPartition:
    topic_id: uuid.UUID
    partition: int
    topic: str | None  # None: unknown topic id
    readable: bool
    batches: tuple[AcknowledgementBatch, ...]


def request_partitions(ctx: BrokerContext, session: Session, topics: Iterable[Any]) -> list[RequestPartition]:
    """The request's partitions with their names (by topic id), READ authorization and acknowledgement batches."""
    names = ctx.replica_manager.topic_names_by_id()
    topics = list(topics or ())
    readable = authorized_names(ctx, session, AclOperation.READ, ResourceType.TOPIC,
                                (names[t.topic_id] for t in topics if t.topic_id in names))
    return [
        RequestPartition(
            topic.topic_id, partition.partition_index, names.get(topic.topic_id),
            names.get(topic.topic_id) in readable,
            tuple(AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                  for b in (partition.acknowledgement_batches or ())),
        )
        for topic in topics
        for partition in topic.partitions
    ]


async def acknowledge(
    ctx: BrokerContext, group_id: str, member_id: str, partition: RequestPartition, *, is_renew_ack: bool,
    version: int,
) -> tuple[ErrorCode, str | None]:
    """Apply one partition's acknowledgements: Kafka's checks, then the share partition's."""
    if partition.topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID, None
    if not partition.readable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    try:
        validate_acknowledgement_batches(partition.batches, is_renew_ack=is_renew_ack,
                                         renew_supported=version >= RENEW_VERSION)
    except ShareAcknowledgeError as error:
        return ErrorCode(error.error_code), error.message
    share = ctx.share_coordinator
    assert share is not None
    return await share.partitions.acknowledge(group_id, member_id, partition.topic, partition.topic_id,
                                              partition.partition, partition.batches)


def current_leader(cls: Any, ctx: BrokerContext) -> Any:
    """Kafka fills CurrentLeader only for NOT_LEADER_OR_FOLLOWER/FENCED_LEADER_EPOCH, which this single node never
    answers: the schema's defaults (0, 0), as Kafka sends them."""
    return cls(leader_id=0, leader_epoch=0)

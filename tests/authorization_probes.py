"""Raw requests for the authorization tests (tests/broker/test_authorization_wire.py and the side-by-side
comparison in tests/interop/test_authorization_comparison.py), each returning what the answer reveals: error
codes, and the names, ids, offsets, assignments and record bytes that came with them.

Every helper takes a `WireClient` (or `SaslWireClient`) and is a plain function of the broker's answer, so the
same call against Apache Kafka and minikafka yields comparable values. The group requests are resent while the
group coordinator loads (`WireClient.request_until_ready`): the first of a module's tests meets a fresh
`__consumer_offsets`."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.messages import REQUEST_CLASSES
from tests.wire_client import WireClient

ZERO_UUID = uuid.UUID(int=0)
# Kafka's AclOperation codes, as KIP-430 bit positions
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = (
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
INT_MIN = -2147483648


def bits(operations: set[int] | int | None) -> set[int] | None:
    """A KIP-430 field as a set of operation codes (kafka-python decodes some as sets, some as ints)."""
    if operations is None or operations == INT_MIN:
        return None
    if isinstance(operations, int):
        return {code for code in range(32) if operations & (1 << code)}
    return set(operations)


def metadata(client: WireClient, names: list[str] | None = None, ids: list[uuid.UUID] | None = None,
             version: int = 12, topic_operations: bool = False, cluster_operations: bool = False) -> Any:
    topic = MetadataRequest.MetadataRequestTopic
    topics = None if names is None and ids is None else (
        [topic(name=name, topic_id=ZERO_UUID) for name in names or []]
        + [topic(name=None, topic_id=topic_id) for topic_id in ids or []])
    fields: dict[str, Any] = {"topics": topics, "allow_auto_topic_creation": False,
                              "include_topic_authorized_operations": topic_operations}
    if version <= 10:
        fields["include_cluster_authorized_operations"] = cluster_operations
    return client.request(MetadataRequest[version](**fields))


def revealed_metadata(response: Any) -> list[tuple[Any, ...]]:
    """(error, name, topic id, partition count, authorized operations) per topic, sorted."""
    return sorted(((t.error_code, t.name or "", str(t.topic_id), len(t.partitions), sorted(bits(
        t.authorized_operations) or []) if hasattr(t, "authorized_operations") else None) for t in response.topics),
        key=repr)


def topic_id(client: WireClient, name: str) -> uuid.UUID:
    found: uuid.UUID = metadata(client, [name]).topics[0].topic_id
    return found


def heartbeat(client: WireClient, group: str, member_id: str, *, epoch: int = 0, names: list[str] | None = None,
              regex: str | None = None) -> Any:
    """ConsumerGroupHeartbeat v1: a join (epoch 0) or a heartbeat carrying nothing new."""
    cls = REQUEST_CLASSES[ApiKey.CONSUMER_GROUP_HEARTBEAT][1]
    joining = epoch == 0
    return client.request_until_ready(cls(
        group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
        rebalance_timeout_ms=30_000 if joining else -1, subscribed_topic_names=names if joining else None,
        subscribed_topic_regex=regex if joining else None, server_assignor=None,
        topic_partitions=[] if joining else None))


def assigned(response: Any) -> dict[uuid.UUID, list[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: sorted(tp.partitions) for tp in response.assignment.topic_partitions}


def group_describe(client: WireClient, groups: list[str], operations: bool = False) -> Any:
    cls = REQUEST_CLASSES[ApiKey.CONSUMER_GROUP_DESCRIBE][1]
    return client.request_until_ready(cls(group_ids=groups, include_authorized_operations=operations))


def revealed_group_describe(response: Any) -> list[tuple[Any, ...]]:
    """(group, error, member count, topic names and ids of assignments, authorized operations) per group."""
    def topics(group: Any) -> list[tuple[str, str]]:
        return sorted({(tp.topic_name, str(tp.topic_id)) for member in group.members
                       for assignment in (member.assignment, member.target_assignment)
                       for tp in assignment.topic_partitions})
    return sorted((g.group_id, g.error_code, len(g.members), topics(g), sorted(bits(g.authorized_operations) or []))
                  for g in response.groups)


def describe_groups(client: WireClient, groups: list[str], operations: bool = True) -> list[tuple[Any, ...]]:
    response = client.request_until_ready(DescribeGroupsRequest[5](groups=groups,
                                                                   include_authorized_operations=operations))
    return sorted((g.group_id, g.error_code, g.group_state, sorted(bits(g.authorized_operations) or []))
                  for g in response.groups)


def fetch(client: WireClient, topic: str, replica_id: int = -1, leader_epoch: int = -1,
          version: int = 12) -> list[tuple[int, int, int]]:
    """(error, high watermark, record bytes) of partition 0."""
    topic_cls = FetchRequest.FetchTopic
    response = client.request(FetchRequest[version](
        replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=1_000_000, isolation_level=0, session_id=0,
        session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[topic_cls(topic=topic, partitions=[topic_cls.FetchPartition(
            partition=0, current_leader_epoch=leader_epoch, fetch_offset=0, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=100_000)])]))
    return [(p.error_code, p.high_watermark, len(p.records or b"")) for t in response.responses
            for p in t.partitions]


def offset_fetch(client: WireClient, group: str, topics: list[str], version: int = 1) -> list[tuple[Any, ...]]:
    """(topic, partition error, committed offset) per partition, plus v2+'s group error."""
    topic_cls = OffsetFetchRequest.OffsetFetchRequestTopic
    fields: dict[str, Any] = {"group_id": group,
                              "topics": [topic_cls(name=name, partition_indexes=[0]) for name in topics]}
    if version >= 7:
        fields["require_stable"] = False
    response = client.request_until_ready(OffsetFetchRequest[version](**fields))
    partitions = sorted((t.name, p.error_code, p.committed_offset) for t in response.topics for p in t.partitions)
    return [("group", getattr(response, "error_code", 0)), *partitions]

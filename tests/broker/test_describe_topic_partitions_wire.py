"""DescribeTopicPartitions over a real socket: partition fields, pagination with `response_partition_limit` and
the cursor, and the per-topic and request-level errors, as Apache Kafka 4.3 answers the same requests."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from minikafka.protocol.errors import ErrorCode
from tests.broker.test_fetch_wire import create_topic
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

TOPIC_OPERATIONS = 3576  # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
Page = tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]


def describe(client: WireClient, topics: list[str], limit: int = 2000,
             cursor: tuple[str, int] | None = None) -> Any:
    request_cls = DescribeTopicPartitionsRequest
    return client.request(request_cls[0](
        topics=[request_cls.TopicRequest(name=name) for name in topics], response_partition_limit=limit,
        cursor=None if cursor is None else request_cls.Cursor(topic_name=cursor[0], partition_index=cursor[1])))


def page(client: WireClient, topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Page:
    """(topic name, error code, partition indexes) per topic, and the next cursor."""
    response = describe(client, topics, limit, cursor)
    next_cursor = response.next_cursor
    return ([(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in response.topics],
            None if next_cursor is None else (next_cursor.topic_name, next_cursor.partition_index))


def test_partitions_describe_this_node_as_leader_replica_and_isr(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "t", partitions=2)
        response = describe(client, ["t", "missing", "bad/name", "__consumer_offsets"])
        topics = {t.name: t for t in response.topics}
        assert [t.name for t in response.topics] == ["__consumer_offsets", "bad/name", "missing", "t"]  # sorted
        metadata = client.request(MetadataRequest[12](topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                                                      allow_auto_topic_creation=False,
                                                      include_topic_authorized_operations=False))
        described = topics["t"]
        assert (described.error_code, described.topic_id, described.is_internal) == (
            ErrorCode.NONE, metadata.topics[0].topic_id, False)
        assert described.topic_authorized_operations == TOPIC_OPERATIONS
        assert [(p.error_code, p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
                 p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) for p in described.partitions] == [
            (0, 0, 1, 0, [1], [1], [], [], []), (0, 1, 1, 0, [1], [1], [], [], [])]
        # a bad topic gets its own error while the rest of the request succeeds
        assert (topics["missing"].error_code, topics["missing"].topic_id) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                            None)  # zero UUID
        assert topics["bad/name"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        internal = topics["__consumer_offsets"]  # not created yet on this broker: unknown, but internal
        assert (internal.error_code, internal.is_internal) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True)
        assert response.next_cursor is None


def test_pagination_follows_the_partition_limit_and_the_cursor(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "aaa")
        create_topic(client, "probe", partitions=2)
        create_topic(client, "probe2", partitions=3)
        requested = ["probe2", "probe", "aaa", "nope"]
        # a topic cut short points the cursor at its next partition; unknown topics use no budget
        assert page(client, requested, 2) == ([("aaa", 0, [0]), ("nope", 3, []), ("probe", 0, [0])], ("probe", 1))
        assert page(client, requested, 2, ("probe", 1)) == ([("probe", 0, [1]), ("probe2", 0, [0])], ("probe2", 1))
        assert page(client, requested, 2, ("probe2", 1)) == ([("probe2", 0, [1, 2])], None)
        # a topic reached with no budget left points the cursor at its partition 0
        assert page(client, ["probe", "probe2"], 2) == ([("probe", 0, [0, 1])], ("probe2", 0))
        # limit 0 is clamped to 1; duplicates are described once
        assert page(client, ["probe2", "probe2"], 0) == ([("probe2", 0, [0])], ("probe2", 1))
        # a cursor past the last partition describes none of them
        assert page(client, ["probe2"], 5, ("probe2", 7)) == ([("probe2", 0, [])], None)
        # an empty list is every topic, from the cursor on
        assert page(client, [], 2) == ([("aaa", 0, [0]), ("probe", 0, [0])], ("probe", 1))
        assert page(client, [], 2000, ("ab", 0)) == ([("probe", 0, [0, 1]), ("probe2", 0, [0, 1, 2])], None)
        assert page(client, [], 1, ("zzz", 0)) == ([], None)


def test_bad_cursor_fails_every_requested_topic_with_invalid_request(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "probe2", partitions=3)
        # the cursor's topic must be requested, and its partition must not be negative
        for cursor in (("probe", 0), ("probe2", -1)):
            response = describe(client, ["probe2", "aaa"], cursor=cursor)
            assert [(t.name, t.error_code, t.partitions, t.topic_authorized_operations) for t in response.topics] == [
                ("probe2", ErrorCode.INVALID_REQUEST, [], -2147483648),
                ("aaa", ErrorCode.INVALID_REQUEST, [], -2147483648)]  # request order, no operations
            assert response.next_cursor is None
        # as Kafka's, an empty topic name fails the whole request with UNKNOWN_SERVER_ERROR
        empty = describe(client, ["probe2", ""])
        assert [(t.name, t.error_code) for t in empty.topics] == [("probe2", -1), ("", -1)]

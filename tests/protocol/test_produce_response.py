"""The hand-written Produce response encoder writes exactly what kafka-python's generic ProduceResponse[v] writes,
for every version the broker serves (and v13), and kafka-python's decoder reads back the fields we set."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.api_keys import ADVERTISED_ONLY, SUPPORTED_VERSIONS, ApiKey
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.messages import encode_response, response_class
from minikafka.protocol.produce_response import (
    MAX_VERSION,
    MIN_VERSION,
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)

SERVED = range(ADVERTISED_ONLY[ApiKey.PRODUCE][1] + 1, SUPPORTED_VERSIONS[ApiKey.PRODUCE][1] + 1)
VERSIONS = range(MIN_VERSION, MAX_VERSION + 1)
TOPIC_ID = uuid.UUID("3f2b6c1e-8d4a-4f0e-9b57-2c1d0e6a7f11")


def generic(response: ProduceResponse) -> Any:
    """The same response as kafka-python's generic message object."""
    cls = response_class(ApiKey.PRODUCE, response.version)
    topic_cls = cls.TopicProduceResponse
    partition_cls = topic_cls.PartitionProduceResponse
    topics = []
    for topic in response.responses:
        naming = {"topic_id": topic.topic_id} if response.version >= 13 else {"name": topic.name}
        partitions = []
        for p in topic.partition_responses:
            fields: dict[str, Any] = {
                "index": p.index, "error_code": p.error_code, "base_offset": p.base_offset,
                "log_append_time_ms": p.log_append_time_ms, "log_start_offset": p.log_start_offset,
                "record_errors": [partition_cls.BatchIndexAndErrorMessage(
                    batch_index=e.batch_index, batch_index_error_message=e.batch_index_error_message)
                    for e in p.record_errors],
                "error_message": p.error_message,
            }
            if p.current_leader is not None:
                fields["current_leader"] = partition_cls.LeaderIdAndEpoch(
                    leader_id=p.current_leader.leader_id, leader_epoch=p.current_leader.leader_epoch)
            partitions.append(partition_cls(**fields))
        topics.append(topic_cls(partition_responses=partitions, **naming))
    extra: dict[str, Any] = {}
    if response.version >= 10:
        extra["node_endpoints"] = [cls.NodeEndpoint(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
                                   for n in response.node_endpoints]
    return cls(responses=topics, throttle_time_ms=response.throttle_time_ms, **extra)


def expected_fields(response: ProduceResponse) -> dict[str, Any]:
    """What kafka-python's decoder should read back: the fields of `response` that its version carries."""
    version = response.version
    topics = []
    for topic in response.responses:
        partitions = []
        for p in topic.partition_responses:
            fields: dict[str, Any] = {"index": p.index, "error_code": p.error_code, "base_offset": p.base_offset,
                                      "log_append_time_ms": p.log_append_time_ms}
            if version >= 5:
                fields["log_start_offset"] = p.log_start_offset
            if version >= 8:
                fields["record_errors"] = [{"batch_index": e.batch_index,
                                            "batch_index_error_message": e.batch_index_error_message}
                                           for e in p.record_errors]
                fields["error_message"] = p.error_message
            if version >= 10 and p.current_leader is not None:
                fields["current_leader"] = p.current_leader._asdict()
            partitions.append(fields)
        naming: dict[str, Any]
        if version >= 13:
            null_id = topic.topic_id in (None, uuid.UUID(int=0))
            naming = {"topic_id": None if null_id else str(topic.topic_id)}  # to_dict writes a UUID as text
        else:
            naming = {"name": topic.name}
        topics.append({**naming, "partition_responses": partitions})
    top: dict[str, Any] = {"responses": topics, "throttle_time_ms": response.throttle_time_ms}
    if version >= 10 and response.node_endpoints:
        top["node_endpoints"] = [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
                                 for n in response.node_endpoints]
    return top


def decoded_fields(frame: bytes, version: int) -> dict[str, Any]:
    header_bytes = 9 if version >= 9 else 8  # size, correlation id (and the v1 header's tagged fields)
    decoded = response_class(ApiKey.PRODUCE, version).decode(frame[header_bytes:]).to_dict()
    for topic in decoded["responses"]:
        for partition in topic["partition_responses"]:
            if partition.get("current_leader", 0) is None:  # absent tagged field
                del partition["current_leader"]
    if not decoded.get("node_endpoints", True):
        del decoded["node_endpoints"]
    return decoded


def assert_same_bytes(response: ProduceResponse, correlation_id: int = 17) -> bytes:
    expected = encode_response(generic(response), correlation_id)
    frame = response.to_bytes(correlation_id)
    assert frame == expected
    assert encode_response(response, correlation_id) == expected
    assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4
    assert int.from_bytes(frame[4:8], "big", signed=True) == correlation_id
    assert decoded_fields(frame, response.version) == expected_fields(response)
    return frame


def several_topics(version: int) -> ProduceResponse:
    """Successes, append-time timestamps, errors with and without messages, record errors, an empty topic."""
    return ProduceResponse(version, throttle_time_ms=0, responses=[
        TopicProduceResponse("orders", [
            PartitionProduceResponse(0, 0, 1_000, -1, 0),
            PartitionProduceResponse(1, 0, 42, 1_700_000_000_123, 7),  # LogAppendTime topic
            PartitionProduceResponse(2, 87, -1, -1, 0, [  # INVALID_RECORD
                BatchIndexAndErrorMessage(0, "Compacted topic cannot accept message without key."),
                BatchIndexAndErrorMessage(3, None),
                BatchIndexAndErrorMessage(9, "timestamp out of range ü"),
            ], "One or more records have been rejected"),
            PartitionProduceResponse(3, 3),  # UNKNOWN_TOPIC_OR_PARTITION, nothing else
        ], TOPIC_ID),
        TopicProduceResponse("payments-ü", [
            PartitionProduceResponse(0, 48, -1, -1, 12, error_message="fenced"),  # INVALID_PRODUCER_EPOCH
            PartitionProduceResponse(2_147_483_647, 0, 2**63 - 1, 2**63 - 1, 2**63 - 1),
        ], uuid.UUID(int=7)),
        TopicProduceResponse("empty", [], uuid.UUID(int=8)),
    ])


def test_the_encoder_covers_every_served_version() -> None:
    assert ADVERTISED_ONLY[ApiKey.PRODUCE][1] + 1 == MIN_VERSION  # v0-2 are refused before any handler runs
    assert SUPPORTED_VERSIONS[ApiKey.PRODUCE][1] <= MAX_VERSION
    for version in (MIN_VERSION - 1, MAX_VERSION + 1):
        with pytest.raises(ValueError):
            ProduceResponse(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_responses(version: int) -> None:
    assert_same_bytes(ProduceResponse(version))
    assert_same_bytes(ProduceResponse(version, [TopicProduceResponse("t", [], TOPIC_ID)], throttle_time_ms=1_500))
    assert_same_bytes(ProduceResponse(version, [TopicProduceResponse("", [])]))  # v13: the null topic id


@pytest.mark.parametrize("version", VERSIONS)
def test_several_topics_and_partitions_with_errors(version: int) -> None:
    assert_same_bytes(several_topics(version), correlation_id=2_000_000_000)
    assert_same_bytes(several_topics(version), correlation_id=-5)


@pytest.mark.parametrize("version", VERSIONS)
def test_leader_hints_are_written_only_where_the_version_has_them(version: int) -> None:
    response = ProduceResponse(version, [TopicProduceResponse("t", [
        PartitionProduceResponse(0, 6, current_leader=LeaderIdAndEpoch(1, 5)),  # NOT_LEADER_OR_FOLLOWER
        PartitionProduceResponse(1, 6, current_leader=LeaderIdAndEpoch()),  # set, though to the defaults
        PartitionProduceResponse(2, 0, 10, -1, 0),
    ], TOPIC_ID)], node_endpoints=[NodeEndpoint(1, "broker-1.example", 9092, "rack-a"),
                                   NodeEndpoint(2, "b2", 19092, None)])
    frame = assert_same_bytes(response)
    without = ProduceResponse(version, [TopicProduceResponse("t", [
        PartitionProduceResponse(0, 6), PartitionProduceResponse(1, 6), PartitionProduceResponse(2, 0, 10, -1, 0),
    ], TOPIC_ID)])
    assert (frame == without.to_bytes(17)) == (version < 10)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 9])
def test_lengths_over_one_varint_byte(version: int) -> None:
    """Compact lengths of 128+ (two varint bytes): many partitions and record errors, long names and messages."""
    response = ProduceResponse(version, [TopicProduceResponse("x" * 300, [
        PartitionProduceResponse(index, 87, -1, -1, 0, [BatchIndexAndErrorMessage(i, "m" * i) for i in range(130)],
                                 "e" * 200, LeaderIdAndEpoch(0, index))
        for index in range(130)], TOPIC_ID)],
        node_endpoints=[NodeEndpoint(n, "h" * 150, 9092, None) for n in range(3)])
    assert_same_bytes(response)


@pytest.mark.parametrize("version", SERVED)
def test_the_connection_encodes_it_and_a_throttle_re_encodes_it(version: int) -> None:
    """As the dispatcher does: encode the frame; the quota path then sets throttle_time_ms and encodes again."""
    response = several_topics(version)
    event = RequestReceived(ApiKey.PRODUCE, version, 99, "c", object(), 0)
    assert ServerConnection.encode_response_frame(event, response) == encode_response(generic(response), 99)
    response.throttle_time_ms = 2_345
    throttled = ServerConnection.encode_response(event, response)
    assert throttled == encode_response(generic(response), 99)
    assert decoded_fields(throttled, version)["throttle_time_ms"] == 2_345


_text = st.text(max_size=20)
_partitions = st.builds(
    PartitionProduceResponse,
    index=st.integers(0, 2**31 - 1),
    error_code=st.integers(-1, 120),
    base_offset=st.integers(-1, 2**63 - 1),
    log_append_time_ms=st.integers(-1, 2**63 - 1),
    log_start_offset=st.integers(-1, 2**63 - 1),
    record_errors=st.lists(st.builds(BatchIndexAndErrorMessage, st.integers(0, 2**31 - 1), st.none() | _text),
                           max_size=3),
    error_message=st.none() | _text,
    current_leader=st.none() | st.builds(LeaderIdAndEpoch, st.integers(-1, 2**31 - 1), st.integers(-1, 2**31 - 1)),
)
_topics = st.builds(TopicProduceResponse, name=_text, partition_responses=st.lists(_partitions, max_size=4),
                    topic_id=st.uuids())
_nodes = st.builds(NodeEndpoint, node_id=st.integers(0, 2**31 - 1), host=_text, port=st.integers(0, 65535),
                   rack=st.none() | _text)


@settings(max_examples=200, deadline=None)
@given(version=st.sampled_from(list(VERSIONS)), responses=st.lists(_topics, max_size=3),
       throttle_time_ms=st.integers(0, 2**31 - 1), node_endpoints=st.lists(_nodes, max_size=2),
       correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_any_response_encodes_as_kafka_python_does(version: int, responses: list[TopicProduceResponse],
                                                    throttle_time_ms: int, node_endpoints: list[NodeEndpoint],
                                                    correlation_id: int) -> None:
    assert_same_bytes(ProduceResponse(version, responses, throttle_time_ms, node_endpoints), correlation_id)

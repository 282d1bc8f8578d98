"""The hand-written Fetch response encoder writes exactly what kafka-python's generic FetchResponse[v] writes, for
every version the broker serves, and shares (never copies) large record buffers."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.fetch import FetchResponse as GenericFetchResponse

from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.fetch_response import (
    COALESCE_BYTES,
    MAX_VERSION,
    MIN_VERSION,
    AbortedTransaction,
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from minikafka.protocol.messages import encode_response
from minikafka.protocol.records import Record, build_batch
from minikafka.protocol.response_frame import BufferedFrame

VERSIONS = range(SUPPORTED_VERSIONS[ApiKey.FETCH][0], SUPPORTED_VERSIONS[ApiKey.FETCH][1] + 1)


def generic(response: FetchResponse) -> Any:
    """The same response as kafka-python's generic message object."""
    cls = GenericFetchResponse[response.version]
    topic_cls = cls.FetchableTopicResponse
    partition_cls = topic_cls.PartitionData
    aborted_cls = partition_cls.AbortedTransaction
    topics = []
    for topic in response.responses:
        naming = {"topic_id": topic.topic_id} if response.version >= 13 else {"topic": topic.topic}
        partitions = [
            partition_cls(
                partition_index=p.partition_index, error_code=p.error_code, high_watermark=p.high_watermark,
                last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
                aborted_transactions=None if p.aborted_transactions is None else [
                    aborted_cls(producer_id=t.producer_id, first_offset=t.first_offset)
                    for t in p.aborted_transactions],
                preferred_read_replica=p.preferred_read_replica,
                records=None if p.records is None else bytes(p.records),
            )
            for p in topic.partitions
        ]
        topics.append(topic_cls(partitions=partitions, **naming))
    return cls(throttle_time_ms=response.throttle_time_ms, error_code=response.error_code,
               session_id=response.session_id, responses=topics)


def assert_same_bytes(response: FetchResponse, correlation_id: int = 17) -> BufferedFrame:
    expected = encode_response(generic(response), correlation_id)
    frame = response.encode_frame(correlation_id)
    assert b"".join(frame.buffers) == expected
    assert len(frame) == len(expected)
    assert response.to_bytes(correlation_id) == expected
    return frame


def batch(count: int, value_bytes: int, base_offset: int = 0) -> bytes:
    return build_batch([Record(index, 1_700_000_000_000, b"k", b"v" * value_bytes) for index in range(count)],
                       base_offset=base_offset)


def test_the_encoder_covers_every_served_version() -> None:
    assert SUPPORTED_VERSIONS[ApiKey.FETCH] == (MIN_VERSION, MAX_VERSION)
    with pytest.raises(ValueError):
        FetchResponse(MAX_VERSION + 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_and_session_error_responses(version: int) -> None:
    assert_same_bytes(FetchResponse(version))
    assert_same_bytes(FetchResponse(version, throttle_time_ms=250, error_code=71))  # INVALID_FETCH_SESSION_EPOCH


@pytest.mark.parametrize("version", VERSIONS)
def test_partitions_with_records_errors_and_aborted_transactions(version: int) -> None:
    small = batch(3, 10)
    large = memoryview(batch(40, 1000, base_offset=3) + b"partial batch tail")[: len(batch(40, 1000, base_offset=3))]
    assert len(large) >= COALESCE_BYTES
    topic_id = uuid.UUID("7b8a3cfd-2f61-4a0c-a8e1-93e1d4a46f0b")
    response = FetchResponse(version, throttle_time_ms=0, error_code=0, session_id=123456, responses=[
        FetchableTopicResponse(topic="orders-ü", topic_id=topic_id, partitions=[
            PartitionData(0, 0, 43, 43, 0, None, -1, large),
            PartitionData(1, 0, 3, 1, 0, [AbortedTransaction(7, 0), AbortedTransaction(9, 2)], -1, small),
            PartitionData(2, 1, -1, -1, -1, None, -1, b""),  # OFFSET_OUT_OF_RANGE
            PartitionData(3, 0, 0, 0, 0, [], -1, b""),  # read_committed, nothing aborted
        ]),
        FetchableTopicResponse(topic="t2", topic_id=uuid.UUID(int=1), partitions=[
            PartitionData(0, 0, 40, 40, 0, None, -1, large),
            PartitionData(5, 3, -1, -1, -1, None, -1, None),  # null records
        ]),
        FetchableTopicResponse(topic="empty", topic_id=uuid.UUID(int=2), partitions=[]),
    ])
    frame = assert_same_bytes(response, correlation_id=2_000_000_000)
    assert sum(1 for buffer in frame.buffers if buffer is large) == 2  # shared with the read, not copied
    assert all(len(buffer) < COALESCE_BYTES for buffer in frame.buffers if buffer is not large)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 12])
def test_lengths_over_one_varint_byte(version: int) -> None:
    """Compact lengths of 128+ (two varint bytes): many partitions, many aborted transactions, a long name."""
    response = FetchResponse(version, session_id=1, responses=[FetchableTopicResponse(
        topic="x" * 300, topic_id=uuid.uuid4(),
        partitions=[PartitionData(index, 0, 10, 10, 0, [AbortedTransaction(i, i) for i in range(130)], -1, b"r" * 200)
                    for index in range(130)])])
    assert_same_bytes(response)


def test_the_connection_writes_a_fetch_response_as_buffers() -> None:
    records = batch(40, 1000)
    response = FetchResponse(16, session_id=5, responses=[FetchableTopicResponse(
        topic_id=uuid.uuid4(), partitions=[PartitionData(0, 0, 40, 40, 0, None, -1, records)])])
    event = RequestReceived(ApiKey.FETCH, 16, 99, "c", object(), 0)
    frame = ServerConnection.encode_response_frame(event, response)
    assert isinstance(frame, BufferedFrame) and any(buffer is records for buffer in frame.buffers)
    assert bytes(frame) == ServerConnection.encode_response(event, response) == encode_response(generic(response), 99)


_names = st.text(min_size=0, max_size=20)
_partitions = st.builds(
    PartitionData,
    partition_index=st.integers(0, 2**31 - 1),
    error_code=st.integers(-1, 120),
    high_watermark=st.integers(-1, 2**63 - 1),
    last_stable_offset=st.integers(-1, 2**63 - 1),
    log_start_offset=st.integers(-1, 2**63 - 1),
    aborted_transactions=st.none() | st.lists(st.builds(AbortedTransaction, st.integers(-1, 2**63 - 1),
                                                        st.integers(0, 2**63 - 1)), max_size=3),
    preferred_read_replica=st.integers(-1, 5),
    records=st.none() | st.binary(max_size=64) | st.binary(min_size=COALESCE_BYTES, max_size=COALESCE_BYTES + 3),
)
_topics = st.builds(FetchableTopicResponse, topic=_names, topic_id=st.uuids(),
                    partitions=st.lists(_partitions, max_size=4))


@settings(max_examples=150, deadline=None)
@given(version=st.sampled_from(list(VERSIONS)), throttle_time_ms=st.integers(0, 2**31 - 1),
       error_code=st.integers(-1, 120), session_id=st.integers(0, 2**31 - 1),
       responses=st.lists(_topics, max_size=3), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_any_response_encodes_as_kafka_python_does(version: int, throttle_time_ms: int, error_code: int,
                                                    session_id: int, responses: list[FetchableTopicResponse],
                                                    correlation_id: int) -> None:
    assert_same_bytes(FetchResponse(version, throttle_time_ms, error_code, session_id, responses), correlation_id)

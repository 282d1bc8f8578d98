"""ServerConnection: framing, header parsing, version rules, and the decoder invariant under fuzzing."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import CONNECTION_CLOSED, NEED_DATA, RequestReceived, ServerConnection
from minikafka.protocol.errors import ProtocolError


def frame(request: object, correlation_id: int = 7, client_id: str = "test") -> bytes:
    request.with_header(correlation_id=correlation_id, client_id=client_id)  # type: ignore[attr-defined]
    return bytes(request.encode(header=True, framed=True))  # type: ignore[attr-defined]


def metadata_v12() -> bytes:
    return frame(MetadataRequest[12](topics=None, allow_auto_topic_creation=True,
                                     include_topic_authorized_operations=False))


def produce_v9(records: bytes = b"\x00" * 70) -> bytes:
    topic = ProduceRequest.TopicProduceData
    request = ProduceRequest[9](
        transactional_id=None, acks=-1, timeout_ms=1000,
        topic_data=[topic(name="t", partition_data=[topic.PartitionProduceData(index=0, records=records)])],
    )
    return frame(request, correlation_id=8)


def test_whole_frame_decodes() -> None:
    connection = ServerConnection()
    connection.receive_data(metadata_v12())
    event = connection.next_event()
    assert isinstance(event, RequestReceived)
    assert (event.api_key, event.api_version, event.correlation_id, event.client_id) == (ApiKey.METADATA, 12, 7, "test")
    assert event.request.topics is None
    assert connection.next_event() is NEED_DATA


def test_byte_at_a_time_gives_need_data_until_the_last_byte() -> None:
    data = produce_v9()
    connection = ServerConnection()
    for index in range(len(data) - 1):
        connection.receive_data(data[index : index + 1])
        assert connection.next_event() is NEED_DATA
    connection.receive_data(data[-1:])
    event = connection.next_event()
    assert isinstance(event, RequestReceived)
    assert event.request.topic_data[0].partition_data[0].records == b"\x00" * 70


def test_trailing_bytes_stay_buffered_for_the_next_request() -> None:
    connection = ServerConnection()
    first, second = metadata_v12(), produce_v9()
    connection.receive_data(first + second[:5])
    assert isinstance(connection.next_event(), RequestReceived)
    assert connection.next_event() is NEED_DATA
    assert connection.buffered_bytes == 5
    connection.receive_data(second[5:])
    event = connection.next_event()
    assert isinstance(event, RequestReceived) and event.api_key is ApiKey.PRODUCE


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1200), max_size=12))
def test_frames_cut_anywhere_across_reads_decode_in_order(cut_points: list[int]) -> None:
    """Reads are kept as delivered and joined only when a frame completes: any way of cutting a stream of frames
    into reads (size prefixes included) gives the same requests, in order, with the same record bytes."""
    records = [bytes([index]) * (70 + index * 300) for index in range(3)]
    stream = metadata_v12() + b"".join(produce_v9(batch) for batch in records) + metadata_v12()
    cuts = sorted({point % len(stream) for point in cut_points} | {0, len(stream)})
    connection = ServerConnection()
    events = []
    for begin, end in itertools.pairwise(cuts):
        connection.receive_data(stream[begin:end])
        while (event := connection.next_event()) is not NEED_DATA:
            assert isinstance(event, RequestReceived)
            events.append(event)
    assert [event.api_key for event in events] == [ApiKey.METADATA, *[ApiKey.PRODUCE] * 3, ApiKey.METADATA]
    assert [event.request.topic_data[0].partition_data[0].records for event in events[1:4]] == records
    assert connection.buffered_bytes == 0


def test_eof_between_frames_is_a_clean_close_and_mid_frame_is_an_error() -> None:
    connection = ServerConnection()
    connection.receive_data(b"")
    assert connection.next_event() is CONNECTION_CLOSED
    torn = ServerConnection()
    torn.receive_data(metadata_v12()[:6])
    torn.receive_data(b"")
    with pytest.raises(ProtocolError):
        torn.next_event()


def test_frame_larger_than_socket_request_max_bytes_is_refused_before_buffering_it() -> None:
    connection = ServerConnection(max_request_bytes=1000)
    connection.receive_data(struct.pack(">i", 1001))
    with pytest.raises(ProtocolError, match=r"socket\.request\.max\.bytes"):
        connection.next_event()


def test_unknown_api_key_and_unsupported_versions_close_the_connection() -> None:
    for api_key, version in ((999, 0), (int(ApiKey.METADATA), 13), (int(ApiKey.PRODUCE), 2)):
        connection = ServerConnection()
        body = struct.pack(">hhih", api_key, version, 1, -1)
        connection.receive_data(struct.pack(">i", len(body)) + body)
        with pytest.raises(ProtocolError):
            connection.next_event()


def test_too_new_api_versions_is_an_event_without_a_body() -> None:
    connection = ServerConnection()
    body = struct.pack(">hhih", int(ApiKey.API_VERSIONS), 99, 5, -1) + b"garbage"
    connection.receive_data(struct.pack(">i", len(body)) + body)
    event = connection.next_event()
    assert isinstance(event, RequestReceived)
    assert event.unsupported_version and event.correlation_id == 5


def test_api_versions_v3_request_decodes_with_tagged_header() -> None:
    connection = ServerConnection()
    connection.receive_data(frame(ApiVersionsRequest[3](client_software_name="kcat", client_software_version="1.7")))
    event = connection.next_event()
    assert isinstance(event, RequestReceived)
    assert event.request.client_software_name == "kcat"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=17))
def test_fuzz_decoder_returns_events_need_data_or_protocol_error(data: bytes, chunk: int) -> None:
    """For any bytes, the decoder yields events, NEED_DATA or CONNECTION_CLOSED, or raises ProtocolError."""
    connection = ServerConnection(max_request_bytes=10_000)
    try:
        for start in range(0, len(data), chunk):
            connection.receive_data(data[start : start + chunk])
            while (event := connection.next_event()) is not NEED_DATA:
                assert isinstance(event, RequestReceived)
        connection.receive_data(b"")
        while (event := connection.next_event()) is not CONNECTION_CLOSED:
            assert isinstance(event, RequestReceived)
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=20), st.binary(max_size=40))
def test_fuzz_valid_header_with_garbage_body(api_key_index: int, body: bytes) -> None:
    api_key = list(ApiKey)[api_key_index % len(ApiKey)]
    header = struct.pack(">hhih", int(api_key), 3, 1, 2) + b"id"
    payload = header + body
    connection = ServerConnection()
    connection.receive_data(struct.pack(">i", len(payload)) + payload)
    try:
        event = connection.next_event()
        assert isinstance(event, RequestReceived)
    except ProtocolError:
        pass

"""Pipelined requests over one real socket: every request is answered, in request order, whatever the reads look
like (many frames in one read, a large frame over hundreds of reads, reading paused and resumed in between), and
a response queued before a request that waits is sent without waiting for it."""

from __future__ import annotations

import struct
import time

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from tests.broker.test_fetch_wire import create_topic
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def framed(request: object, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="pipelined")  # type: ignore[attr-defined]
    return bytes(request.encode(header=True, framed=True))  # type: ignore[attr-defined]


def metadata(correlation_id: int) -> bytes:
    return framed(MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False), correlation_id)


def large_produce(correlation_id: int, records_bytes: int) -> bytes:
    topic = ProduceRequest.TopicProduceData
    request = ProduceRequest[9](transactional_id=None, acks=1, timeout_ms=1000, topic_data=[topic(
        name="no-such-topic", partition_data=[topic.PartitionProduceData(index=0, records=b"\x00" * records_bytes)])])
    return framed(request, correlation_id)


def test_pipelined_requests_are_answered_in_order(broker: BrokerProcess) -> None:
    small_before = b"".join(metadata(correlation_id) for correlation_id in range(1, 201))
    large = large_produce(201, 700 * 1024)  # several times the connection's read-pause limit
    small_after = b"".join(metadata(correlation_id) for correlation_id in range(202, 252))
    with WireClient(broker.bootstrap) as client:
        client.send_bytes(small_before)
        for begin in range(0, len(large), 1000):
            client.send_bytes(large[begin : begin + 1000])
        client.send_bytes(small_after)
        correlation_ids = [struct.unpack_from(">i", client.read_frame())[0] for _ in range(251)]
        assert correlation_ids == list(range(1, 252))
        assert client.request(MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=False)).brokers


def long_poll_fetch(topic: str, correlation_id: int, max_wait_ms: int) -> bytes:
    partition = FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                       last_fetched_epoch=-1, log_start_offset=-1,
                                                       partition_max_bytes=1_000_000)
    return framed(FetchRequest[12](replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1_000_000,
                                   isolation_level=0, session_id=0, session_epoch=-1,
                                   topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
                                   forgotten_topics_data=[], rack_id=""), correlation_id)


def test_a_response_is_not_held_back_by_the_pipelined_request_after_it(broker: BrokerProcess) -> None:
    """Responses of one read leave together once the connection's task yields; a Fetch that waits for data yields,
    so the Metadata response before it must arrive long before the Fetch's max wait is over."""
    max_wait_ms = 3_000
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "empty")
        sent_s = time.monotonic()
        client.send_bytes(metadata(1) + long_poll_fetch("empty", 2, max_wait_ms))
        assert struct.unpack_from(">i", client.read_frame())[0] == 1
        metadata_after_s = time.monotonic() - sent_s
        assert struct.unpack_from(">i", client.read_frame())[0] == 2
        fetch_after_s = time.monotonic() - sent_s
    assert fetch_after_s >= max_wait_ms / 1000 * 0.9, "the Fetch did not wait: the test proves nothing"
    assert metadata_after_s < 1.0, f"the Metadata response waited {metadata_after_s:.2f} s for the Fetch"

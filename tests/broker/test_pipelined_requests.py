"""Pipelined requests over one real socket: every request is answered, in request order, whatever the reads look
like (many frames in one read, a large frame over hundreds of reads, reading paused and resumed in between)."""

from __future__ import annotations

import struct

from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

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

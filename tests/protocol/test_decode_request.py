"""decode_request: its cached compiled decoders give what kafka-python's generic `decode` gives, for every version,
and bad bytes still raise ProtocolError."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from minikafka.protocol.errors import ProtocolError
from minikafka.protocol.messages import REQUEST_CLASSES, decode_request


def produce(version: int, transactional_id: str | None) -> object:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest[version](
        transactional_id=transactional_id, acks=-1, timeout_ms=1500,
        topic_data=[data(name=name, partition_data=[data.PartitionProduceData(index=index, records=b"r%d" % index * 40)
                                                    for index in range(3)])
                    for name in ("a", "topic-b")])


@pytest.mark.parametrize("version", range(3, SUPPORTED_VERSIONS[ApiKey.PRODUCE][1] + 1))
@pytest.mark.parametrize("transactional_id", [None, "txn-1"])
def test_produce_request_decodes_as_the_generic_decoder(version: int, transactional_id: str | None) -> None:
    request = produce(version, transactional_id)
    body = memoryview(bytes(request.encode()))  # type: ignore[attr-defined]
    decoded = decode_request(ApiKey.PRODUCE, version, body)
    assert decoded == REQUEST_CLASSES[ApiKey.PRODUCE].decode(body, version=version)
    assert decoded == request
    assert decoded.topic_data[1].partition_data[2].records == b"r2" * 40
    assert decode_request(ApiKey.PRODUCE, version, body) == decoded  # the cached decoder, again


@pytest.mark.parametrize("version", range(0, 13))
def test_metadata_request_decodes_as_the_generic_decoder(version: int) -> None:
    fields: dict[str, object] = {"topics": [MetadataRequest.MetadataRequestTopic(name="t")]}
    if version >= 4:
        fields["allow_auto_topic_creation"] = False
    if 8 <= version <= 10:
        fields["include_cluster_authorized_operations"] = False
    if version >= 8:
        fields["include_topic_authorized_operations"] = True
    request = MetadataRequest[version](**fields)
    body = memoryview(bytes(request.encode()))
    assert decode_request(ApiKey.METADATA, version, body) == REQUEST_CLASSES[ApiKey.METADATA].decode(
        body, version=version)


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_a_truncated_body_is_a_protocol_error(cut: int) -> None:
    body = bytes(produce(12, None).encode())  # type: ignore[attr-defined]
    with pytest.raises(ProtocolError):
        decode_request(ApiKey.PRODUCE, 12, memoryview(body[:-cut]))


def test_a_version_beyond_the_classes_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_request(ApiKey.PRODUCE, 99, memoryview(b"\x00" * 10))


@pytest.mark.parametrize("version", range(3, SUPPORTED_VERSIONS[ApiKey.PRODUCE][1] + 1))
def test_produce_records_are_views_of_the_body_not_copies(version: int) -> None:
    body = memoryview(bytes(produce(version, None).encode()))  # type: ignore[attr-defined]
    records = decode_request(ApiKey.PRODUCE, version, body).topic_data[0].partition_data[1].records
    assert isinstance(records, memoryview) and records.obj is body.obj
    assert bytes(records) == b"r1" * 40


def test_produce_with_tagged_fields_decodes_as_the_generic_decoder() -> None:
    """No client sends them, but a tagged field on a partition is kept as kafka-python keeps it."""
    request = ProduceRequest[12](transactional_id=None, acks=1, timeout_ms=1500, topic_data=[
        ProduceRequest.TopicProduceData(name="a", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=b"abc")])])
    encoded = bytes(request.encode())  # type: ignore[attr-defined]
    # the partition's empty tagged fields (the 0 after its records) become one unknown tag 5 of one byte
    at = encoded.index(b"abc") + 3
    assert encoded[at] == 0
    body = memoryview(encoded[:at] + b"\x01\x05\x01\x07" + encoded[at + 1:])
    decoded = decode_request(ApiKey.PRODUCE, 12, body)
    assert decoded == REQUEST_CLASSES[ApiKey.PRODUCE].decode(body, version=12)
    assert decoded.topic_data[0].partition_data[0].unknown_tags


@pytest.mark.parametrize("version", [8, 12])
def test_a_records_field_longer_than_the_body_is_a_protocol_error(version: int) -> None:
    encoded = bytes(produce(version, None).encode())  # type: ignore[attr-defined]
    last_records = encoded.rindex(b"r2" * 40)
    with pytest.raises(ProtocolError):
        decode_request(ApiKey.PRODUCE, version, memoryview(encoded[:last_records + 10]))

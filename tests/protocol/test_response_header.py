"""`encode_response` writes the response header by hand (kafka-python's is slow): the frame is byte for byte what
kafka-python's `with_header` + `encode(header=True, framed=True)` writes, for every API and version served."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.messages import RESPONSE_CLASSES, encode_response

CASES = [(key, version) for key, cls in RESPONSE_CLASSES.items()
         for version in range(cls.min_version, cls.max_version + 1)]


def generic_frame(response: Any, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=[f"{key.name}-v{version}" for key, version in CASES])
def test_every_response_frame_matches_kafka_python(api_key: ApiKey, version: int) -> None:
    response = RESPONSE_CLASSES[api_key][version]()
    for correlation_id in (0, 7, -1, 2**31 - 1):
        assert encode_response(response, correlation_id) == generic_frame(response, correlation_id)


def test_a_response_with_content() -> None:
    cls = RESPONSE_CLASSES[ApiKey.LIST_OFFSETS][7]
    topic = cls.ListOffsetsTopicResponse
    partition = topic.ListOffsetsPartitionResponse
    response = cls(throttle_time_ms=3, topics=[topic(name="t", partitions=[
        partition(partition_index=0, error_code=0, timestamp=-1, offset=5, leader_epoch=0)])])
    assert encode_response(response, 11) == generic_frame(response, 11)

"""A handler that fails unexpectedly is answered with the API's error response (issue 28, item 5).

Kafka's AbstractRequest.getErrorResponse: UNKNOWN_SERVER_ERROR on every partition or resource the request named,
and the connection stays open; only an acks=0 Produce, which has no response to carry the error, closes it. The
broker runs in this process so that a handler can be made to fail (its table entry raises); everything else is the
real broker over a real socket.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.broker import dispatcher
from minikafka.broker.error_responses import error_response
from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from minikafka.protocol.error_codes import ErrorCode
from minikafka.protocol.messages import REQUEST_CLASSES, encode_response
from minikafka.testing.mini_kafka import free_port
from tests.broker.test_fetch_wire import batch_of
from tests.in_process_broker import InProcessBroker
from tests.wire_client import WireClient

UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)
PROPS = {"log.cleaner.enable": "false", "minikafka.metrics.port": "-1", "offsets.topic.num.partitions": "1"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    started = InProcessBroker(Path(tmp_path_factory.mktemp("handler-failures")), free_port(), PROPS).start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def failing(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[ApiKey]]:
    """Handlers of the API keys added to the set raise RuntimeError."""
    keys: set[ApiKey] = set()
    for api_key, handler in dispatcher.HANDLERS.items():
        async def maybe_fail(ctx: object, event: object, session: object, api_key: ApiKey = api_key,
                             handler: dispatcher.Handler = handler) -> object:
            if api_key in keys:
                raise RuntimeError(f"a bug in the {api_key.name} handler")
            return await handler(ctx, event, session)  # type: ignore[arg-type]
        monkeypatch.setitem(dispatcher.HANDLERS, api_key, maybe_fail)
    return keys


def metadata_works(client: WireClient) -> bool:
    response = client.request(MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=False))
    return bool(response.brokers)


def produce_request(acks: int, partitions: list[int], version: int = 9) -> ProduceRequest:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest[version](transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[data(
        name="t", partition_data=[data.PartitionProduceData(index=p, records=batch_of(1)) for p in partitions])])


def test_a_failed_list_offsets_answers_every_partition_and_keeps_the_connection(
        broker: InProcessBroker, failing: set[ApiKey]) -> None:
    failing.add(ApiKey.LIST_OFFSETS)
    topic = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest[7](replica_id=-1, isolation_level=0, topics=[
        topic(name=name, partitions=[topic.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1,
                                                                timestamp=-1) for p in (0, 2)])
        for name in ("a", "b")])
    with WireClient(broker.bootstrap) as client:
        response = client.request(request)
        answered = [(t.name, p.partition_index, p.error_code, p.offset) for t in response.topics for p in t.partitions]
        assert answered == [("a", 0, UNKNOWN_SERVER_ERROR, -1), ("a", 2, UNKNOWN_SERVER_ERROR, -1),
                            ("b", 0, UNKNOWN_SERVER_ERROR, -1), ("b", 2, UNKNOWN_SERVER_ERROR, -1)]
        assert metadata_works(client)


def test_a_failed_describe_configs_answers_every_resource(broker: InProcessBroker, failing: set[ApiKey]) -> None:
    failing.add(ApiKey.DESCRIBE_CONFIGS)
    resource = DescribeConfigsRequest.DescribeConfigsResource
    resources = [resource(resource_type=2, resource_name="t", configuration_keys=None),
                 resource(resource_type=4, resource_name="1", configuration_keys=None)]
    request = DescribeConfigsRequest[4](resources=resources, include_synonyms=False, include_documentation=False)
    with WireClient(broker.bootstrap) as client:
        results = client.request(request).results
        assert [(r.resource_type, r.resource_name, r.error_code, list(r.configs)) for r in results] == [
            (2, "t", UNKNOWN_SERVER_ERROR, []), (4, "1", UNKNOWN_SERVER_ERROR, [])]
        assert metadata_works(client)


def test_a_failed_produce_answers_every_partition_unless_acks_is_0(broker: InProcessBroker,
                                                                    failing: set[ApiKey]) -> None:
    failing.add(ApiKey.PRODUCE)
    with WireClient(broker.bootstrap) as client:
        response = client.request(produce_request(1, [0, 1]))
        assert [(p.index, p.error_code, p.base_offset) for p in response.responses[0].partition_responses] == [
            (0, UNKNOWN_SERVER_ERROR, -1), (1, UNKNOWN_SERVER_ERROR, -1)]
        assert metadata_works(client)
    with WireClient(broker.bootstrap) as client:
        request = produce_request(0, [0])
        request.with_header(correlation_id=1, client_id="acks-0")
        client.send_bytes(bytes(request.encode(header=True, framed=True)))
        assert client.is_closed_by_peer(), "an acks=0 produce that failed must close the connection"


@pytest.mark.parametrize("version", [10, 12])
def test_a_failed_produce_from_v10_answers_every_partition_beside_the_tagged_node_endpoints(
        broker: InProcessBroker, failing: set[ApiKey], version: int) -> None:
    """From v10 the response has two arrays (`responses`, the tagged `node_endpoints` of KIP-951): the partitions
    are still every one of the request's (they were left out, which librdkafka reads as a malformed response)."""
    failing.add(ApiKey.PRODUCE)
    with WireClient(broker.bootstrap) as client:
        response = client.request(produce_request(1, [0, 1], version))
        assert [(p.index, p.error_code) for p in response.responses[0].partition_responses] == [
            (0, UNKNOWN_SERVER_ERROR), (1, UNKNOWN_SERVER_ERROR)]
        assert response.node_endpoints == []


def test_every_api_version_has_an_encodable_error_response() -> None:
    for api_key, (lowest, highest) in SUPPORTED_VERSIONS.items():
        for version in range(lowest, highest + 1):
            response = error_response(api_key, version, REQUEST_CLASSES[api_key][version](),
                                      ErrorCode.UNKNOWN_SERVER_ERROR)
            assert encode_response(response, 7)

"""ApiVersions over a real socket: exactly the implemented APIs, the v0 fallback for too-new versions, and
the KIP-511 software-name check."""

from __future__ import annotations

import struct

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def test_every_version_lists_exactly_the_supported_apis(broker: BrokerProcess) -> None:
    expected = {int(key): versions for key, versions in SUPPORTED_VERSIONS.items()}
    with WireClient(broker.bootstrap) as client:
        for version in range(5):
            request = ApiVersionsRequest[version]()
            if version >= 3:
                request.client_software_name = "wire-test"
                request.client_software_version = "1.0"
            response = client.request(request)
            assert response.error_code == 0
            advertised = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
            assert advertised == expected
    assert expected[int(ApiKey.PRODUCE)] == (0, 12)


def test_too_new_version_gets_unsupported_version_in_a_v0_body(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        body = struct.pack(">hhih", 18, 99, 42, 4) + b"test" + b"\x00" * 8
        client.send_bytes(struct.pack(">i", len(body)) + body)
        frame = client.read_frame()
        response = ApiVersionsResponse[0].decode(frame[4:])
        assert struct.unpack(">i", frame[:4])[0] == 42
        assert response.error_code == 35
        assert [(e.api_key, e.min_version, e.max_version) for e in response.api_keys] == [(18, 0, 4)]
        # the connection stays usable: the client retries with a supported version
        assert client.request(ApiVersionsRequest[0]()).error_code == 0


def test_invalid_software_name_is_invalid_request(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        request = ApiVersionsRequest[3](client_software_name="bad name!", client_software_version="1.0")
        request.with_header(correlation_id=9, client_id="wire-test")
        client.send_bytes(bytes(request.encode(header=True, framed=True)))
        frame = client.read_frame()  # response header v0 (correlation id), then the error code
        assert struct.unpack(">ih", frame[:6]) == (9, 42)


def test_unsupported_version_of_another_api_closes_only_that_connection(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as bad, WireClient(broker.bootstrap) as good:
        body = struct.pack(">hhih", 3, 13, 1, -1) + b"\x00" * 10  # Metadata v13 is not advertised
        bad.send_bytes(struct.pack(">i", len(body)) + body)
        assert bad.is_closed_by_peer()
        assert good.request(ApiVersionsRequest[0]()).error_code == 0


def test_admin_describe_apis_are_advertised_with_kafka_4_ranges_and_telemetry_is_not(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        request = ApiVersionsRequest[4](client_software_name="wire-test", client_software_version="1.0")
        advertised = {e.api_key: (e.min_version, e.max_version) for e in client.request(request).api_keys}
    # DescribeLogDirs, DescribeCluster, DescribeProducers, DescribeTopicPartitions: what Apache Kafka 4.3 advertises
    assert {key: advertised.get(key) for key in (35, 60, 61, 75)} == {35: (1, 5), 60: (0, 2), 61: (0, 0), 75: (0, 0)}
    # GetTelemetrySubscriptions/PushTelemetry: Kafka advertises them only with a client-telemetry receiver plugin
    assert 71 not in advertised and 72 not in advertised

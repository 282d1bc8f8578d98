"""DescribeCluster over a real socket: the cluster id Metadata reports, this node as controller and only
broker, the endpoint-type errors and the authorized-operations default, per version (checked against Apache
Kafka 4.3: tests/interop/test_admin_cli.py)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.cluster import DescribeClusterRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from minikafka.protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def describe_cluster(client: WireClient, version: int, endpoint_type: int = 1, operations: bool = False) -> Any:
    return client.request(DescribeClusterRequest[version](
        include_cluster_authorized_operations=operations, endpoint_type=endpoint_type, include_fenced_brokers=False))


def test_every_version_describes_this_node_and_the_metadata_cluster_id(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        metadata = client.request(MetadataRequest[12](topics=[], allow_auto_topic_creation=False,
                                                      include_topic_authorized_operations=False))
        for version in range(3):
            response = describe_cluster(client, version)
            assert (response.error_code, response.error_message) == (ErrorCode.NONE, None)
            assert response.cluster_id == metadata.cluster_id and len(response.cluster_id) == 22
            assert response.controller_id == metadata.controller_id == 1
            assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [
                (1, "127.0.0.1", broker.port, None)]
            assert response.authorized_operations is None  # INT_MIN: not requested
            if version >= 1:
                assert response.endpoint_type == 1
            if version >= 2:
                assert response.brokers[0].is_fenced is False


def test_authorized_operations_are_every_cluster_operation_when_requested(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        response = describe_cluster(client, 2, operations=True)
        # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
        assert response.authorized_operations == {5, 7, 8, 9, 10, 11, 12}


def test_controller_and_unknown_endpoint_types_are_refused_like_kafka(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        controllers = describe_cluster(client, 1, endpoint_type=2)
        assert controllers.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
        assert controllers.error_message == ("The request was sent to an endpoint of type BROKER, but we wanted an "
                                             "endpoint of type CONTROLLER")
        assert (controllers.cluster_id, controllers.controller_id, controllers.brokers) == ("", -1, [])
        unknown = describe_cluster(client, 2, endpoint_type=3)
        assert (unknown.error_code, unknown.error_message) == (ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                                                               "Unsupported endpoint type 3")
        assert describe_cluster(client, 0).error_code == ErrorCode.NONE  # the connection stays usable

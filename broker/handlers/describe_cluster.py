"""DescribeCluster (key 60), v0-2: the cluster id from meta.properties, the first running broker as the controller and
the running brokers of this process (never fenced), as a Kafka 4.x broker answers it (Kafka's
AuthHelper.computeDescribeClusterResponse).

A broker describes brokers only: v1+ asking for controllers (endpoint type 2) gets MISMATCHED_ENDPOINT_TYPE,
any other type UNSUPPORTED_ENDPOINT_TYPE (v0 has no endpoint type). With no authorizer every cluster operation
is allowed, so requested authorized operations are all of them; not requested, they encode as INT_MIN.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.acls import CLUSTER_NAME
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize_cluster, authorized_operations
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2
#: Kafka's AclOperation codes a CLUSTER resource supports: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
#: DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE (what Kafka answers without an authorizer).
CLUSTER_OPERATIONS = frozenset({5, 7, 8, 9, 10, 11, 12})


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.DESCRIBE_CLUSTER, event.api_version)
    endpoint_type = request.endpoint_type if event.api_version >= 1 else BROKER_ENDPOINT
    if endpoint_type == CONTROLLER_ENDPOINT:
        return _error(cls, ErrorCode.MISMATCHED_ENDPOINT_TYPE, "The request was sent to an endpoint of type BROKER, "
                      "but we wanted an endpoint of type CONTROLLER")
    if endpoint_type != BROKER_ENDPOINT:
        return _error(cls, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}")
    operations: set[int] | None = None
    if request.include_cluster_authorized_operations:  # Kafka: none at all without DESCRIBE on the cluster
        operations = authorized_operations(ctx, session, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS) \
            if authorize_cluster(ctx, session, AclOperation.DESCRIBE) else set()
    return cls(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=ctx.cluster_id,
        controller_id=ctx.cluster.controller_id(),
        # the running brokers, each on the listener the request came in on (a stopped one is not registered)
        brokers=[cls.DescribeClusterBroker(broker_id=broker_id, host=endpoint.host, port=endpoint.port, rack=None,
                                           is_fenced=False)
                 for broker_id in ctx.cluster.running_ids()
                 for endpoint in [ctx.cluster.endpoint(broker_id, session.listener_name)]],
        # the generated class takes a set of operation codes; None encodes INT_MIN ("not requested")
        authorized_operations=operations,
    )


def _error(cls: Any, error_code: ErrorCode, message: str) -> Any:
    """Kafka's error answer: the schema defaults (empty cluster id, controller -1, no brokers) and the error."""
    return cls(throttle_time_ms=0, error_code=error_code, error_message=message, endpoint_type=BROKER_ENDPOINT,
               cluster_id="", controller_id=-1, brokers=[], authorized_operations=None)

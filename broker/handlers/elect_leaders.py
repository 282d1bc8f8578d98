"""ElectLeaders (key 43), v0-2: PREFERRED (v0+) and UNCLEAN (v1+) leader elections among this process's brokers,
answered as Kafka 4.3's controller answers them (ControllerApis.handleElectLeaders,
ReplicationControlManager.electLeaders; the rules are `leader_elections`'):

- ALTER on the CLUSTER is required; without it the top-level error and every named partition's is
  CLUSTER_AUTHORIZATION_FAILED (ElectLeadersRequest.getErrorResponse; a null topic list answers no topic).
- An election type other than 0 or 1 is INVALID_REQUEST, the same way.
- A null topic list elects for every partition of every topic and leaves out the partitions that answer
  ELECTION_NOT_NEEDED; an empty list answers nothing; named partitions answer one result each, in request order.
Any broker of the process answers (Kafka's brokers forward the request to the controller).
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.leader_elections import ElectionResult, ElectionType, elect_leader
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ELECT_LEADERS, event.api_version)
    if not authorize_cluster(ctx, session, AclOperation.ALTER):
        # Kafka's message names the whole request (`Request $request is not authorized.`); the API's name here
        return _error_response(cls, request, ElectionResult(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                            "Request ElectLeaders is not authorized."))
    raw_type = request.election_type if event.api_version >= 1 else ElectionType.PREFERRED
    try:
        election_type = ElectionType(raw_type)
    except ValueError:
        return _error_response(cls, request, ElectionResult(ErrorCode.INVALID_REQUEST,
                                                            f"Unknown election type {raw_type}"))
    result_cls = cls.ReplicaElectionResult
    partition_cls = result_cls.PartitionResult
    results = []
    if request.topic_partitions is None:
        for topic in sorted(ctx.replica_manager.topics()):
            partition_results = []
            for index in range(ctx.partitions.partition_count(topic) or 0):
                outcome = elect_leader(ctx.partitions, topic, index, election_type)
                if outcome.error_code != ErrorCode.ELECTION_NOT_NEEDED:
                    partition_results.append(partition_cls(partition_id=index, error_code=outcome.error_code,
                                                           error_message=outcome.error_message))
            results.append(result_cls(topic=topic, partition_result=partition_results))
    else:
        for topic in request.topic_partitions:
            partition_results = []
            for index in topic.partitions:
                outcome = elect_leader(ctx.partitions, topic.topic, index, election_type)
                partition_results.append(partition_cls(partition_id=index, error_code=outcome.error_code,
                                                       error_message=outcome.error_message))
            results.append(result_cls(topic=topic.topic, partition_result=partition_results))
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)


def _error_response(cls: Any, request: Any, error: ElectionResult) -> Any:
    """ElectLeadersRequest.getErrorResponse: the error at the top and on every named partition."""
    result_cls = cls.ReplicaElectionResult
    partition_cls = result_cls.PartitionResult
    results = [result_cls(topic=topic.topic, partition_result=[
        partition_cls(partition_id=index, error_code=error.error_code, error_message=error.error_message)
        for index in topic.partitions]) for topic in request.topic_partitions or ()]
    return cls(throttle_time_ms=0, error_code=error.error_code, replica_election_results=results)

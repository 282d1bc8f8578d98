"""Thin adapter over kafka-python's JSON-schema message classes (`kafka.protocol`).

Owns the api_key -> (request class, response class) table and the two operations the connection needs:
decode a request body of a given version, and encode a response with its header and frame. The classes
are generated from Apache Kafka's own message JSON, so field names match the protocol spec.
Stateless and thread-safe.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.admin.acl import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.admin.cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.admin.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.errors import ProtocolError
from minikafka.protocol.fetch_response import FetchResponse as EncodedFetchResponse
from minikafka.protocol.produce_response import ProduceResponse as EncodedProduceResponse
from minikafka.protocol.schemas import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)

__all__ = [
    "REQUEST_CLASSES",
    "RESPONSE_CLASSES",
    "ApiMessage",
    "decode_request",
    "encode_response",
    "is_flexible",
]

_PAIRS: dict[ApiKey, tuple[Any, Any]] = {
    ApiKey.PRODUCE: (ProduceRequest, ProduceResponse),
    ApiKey.FETCH: (FetchRequest, FetchResponse),
    ApiKey.LIST_OFFSETS: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.METADATA: (MetadataRequest, MetadataResponse),
    ApiKey.OFFSET_COMMIT: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.OFFSET_FETCH: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.FIND_COORDINATOR: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.JOIN_GROUP: (JoinGroupRequest, JoinGroupResponse),
    ApiKey.HEARTBEAT: (HeartbeatRequest, HeartbeatResponse),
    ApiKey.LEAVE_GROUP: (LeaveGroupRequest, LeaveGroupResponse),
    ApiKey.SYNC_GROUP: (SyncGroupRequest, SyncGroupResponse),
    ApiKey.DESCRIBE_GROUPS: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.LIST_GROUPS: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.API_VERSIONS: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.CREATE_TOPICS: (CreateTopicsRequest, CreateTopicsResponse),
    ApiKey.DELETE_TOPICS: (DeleteTopicsRequest, DeleteTopicsResponse),
    ApiKey.DELETE_RECORDS: (DeleteRecordsRequest, DeleteRecordsResponse),
    ApiKey.INIT_PRODUCER_ID: (InitProducerIdRequest, InitProducerIdResponse),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    ApiKey.ADD_PARTITIONS_TO_TXN: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    ApiKey.ADD_OFFSETS_TO_TXN: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    ApiKey.END_TXN: (EndTxnRequest, EndTxnResponse),
    ApiKey.TXN_OFFSET_COMMIT: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    ApiKey.DESCRIBE_TRANSACTIONS: (DescribeTransactionsRequest, DescribeTransactionsResponse),
    ApiKey.LIST_TRANSACTIONS: (ListTransactionsRequest, ListTransactionsResponse),
    ApiKey.DESCRIBE_ACLS: (DescribeAclsRequest, DescribeAclsResponse),
    ApiKey.CREATE_ACLS: (CreateAclsRequest, CreateAclsResponse),
    ApiKey.DELETE_ACLS: (DeleteAclsRequest, DeleteAclsResponse),
    ApiKey.DESCRIBE_CONFIGS: (DescribeConfigsRequest, DescribeConfigsResponse),
    ApiKey.ALTER_CONFIGS: (AlterConfigsRequest, AlterConfigsResponse),
    ApiKey.CREATE_PARTITIONS: (CreatePartitionsRequest, CreatePartitionsResponse),
    ApiKey.DELETE_GROUPS: (DeleteGroupsRequest, DeleteGroupsResponse),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    ApiKey.OFFSET_DELETE: (OffsetDeleteRequest, OffsetDeleteResponse),
    ApiKey.LIST_CONFIG_RESOURCES: (ListConfigResourcesRequest, ListConfigResourcesResponse),
    ApiKey.DESCRIBE_LOG_DIRS: (DescribeLogDirsRequest, DescribeLogDirsResponse),
    ApiKey.DESCRIBE_CLUSTER: (DescribeClusterRequest, DescribeClusterResponse),
    ApiKey.DESCRIBE_PRODUCERS: (DescribeProducersRequest, DescribeProducersResponse),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse),
    ApiKey.SASL_HANDSHAKE: (SaslHandshakeRequest, SaslHandshakeResponse),
    ApiKey.SASL_AUTHENTICATE: (SaslAuthenticateRequest, SaslAuthenticateResponse),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (DescribeClientQuotasRequest, DescribeClientQuotasResponse),
    ApiKey.ALTER_CLIENT_QUOTAS: (AlterClientQuotasRequest, AlterClientQuotasResponse),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
    ApiKey.SHARE_GROUP_HEARTBEAT: (ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse),
    ApiKey.SHARE_GROUP_DESCRIBE: (ShareGroupDescribeRequest, ShareGroupDescribeResponse),
    ApiKey.SHARE_FETCH: (ShareFetchRequest, ShareFetchResponse),
    ApiKey.SHARE_ACKNOWLEDGE: (ShareAcknowledgeRequest, ShareAcknowledgeResponse),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse),
}
_GENERIC_ENCODE_HEADER = ApiMessage.encode_header
_FRAME_HEADER_V0 = struct.Struct(">ii")  # frame size, correlation id
_FRAME_HEADER_V1 = struct.Struct(">iiB")  # frame size, correlation id, no tagged fields
REQUEST_CLASSES: dict[ApiKey, Any] = {key: pair[0] for key, pair in _PAIRS.items()}
RESPONSE_CLASSES: dict[ApiKey, Any] = {key: pair[1] for key, pair in _PAIRS.items()}


def is_flexible(api_key: ApiKey, api_version: int) -> bool:
    """True when this API version uses the flexible encoding (request header v2, response header v1)."""
    return bool(REQUEST_CLASSES[api_key].flexible_version_q(api_version))


def decode_request(api_key: ApiKey, api_version: int, body: memoryview) -> Any:
    """Decode a request body (the bytes after the request header). Raises ProtocolError on bad bytes."""
    try:
        return REQUEST_CLASSES[api_key].decode(body, version=api_version)
    except ProtocolError:
        raise
    except Exception as exc:  # the generated decoders raise assorted errors on truncated/garbage input
        raise ProtocolError(f"cannot decode {api_key.name} v{api_version} request: {exc!r}") from exc


def response_class(api_key: ApiKey, api_version: int) -> Any:
    """The versioned response class for a request, e.g. `ProduceResponse[9]`."""
    return RESPONSE_CLASSES[api_key][api_version]


def encode_response(response: Any, correlation_id: int) -> bytes:
    """Encode `response` (a versioned kafka-python response object, or the hand-written `FetchResponse` or
    `ProduceResponse`) with its header, size-prefixed."""
    if isinstance(response, (EncodedProduceResponse, EncodedFetchResponse)):
        return response.to_bytes(correlation_id)
    if type(response).encode_header is _GENERIC_ENCODE_HEADER:  # not ApiVersions' (always header v0)
        # kafka-python's generic header encoder costs as much as a small body: write the header by hand.
        body = response.encode()
        if response.flexible_version_q(response.API_VERSION):
            return _FRAME_HEADER_V1.pack(len(body) + 5, correlation_id, 0) + body
        return _FRAME_HEADER_V0.pack(len(body) + 4, correlation_id) + body
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))

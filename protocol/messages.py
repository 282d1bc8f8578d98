"""Thin adapter over kafka-python's JSON-schema message classes (`kafka.protocol`).

Owns the api_key -> (request class, response class) table and the two operations the connection needs:
decode a request body of a given version, and encode a response with its header and frame. The classes
are generated from Apache Kafka's own message JSON, so field names match the protocol spec; each API's are
imported at its first request. Thread-safe.
"""

from __future__ import annotations

import functools
import importlib
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kafka.protocol.api_message import ApiMessage

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.errors import ProtocolError
from minikafka.protocol.fetch_response import FetchResponse as EncodedFetchResponse
from minikafka.protocol.produce_response import ProduceResponse as EncodedProduceResponse

__all__ = [
    "REQUEST_CLASSES",
    "RESPONSE_CLASSES",
    "ApiMessage",
    "decode_request",
    "encode_response",
    "is_flexible",
]

#: api key -> (module, class name without its Request/Response suffix). The classes are imported at the first
#: request of their API: the forty-odd modules of kafka-python's message classes and our share-group ones stay off
#: the broker's start path (DESIGN.md "The start path's budget").
_CLASS_NAMES: dict[ApiKey, tuple[str, str]] = {
    ApiKey.PRODUCE: ("kafka.protocol.producer.produce", "Produce"),
    ApiKey.FETCH: ("kafka.protocol.consumer.fetch", "Fetch"),
    ApiKey.LIST_OFFSETS: ("kafka.protocol.consumer.offsets", "ListOffsets"),
    ApiKey.METADATA: ("kafka.protocol.metadata.metadata", "Metadata"),
    ApiKey.OFFSET_COMMIT: ("kafka.protocol.consumer.group", "OffsetCommit"),
    ApiKey.OFFSET_FETCH: ("kafka.protocol.consumer.group", "OffsetFetch"),
    ApiKey.FIND_COORDINATOR: ("kafka.protocol.metadata.find_coordinator", "FindCoordinator"),
    ApiKey.JOIN_GROUP: ("kafka.protocol.consumer.group", "JoinGroup"),
    ApiKey.HEARTBEAT: ("kafka.protocol.consumer.group", "Heartbeat"),
    ApiKey.LEAVE_GROUP: ("kafka.protocol.consumer.group", "LeaveGroup"),
    ApiKey.SYNC_GROUP: ("kafka.protocol.consumer.group", "SyncGroup"),
    ApiKey.DESCRIBE_GROUPS: ("kafka.protocol.admin.groups", "DescribeGroups"),
    ApiKey.LIST_GROUPS: ("kafka.protocol.admin.groups", "ListGroups"),
    ApiKey.API_VERSIONS: ("kafka.protocol.metadata.api_versions", "ApiVersions"),
    ApiKey.CREATE_TOPICS: ("kafka.protocol.admin.topics", "CreateTopics"),
    ApiKey.DELETE_TOPICS: ("kafka.protocol.admin.topics", "DeleteTopics"),
    ApiKey.DELETE_RECORDS: ("kafka.protocol.admin.topics", "DeleteRecords"),
    ApiKey.INIT_PRODUCER_ID: ("kafka.protocol.producer.transaction", "InitProducerId"),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ("kafka.protocol.consumer.offsets", "OffsetForLeaderEpoch"),
    ApiKey.ADD_PARTITIONS_TO_TXN: ("kafka.protocol.producer.transaction", "AddPartitionsToTxn"),
    ApiKey.ADD_OFFSETS_TO_TXN: ("kafka.protocol.producer.transaction", "AddOffsetsToTxn"),
    ApiKey.END_TXN: ("kafka.protocol.producer.transaction", "EndTxn"),
    ApiKey.TXN_OFFSET_COMMIT: ("kafka.protocol.producer.transaction", "TxnOffsetCommit"),
    ApiKey.DESCRIBE_TRANSACTIONS: ("kafka.protocol.admin.transactions", "DescribeTransactions"),
    ApiKey.LIST_TRANSACTIONS: ("kafka.protocol.admin.transactions", "ListTransactions"),
    ApiKey.DESCRIBE_ACLS: ("kafka.protocol.admin.acl", "DescribeAcls"),
    ApiKey.CREATE_ACLS: ("kafka.protocol.admin.acl", "CreateAcls"),
    ApiKey.DELETE_ACLS: ("kafka.protocol.admin.acl", "DeleteAcls"),
    ApiKey.DESCRIBE_CONFIGS: ("kafka.protocol.admin.configs", "DescribeConfigs"),
    ApiKey.ALTER_CONFIGS: ("kafka.protocol.admin.configs", "AlterConfigs"),
    ApiKey.CREATE_PARTITIONS: ("kafka.protocol.admin.topics", "CreatePartitions"),
    ApiKey.DELETE_GROUPS: ("kafka.protocol.admin.groups", "DeleteGroups"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ("kafka.protocol.admin.configs", "IncrementalAlterConfigs"),
    ApiKey.OFFSET_DELETE: ("kafka.protocol.consumer.group", "OffsetDelete"),
    ApiKey.LIST_CONFIG_RESOURCES: ("kafka.protocol.admin.configs", "ListConfigResources"),
    ApiKey.DESCRIBE_LOG_DIRS: ("kafka.protocol.admin.cluster", "DescribeLogDirs"),
    ApiKey.DESCRIBE_CLUSTER: ("kafka.protocol.admin.cluster", "DescribeCluster"),
    ApiKey.DESCRIBE_PRODUCERS: ("kafka.protocol.admin.transactions", "DescribeProducers"),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: ("kafka.protocol.admin.topics", "DescribeTopicPartitions"),
    ApiKey.SASL_HANDSHAKE: ("kafka.protocol.sasl", "SaslHandshake"),
    ApiKey.SASL_AUTHENTICATE: ("kafka.protocol.sasl", "SaslAuthenticate"),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ("kafka.protocol.admin.users", "DescribeUserScramCredentials"),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ("kafka.protocol.admin.users", "AlterUserScramCredentials"),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ("kafka.protocol.admin.client_quotas", "DescribeClientQuotas"),
    ApiKey.ALTER_CLIENT_QUOTAS: ("kafka.protocol.admin.client_quotas", "AlterClientQuotas"),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ("minikafka.protocol.schemas", "ConsumerGroupHeartbeat"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ("minikafka.protocol.schemas", "ConsumerGroupDescribe"),
    ApiKey.SHARE_GROUP_HEARTBEAT: ("minikafka.protocol.schemas", "ShareGroupHeartbeat"),
    ApiKey.SHARE_GROUP_DESCRIBE: ("minikafka.protocol.schemas", "ShareGroupDescribe"),
    ApiKey.SHARE_FETCH: ("minikafka.protocol.schemas", "ShareFetch"),
    ApiKey.SHARE_ACKNOWLEDGE: ("minikafka.protocol.schemas", "ShareAcknowledge"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: ("minikafka.protocol.schemas", "DescribeShareGroupOffsets"),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: ("minikafka.protocol.schemas", "AlterShareGroupOffsets"),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: ("minikafka.protocol.schemas", "DeleteShareGroupOffsets"),
    ApiKey.ELECT_LEADERS: ("minikafka.protocol.schemas", "ElectLeaders"),
}
_GENERIC_ENCODE_HEADER = ApiMessage.encode_header
_GENERIC_DECODE = ApiMessage.decode.__func__
_FRAME_HEADER_V0 = struct.Struct(">ii")  # frame size, correlation id
_FRAME_HEADER_V1 = struct.Struct(">iiB")  # frame size, correlation id, no tagged fields


class _MessageClasses(Mapping[ApiKey, Any]):
    """api key -> its request or response class, imported on the first lookup (imports are thread-safe; a class
    looked up twice at once is the same class)."""

    def __init__(self, suffix: str) -> None:
        self._suffix = suffix
        self._classes: dict[ApiKey, Any] = {}

    def __getitem__(self, api_key: ApiKey) -> Any:
        try:
            return self._classes[api_key]
        except KeyError:
            module, name = _CLASS_NAMES[api_key]
            cls = self._classes[api_key] = getattr(importlib.import_module(module), name + self._suffix)
            return cls

    def __iter__(self) -> Iterator[ApiKey]:
        return iter(_CLASS_NAMES)

    def __len__(self) -> int:
        return len(_CLASS_NAMES)


REQUEST_CLASSES: Mapping[ApiKey, Any] = _MessageClasses("Request")
RESPONSE_CLASSES: Mapping[ApiKey, Any] = _MessageClasses("Response")


@functools.cache  # asked once per request; the answer for a (key, version) never changes
def is_flexible(api_key: ApiKey, api_version: int) -> bool:
    """True when this API version uses the flexible encoding (request header v2, response header v1)."""
    return bool(REQUEST_CLASSES[api_key].flexible_version_q(api_version))


#: (api key, version) -> kafka-python's compiled decoder of that request body, `f(body, position) -> (request,
#: position)`: what `ApiMessage.decode` calls after resolving the class, the version's flags and the cache key,
#: which cost as much again as decoding a one-partition Produce request (kafka-python is pinned by constraints.txt)
_DECODERS: dict[tuple[ApiKey, int], Callable[[memoryview, int], tuple[Any, int]]] = {}


def _decoder(api_key: ApiKey, api_version: int) -> Callable[[memoryview, int], tuple[Any, int]]:
    cls = REQUEST_CLASSES[api_key]
    compile_decoder = getattr(getattr(cls, "_struct", None), "compiled_decode_from", None)
    if (getattr(cls.decode, "__func__", None) is not _GENERIC_DECODE or compile_decoder is None
            or not 0 <= api_version <= cls.max_version):
        return lambda body, _position: (cls.decode(body, version=api_version), len(body))  # as it decodes itself
    flexible = bool(cls.flexible_version_q(api_version))
    decoder: Callable[[memoryview, int], tuple[Any, int]] = compile_decoder(
        api_version, compact=flexible, tagged=flexible, data_class=cls)
    if api_key is ApiKey.PRODUCE:  # hands the records out without copying them (imported at the first Produce)
        from minikafka.protocol.produce_request import produce_decoder
        return produce_decoder(api_version, decoder)
    return decoder


def decode_request(api_key: ApiKey, api_version: int, body: memoryview) -> Any:
    """Decode a request body (the bytes after the request header). Raises ProtocolError on bad bytes."""
    try:
        decoder = _DECODERS.get((api_key, api_version))
        if decoder is None:
            decoder = _DECODERS[(api_key, api_version)] = _decoder(api_key, api_version)
        return decoder(body, 0)[0]
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

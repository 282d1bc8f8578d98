"""Message classes kafka-python does not ship, generated from Apache Kafka 4.3.1's own message JSON (copied
unchanged from kafka-clients 4.3.1's `common/message/`): ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69),
the KIP-848 consumer group APIs, and the KIP-932 share-group APIs: ShareGroupHeartbeat (76), ShareGroupDescribe (77),
ShareFetch (78), ShareAcknowledge (79), the share coordinator's InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86), ReadShareGroupStateSummary (87),
and the admin DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92).

The share-group classes are not in `protocol.messages`' tables nor in ApiVersions yet: an API is listed there only
once a handler serves it. Same machinery as `kafka.protocol`'s classes; stateless and thread-safe.

The folder also holds Kafka 4.3.1's coordinator record JSON (`ShareGroup*Key/Value` from kafka-group-coordinator,
`Share{Snapshot,Update}Key/Value` from kafka-share-coordinator), read by `protocol.coordinator_record_schema`."""

from __future__ import annotations

import sys

from kafka.protocol.api_message import ApiMessage

_HERE = sys.modules[__name__]

__all__ = [
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "DeleteShareGroupStateRequest",
    "DeleteShareGroupStateResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "InitializeShareGroupStateRequest",
    "InitializeShareGroupStateResponse",
    "ReadShareGroupStateRequest",
    "ReadShareGroupStateResponse",
    "ReadShareGroupStateSummaryRequest",
    "ReadShareGroupStateSummaryResponse",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "ShareGroupHeartbeatRequest",
    "ShareGroupHeartbeatResponse",
    "WriteShareGroupStateRequest",
    "WriteShareGroupStateResponse",
]


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareGroupHeartbeatRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareGroupHeartbeatResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareFetchRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareFetchResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareAcknowledgeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareAcknowledgeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class InitializeShareGroupStateRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class InitializeShareGroupStateResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ReadShareGroupStateRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ReadShareGroupStateResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class WriteShareGroupStateRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class WriteShareGroupStateResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DeleteShareGroupStateRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DeleteShareGroupStateResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ReadShareGroupStateSummaryRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ReadShareGroupStateSummaryResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass

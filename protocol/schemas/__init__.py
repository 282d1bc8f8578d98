"""Message classes kafka-python does not ship, generated from Apache Kafka 4.3.1's own message JSON (copied
unchanged from kafka-clients 4.3.1's `common/message/`): ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69),
the KIP-848 consumer group APIs, and the KIP-932 share-group APIs: ShareGroupHeartbeat (76), ShareGroupDescribe (77),
ShareFetch (78), ShareAcknowledge (79), the share coordinator's InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86), ReadShareGroupStateSummary (87),
the admin DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92), and
ElectLeaders (43), which kafka-python 2.x does not ship either.

The share-group classes are not in `protocol.messages`' tables nor in ApiVersions yet: an API is listed there only
once a handler serves it. Same machinery as `kafka.protocol`'s classes; stateless and thread-safe.

The folder also holds Kafka 4.3.1's coordinator record JSON (`ShareGroup*Key/Value` from kafka-group-coordinator,
`Share{Snapshot,Update}Key/Value` from kafka-share-coordinator), read by `protocol.coordinator_record_schema`."""

from __future__ import annotations

import sys
import threading

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
    "ElectLeadersRequest",
    "ElectLeadersResponse",
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


_build_lock = threading.Lock()


def __getattr__(name: str) -> type[ApiMessage]:
    """The message class `name` (one of __all__), built from its JSON at its first use: building all of them cost
    every broker start about 40 ms (DESIGN.md "The start path's budget"), and most brokers never serve a share group.
    The same as `class ShareFetchRequest(ApiMessage, load_json=<this package>): pass`."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    base = name.removesuffix("Request").removesuffix("Response")
    with _build_lock:
        # A request and its response are built together: kafka-python finds a request's response class (its
        # header's get_response_class) among the classes built so far.
        for pair_name in (base + "Request", base + "Response"):
            if pair_name not in globals():
                globals()[pair_name] = type(pair_name, (ApiMessage,), {"__module__": __name__}, load_json=_HERE)
    cls: type[ApiMessage] = globals()[name]
    return cls

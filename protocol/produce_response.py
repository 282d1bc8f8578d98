"""A hand-written Produce response (v3-13) and its encoder (DESIGN decision 1).

A Produce request is answered with a few dozen bytes, but kafka-python's generic path builds a message object
per topic and partition and walks its schema to encode them: per request, that cost more broker CPU than
anything else on the Produce path after the append itself. `ProduceResponse.to_bytes` writes the size-prefixed
frame (response header v0, or v1 from the flexible v9) with a few `struct` packs. The bytes are exactly
kafka-python's `ProduceResponse[version]` for the same fields (tests/protocol/test_produce_response.py checks
every version), including what it leaves out: a field a version does not have is not written
(`log_start_offset` before v5, `record_errors` and `error_message` before v8, the tagged `current_leader` and
`node_endpoints` before v10), and the tagged fields only when set (`current_leader` not None, `node_endpoints`
not empty). v13 names topics by `topic_id` instead of `name`.

The classes keep the attribute names of kafka-python's response (`responses[i].partition_responses[j]
.error_code`, `throttle_time_ms`) so quota throttling sets `throttle_time_ms` and re-encodes it as it does a
generic response. Plain data: not thread-safe, built and encoded on the event loop.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.protocol.wire_writers import ZERO_UUID, nullable_string, string, unsigned_varint

#: Versions this encoder writes (the broker serves 3-12; v0-2 are advertised but refused, as in Kafka 4).
MIN_VERSION, MAX_VERSION = 3, 13

_FIRST_LOG_START_OFFSET = 5
_FIRST_RECORD_ERRORS = 8
_FIRST_FLEXIBLE = 9
_FIRST_TAGGED = 10
_FIRST_TOPIC_ID = 13

_INT32 = struct.Struct(">i")
_HEADER_V0 = struct.Struct(">iii")  # frame size, correlation id, topic count
_HEADER_V1 = struct.Struct(">iiB")  # frame size, correlation id, no header tagged fields
_PARTITION_V3 = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... log_start_offset
_LEADER = struct.Struct(">BBBiiB")  # one tagged field, tag 0, size 9, leader_id, leader_epoch, no tagged fields
_NO_TAGGED_FIELDS = b"\x00"


class LeaderIdAndEpoch(NamedTuple):
    """KIP-951: the leader a producer should send to next (Kafka's ProduceResponseData.LeaderIdAndEpoch)."""

    leader_id: int = -1
    leader_epoch: int = -1


class BatchIndexAndErrorMessage(NamedTuple):
    """KIP-467: a record of the batch that made the broker drop it, and why."""

    batch_index: int
    batch_index_error_message: str | None = None


@dataclass(slots=True)
class NodeEndpoint:
    """KIP-951: where to reach a broker named in `current_leader`."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(slots=True)
class PartitionProduceResponse:
    """One partition of a Produce response: where its batch landed, or why it did not."""

    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: Sequence[BatchIndexAndErrorMessage] = ()
    error_message: str | None = None
    current_leader: LeaderIdAndEpoch | None = None


@dataclass(slots=True)
class TopicProduceResponse:
    """One topic of a Produce response: named by `name` up to v12, by `topic_id` from v13."""

    name: str | None = None
    partition_responses: list[PartitionProduceResponse] = field(default_factory=list)
    topic_id: uuid.UUID | None = None


@dataclass(slots=True)
class ProduceResponse:
    """A Produce response of `version` (3-13)."""

    version: int
    responses: list[TopicProduceResponse] = field(default_factory=list)
    throttle_time_ms: int = 0
    node_endpoints: list[NodeEndpoint] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not MIN_VERSION <= self.version <= MAX_VERSION:
            raise ValueError(f"Produce response v{self.version} is outside v{MIN_VERSION}-{MAX_VERSION}")

    def to_bytes(self, correlation_id: int) -> bytes:
        """The size-prefixed frame: response header v0 (v1 from v9) and the body."""
        version = self.version
        if version < _FIRST_FLEXIBLE:
            out = bytearray(_HEADER_V0.pack(0, correlation_id, len(self.responses)))
            self._write_topics(out)
        else:
            out = bytearray(_HEADER_V1.pack(0, correlation_id, 0))
            self._write_topics_flexible(out)
        _INT32.pack_into(out, 0, len(out) - 4)
        return bytes(out)

    def _write_topics(self, out: bytearray) -> None:
        """v3-8: int32 array lengths, int16 string lengths, no tagged fields."""
        version = self.version
        with_log_start_offset = version >= _FIRST_LOG_START_OFFSET
        with_record_errors = version >= _FIRST_RECORD_ERRORS
        for topic in self.responses:
            string(out, topic.name or "", False)
            out += _INT32.pack(len(topic.partition_responses))
            for p in topic.partition_responses:
                if with_log_start_offset:
                    out += _PARTITION_V5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                              p.log_start_offset)
                else:
                    out += _PARTITION_V3.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
                if with_record_errors:
                    out += _INT32.pack(len(p.record_errors))
                    for batch_index, message in p.record_errors:
                        out += _INT32.pack(batch_index)
                        nullable_string(out, message, False)
                    nullable_string(out, p.error_message, False)
        out += _INT32.pack(self.throttle_time_ms)

    def _write_topics_flexible(self, out: bytearray) -> None:
        """v9+: compact lengths, tagged fields after each struct; v10+ may carry the KIP-951 tagged fields."""
        with_tagged = self.version >= _FIRST_TAGGED
        with_topic_id = self.version >= _FIRST_TOPIC_ID
        unsigned_varint(out, len(self.responses) + 1)
        for topic in self.responses:
            if with_topic_id:
                out += (topic.topic_id or ZERO_UUID).bytes
            else:
                string(out, topic.name or "", True)
            unsigned_varint(out, len(topic.partition_responses) + 1)
            for p in topic.partition_responses:
                out += _PARTITION_V5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                          p.log_start_offset)
                unsigned_varint(out, len(p.record_errors) + 1)
                for batch_index, message in p.record_errors:
                    out += _INT32.pack(batch_index)
                    nullable_string(out, message, True)
                    out.append(0)  # no tagged fields
                nullable_string(out, p.error_message, True)
                leader = p.current_leader
                if with_tagged and leader is not None:
                    out += _LEADER.pack(1, 0, 9, leader.leader_id, leader.leader_epoch, 0)
                else:
                    out.append(0)  # no tagged fields
            out.append(0)  # topic tagged fields
        out += _INT32.pack(self.throttle_time_ms)
        if with_tagged and self.node_endpoints:
            endpoints = bytearray()
            unsigned_varint(endpoints, len(self.node_endpoints) + 1)
            for node in self.node_endpoints:
                endpoints += _INT32.pack(node.node_id)
                string(endpoints, node.host, True)
                endpoints += _INT32.pack(node.port)
                nullable_string(endpoints, node.rack, True)
                endpoints.append(0)  # no tagged fields
            out += b"\x01\x00"  # one tagged field, tag 0
            unsigned_varint(out, len(endpoints))
            out += endpoints
        else:
            out += _NO_TAGGED_FIELDS


__all__ = [
    "MAX_VERSION",
    "MIN_VERSION",
    "BatchIndexAndErrorMessage",
    "LeaderIdAndEpoch",
    "NodeEndpoint",
    "PartitionProduceResponse",
    "ProduceResponse",
    "TopicProduceResponse",
]

"""A hand-written Fetch response (v4-18) and its encoder, which never copies record data (DESIGN decision 1).

kafka-python's generic encoder copies each partition's records into its buffer and the result once more into
`bytes`; for Fetch that is most of the broker's work per byte consumed. `FetchResponse.encode_frame` writes
only the fixed-size fields (response header, topic and partition headers, aborted transactions, tagged-field
markers) and returns a `BufferedFrame`: those header bytes with the record buffers (`bytes` or `memoryview`
slices of what the segment read returned) between them, ready for `transport.writelines`. The bytes on the
wire are exactly kafka-python's `FetchResponse[version]` (tests/protocol/test_fetch_response.py checks every
version). No tagged fields are written (diverging epoch, current leader, snapshot id, node endpoints: a single
node never sends them). Records smaller than COALESCE_BYTES are copied into the header buffer instead: fewer,
larger writes are cheaper than a write per small partition.

`FetchResponse` keeps the attribute names of kafka-python's response (`responses[i].partitions[j]
.aborted_transactions[k].producer_id`, `throttle_time_ms`, `session_id`) so quota throttling and tests read
it as they read the generic one. Plain data: not thread-safe, built and encoded on the event loop.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.protocol.response_frame import Buffer, BufferedFrame
from minikafka.protocol.wire_writers import ZERO_UUID, array_length, nullable_length, string

#: Versions this encoder writes (those the broker serves).
MIN_VERSION, MAX_VERSION = 4, 18
#: Records at least this long are written from their own buffer, smaller ones copied into the header bytes.
COALESCE_BYTES = 16 * 1024

_FIRST_FLEXIBLE = 12
_FIRST_TOPIC_ID = 13

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_TOP_V7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PARTITION_V4 = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable_offset
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... log_start_offset
_ABORTED = struct.Struct(">qq")  # producer_id, first_offset


class AbortedTransaction(NamedTuple):
    producer_id: int
    first_offset: int


@dataclass(slots=True)
class PartitionData:
    """One partition of a Fetch response (Kafka's FetchResponseData.PartitionData)."""

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int = -1
    log_start_offset: int = -1
    #: None is written as a null array (read_uncommitted)
    aborted_transactions: list[AbortedTransaction] | None = None
    preferred_read_replica: int = -1
    #: None is written as null records
    records: Buffer | None = b""


@dataclass(slots=True)
class FetchableTopicResponse:
    """One topic of a Fetch response: named by `topic` up to v12, by `topic_id` from v13."""

    topic: str | None = None
    topic_id: uuid.UUID | None = None
    partitions: list[PartitionData] = field(default_factory=list)


@dataclass(slots=True)
class FetchResponse:
    """A Fetch response of `version` (4-18)."""

    version: int
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0
    responses: list[FetchableTopicResponse] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not MIN_VERSION <= self.version <= MAX_VERSION:
            raise ValueError(f"Fetch response v{self.version} is outside v{MIN_VERSION}-{MAX_VERSION}")

    def encode_frame(self, correlation_id: int) -> BufferedFrame:
        """The size-prefixed frame (response header v0, or v1 from v12) as a list of buffers."""
        version = self.version
        flexible = version >= _FIRST_FLEXIBLE
        buffers: list[Buffer] = []
        head = bytearray(4)  # the size prefix, filled in at the end
        head += _INT32.pack(correlation_id)
        if flexible:
            head.append(0)  # response header tagged fields
        if version >= 7:
            head += _TOP_V7.pack(self.throttle_time_ms, self.error_code, self.session_id)
        else:
            head += _INT32.pack(self.throttle_time_ms)
        array_length(head, len(self.responses), flexible)
        size = 0
        partition_struct = _PARTITION_V5 if version >= 5 else _PARTITION_V4
        for topic in self.responses:
            if version >= _FIRST_TOPIC_ID:
                head += (topic.topic_id or ZERO_UUID).bytes
            else:
                string(head, topic.topic or "", flexible)
            array_length(head, len(topic.partitions), flexible)
            for partition in topic.partitions:
                if version >= 5:
                    head += partition_struct.pack(partition.partition_index, partition.error_code,
                                                  partition.high_watermark, partition.last_stable_offset,
                                                  partition.log_start_offset)
                else:
                    head += partition_struct.pack(partition.partition_index, partition.error_code,
                                                  partition.high_watermark, partition.last_stable_offset)
                aborted = partition.aborted_transactions
                if aborted is None:
                    nullable_length(head, None, flexible)
                else:
                    array_length(head, len(aborted), flexible)
                    for producer_id, first_offset in aborted:
                        head += _ABORTED.pack(producer_id, first_offset)
                        if flexible:
                            head.append(0)
                if version >= 11:
                    head += _INT32.pack(partition.preferred_read_replica)
                records = partition.records
                if records is None:
                    nullable_length(head, None, flexible)
                else:
                    length = len(records)
                    nullable_length(head, length, flexible)
                    if length >= COALESCE_BYTES:
                        size += len(head)
                        buffers.append(head)
                        buffers.append(records)
                        size += length
                        head = bytearray()
                    elif length:
                        head += records
                if flexible:
                    head.append(0)  # partition tagged fields
            if flexible:
                head.append(0)  # topic tagged fields
        if flexible:
            head.append(0)  # top-level tagged fields
        size += len(head)
        buffers.append(head)
        first = buffers[0]
        assert isinstance(first, bytearray)
        _INT32.pack_into(first, 0, size - 4)
        return BufferedFrame(buffers, size)

    def to_bytes(self, correlation_id: int) -> bytes:
        """The whole frame in one `bytes` (a copy: for tests and callers that need one buffer)."""
        return b"".join(self.encode_frame(correlation_id).buffers)


__all__ = ["COALESCE_BYTES", "AbortedTransaction", "FetchResponse", "FetchableTopicResponse", "PartitionData"]

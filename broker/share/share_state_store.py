"""`ShareStateStore`: the share coordinator's `__share_group_state` topic, as Apache Kafka 4.3.1's share coordinator
keeps it: compacted, `share.coordinator.state.topic.num.partitions` partitions (50), keyed by Kafka's share-partition
key (`group:topicId:partition`, `SharePartitionKey.asCoordinatorKey`), holding ShareSnapshot/ShareUpdate records.

Records are produced by `ShareCoordinatorState` (sans-IO), appended here and then replayed, as Kafka's coordinator
runtime does, so the live path and the load at start-up share one replay. This broker's own cleaner compacts the
topic like `__consumer_offsets`. Event-loop thread only; not thread-safe.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import ClassVar

from minikafka.broker.groups.coordinator_partitions import CoordinatorPartitions
from minikafka.broker.groups.offsets_topic import OffsetsTopic, iter_records
from minikafka.broker.share.share_coordinator_state import ShareCoordinatorState, ShareStateRecord
from minikafka.broker.share.share_state_records import decode_key, decode_value, encode_key, encode_value
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.clock import Clock

__all__ = ["SHARE_GROUP_STATE_TOPIC", "ShareStateStore", "share_partition_key"]

log = logging.getLogger(__name__)

SHARE_GROUP_STATE_TOPIC = "__share_group_state"
_LOAD_BUFFER_BYTES = 5 * 1024 * 1024
_SEGMENT_BYTES = 100 * 1024 * 1024  # share.coordinator.state.topic.segment.bytes


def share_partition_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey: what picks the `__share_group_state` partition."""
    return f"{group_id}:{topic_id}:{partition}"


class ShareStateStore(CoordinatorPartitions):
    """Appends and loads `__share_group_state`; the state itself is the `ShareCoordinatorState` it replays into."""

    topic_name: ClassVar[str] = SHARE_GROUP_STATE_TOPIC
    key_name: ClassVar[str] = "share partition"
    too_large_errors: ClassVar[frozenset[ErrorCode]] = frozenset(
        {ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE}
    )
    too_large_error: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, topic: OffsetsTopic, clock: Clock, state: ShareCoordinatorState, num_partitions: int) -> None:
        super().__init__(topic, clock, num_partitions, _SEGMENT_BYTES)
        self.state = state

    def write(self, record: ShareStateRecord) -> ErrorCode:
        """Append one record to its partition, then replay it; the coordinator's error code if the append failed
        (the state is unchanged then)."""
        key, value = record
        error = self._append(
            share_partition_key(key.group_id, key.topic_id, key.partition),
            [(encode_key(key), None if value is None else encode_value(value))],
        )
        if error is ErrorCode.NONE:
            self.state.replay(key, value)
        return error

    def load_partition(self, partition: int) -> Iterator[None]:
        """Replay one partition, yielding after each record (`load_all` runs the load in slices)."""
        for _offset, (key_bytes, value_bytes) in iter_records(self.topic, partition, _LOAD_BUFFER_BYTES):
            try:
                key = decode_key(key_bytes)
                value = None if value_bytes is None else decode_value(key.record_type, value_bytes)
                self.state.replay(key, value)
            except (ValueError, UnicodeDecodeError):
                log.warning("skipping an undecodable record in %s-%d", SHARE_GROUP_STATE_TOPIC, partition)
            yield

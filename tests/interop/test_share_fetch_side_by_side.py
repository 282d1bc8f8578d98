"""ShareFetch's long poll and AlterShareGroupOffsets of an empty group, side by side with Apache Kafka 4.3.1 (issue
35): a record one member RELEASEs (ShareAcknowledge) goes to another member's ShareFetch that is already waiting
(Kafka's DelayedShareFetch acquires when it completes). The release is not sent in a ShareFetch: Kafka runs that
request's fetch beside its acknowledgement, and now and then the releasing member's own fetch acquires the record
first (seen once in a fresh-clone run).
AlterShareGroupOffsets for a group that has no members yet creates the group's share state at the given start
offset (franz-go's TestShareGroupOffsetsAdmin)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.schemas import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from tests.broker.share.test_share_wire import RELEASE, acquired, share_ack, share_fetch
from tests.interop.test_share_consumer_side_by_side import set_group_configs
from tests.interop.test_share_wire_side_by_side import (  # noqa: F401  (broker: the module's minikafka)
    broker,
    fetch_until_acquired,
    join,
    share_group,
)
from tests.wire_client import WireClient

pytestmark = pytest.mark.interop


def test_a_release_completes_another_members_waiting_fetch(target_bootstrap: str) -> None:
    with WireClient(target_bootstrap) as first, WireClient(target_bootstrap) as second:
        topic, group, tid = share_group(first, target_bootstrap, "release-wire", 3)
        # locks long enough that only the RELEASE makes a record available again during the test
        set_group_configs(target_bootstrap, group, {"share.auto.offset.reset": "earliest",
                                                    "share.record.lock.duration.ms": "15000"})
        join(first, group, "holder", topic)
        join(second, group, "taker", topic)
        response, holder_epoch = fetch_until_acquired(first, group, "holder", tid, 0)
        assert acquired(response) == [(0, 2, 1)]
        assert acquired(share_fetch(second, group, "taker", 0, tid)) == []  # opens the taker's session
        out: list[Any] = []
        started = time.monotonic()
        waiting = threading.Thread(target=lambda: out.append(
            share_fetch(second, group, "taker", 1, tid, max_wait_ms=5_000)), daemon=True)
        waiting.start()
        time.sleep(1.5)  # the taker's fetch waits: every record is acquired
        assert out == []
        released = share_ack(first, group, "holder", holder_epoch, tid, acks=[(1, 1, [RELEASE])])
        assert [p.error_code for t in released.responses for p in t.partitions] == [ErrorCode.NONE]
        waiting.join(15)
        # Kafka completes the waiting fetch by its MaxWaitMs at the latest (minikafka at once): the released record
        # is acquired when the waiting fetch completes
        assert time.monotonic() - started < 5 + 3
        assert acquired(out[0]) == [(1, 1, 2)]


def test_alter_share_group_offsets_creates_an_empty_groups_state(target_bootstrap: str) -> None:
    with WireClient(target_bootstrap) as client:
        topic, _group, _tid = share_group(client, target_bootstrap, "alter-empty", 10)
        group = f"sg-new-{uuid.uuid4().hex[:8]}"
        alter = AlterShareGroupOffsetsRequest[0]
        altered = client.request_until_ready(alter(group_id=group, topics=[alter.AlterShareGroupOffsetsRequestTopic(
            topic_name=topic, partitions=[alter.AlterShareGroupOffsetsRequestTopic
                                          .AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                                                  start_offset=4)])]),
            AlterShareGroupOffsetsResponse[0])
        assert altered.error_code == ErrorCode.NONE, altered
        assert [(p.partition_index, p.error_code) for t in altered.responses for p in t.partitions] == [(0, 0)]
        describe = DescribeShareGroupOffsetsRequest[0]
        described = client.request(describe(groups=[describe.DescribeShareGroupOffsetsRequestGroup(
            group_id=group, topics=[describe.DescribeShareGroupOffsetsRequestGroup
                                    .DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0])])]),
            DescribeShareGroupOffsetsResponse[0])
        (described_group,) = described.groups
        assert described_group.error_code == ErrorCode.NONE
        assert [(p.partition_index, p.start_offset) for t in described_group.topics for p in t.partitions] == [(0, 4)]

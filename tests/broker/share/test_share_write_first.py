"""Share groups write first and apply only what was written (issue 35): a `__share_group_state` or
`__consumer_offsets` append that fails leaves the broker's memory equal to its log. The broker runs in this process
so the `disk_fault` seam (tests/disk_faults.py) fails the one segment write of the append under test with ENOSPC,
a real failing write path; the clients are real sockets."""

from __future__ import annotations

import errno
from pathlib import Path

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.schemas import ShareGroupDescribeRequest, ShareGroupDescribeResponse
from minikafka.testing.mini_kafka import free_port
from tests.broker.share.test_share_wire import (
    ACCEPT,
    acquired,
    heartbeat,
    join,
    produce_records,
    share_ack,
    share_fetch,
    topic_id,
)
from tests.broker.test_fetch_wire import create_topic
from tests.disk_faults import DiskFault
from tests.in_process_broker import InProcessBroker
from tests.wire_client import WireClient

PROPS = {
    "num.partitions": "1", "offsets.topic.num.partitions": "1", "share.coordinator.state.topic.num.partitions": "1",
    "log.cleaner.enable": "false", "minikafka.metrics.port": "-1",
    "log.flush.offset.checkpoint.interval.ms": "3600000", "log.flush.start.offset.checkpoint.interval.ms": "3600000",
}


def fail_next_write(fault: DiskFault) -> None:
    fault.error_number = errno.ENOSPC
    fault.fail_at = fault.calls + 1


def partition_errors(response: object) -> list[int]:
    return [p.error_code for t in response.responses for p in t.partitions]  # type: ignore[attr-defined]


def describe(client: WireClient, group: str) -> tuple[int, list[str]]:
    described = client.request(ShareGroupDescribeRequest[1](group_ids=[group], include_authorized_operations=False),
                               ShareGroupDescribeResponse[1])
    (group_info,) = described.groups
    return int(group_info.group_epoch), sorted(m.member_id for m in group_info.members)


def test_a_failed_acknowledgement_write_changes_nothing(tmp_path: Path, disk_fault: DiskFault) -> None:
    """Kafka rolls its in-flight state back when the persister fails: the records stay acquired by the member,
    whose retry succeeds (not INVALID_RECORD_STATE), and after a restart nothing accepted is delivered again."""
    broker = InProcessBroker(tmp_path / "data", free_port(), PROPS).start()
    try:
        with WireClient(broker.bootstrap) as client:
            create_topic(client, "q")
            tid = topic_id(client, "q")
            join(client, "g", "m1", "q")
            assert share_fetch(client, "g", "m1", 0, tid).error_code == ErrorCode.NONE
            produce_records(client, "q", 3)
            assert acquired(share_fetch(client, "g", "m1", 1, tid, max_wait_ms=2000)) == [(0, 2, 1)]
            fail_next_write(disk_fault)
            failed = share_ack(client, "g", "m1", 2, tid, [(0, 2, [ACCEPT])])
            assert disk_fault.fired == "pwrite"
            assert partition_errors(failed) != [ErrorCode.NONE]
            retried = share_ack(client, "g", "m1", 3, tid, [(0, 2, [ACCEPT])])
            assert partition_errors(retried) == [ErrorCode.NONE]
    finally:
        broker.stop()
    broker = InProcessBroker(tmp_path / "data", broker.port, PROPS).start()
    try:
        with WireClient(broker.bootstrap) as client:
            tid = topic_id(client, "q")
            join(client, "g", "m2", "q")
            again = share_fetch(client, "g", "m2", 0, tid, max_wait_ms=500)
            assert acquired(again) == []
    finally:
        broker.stop()


def test_a_failed_heartbeat_write_leaves_the_group_as_it_was(tmp_path: Path, disk_fault: DiskFault) -> None:
    """A member whose join could not be written is not in the group (same epoch, same members); its next
    heartbeat joins it as a first one would."""
    broker = InProcessBroker(tmp_path / "data", free_port(), PROPS).start()
    try:
        with WireClient(broker.bootstrap) as client:
            create_topic(client, "q")
            join(client, "g", "m1", "q")
            before = describe(client, "g")
            fail_next_write(disk_fault)
            refused = heartbeat(client, "g", "m2", 0, ["q"])
            assert disk_fault.fired == "pwrite"
            assert refused.error_code != ErrorCode.NONE
            assert describe(client, "g") == before
            joined = heartbeat(client, "g", "m2", 0, ["q"])
            assert joined.error_code == ErrorCode.NONE
            assert describe(client, "g") == (before[0] + 1, ["m1", "m2"])
            # a new group whose first record cannot be written does not exist
            fail_next_write(disk_fault)
            assert heartbeat(client, "h", "m1", 0, ["q"]).error_code != ErrorCode.NONE
            described = client.request(ShareGroupDescribeRequest[1](group_ids=["h"],
                                                                    include_authorized_operations=False),
                                       ShareGroupDescribeResponse[1])
            assert described.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    finally:
        broker.stop()

"""ShareFetch's long poll as Apache Kafka 4.3.1's DelayedShareFetch, over a real socket to a broker process: a
record made available again (RELEASE) completes a share fetch already waiting on its partition, before the
releasing member's own fetch; records are acquired once, when the fetch completes, within one MaxRecords budget,
each log batch once."""

from __future__ import annotations

import threading
import time
from typing import Any

from minikafka.broker.share.share_types import ShareAcquireMode
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import Record, build_batch, iter_batches
from minikafka.protocol.schemas import ShareFetchRequest, ShareFetchResponse
from tests.broker.share.test_share_wire import (
    RELEASE,
    acquired,
    join,
    produce_records,
    record_offsets,
    share_fetch,
    topic_id,
)
from tests.broker.test_fetch_wire import create_topic, produce
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def in_background(call: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    return thread, out


def test_a_released_record_completes_a_fetch_already_waiting(broker: BrokerProcess) -> None:
    """m2 waits in a ShareFetch; m1's next ShareFetch releases a record: m2's waiting fetch gets it (Kafka completes
    the delayed fetch as the record becomes available), m1's own fetch does not."""
    with WireClient(broker.bootstrap) as m1, WireClient(broker.bootstrap) as m2:
        create_topic(m1, "q")
        tid = topic_id(m1, "q")
        join(m1, "g", "m1", "q")
        join(m2, "g", "m2", "q")
        assert share_fetch(m1, "g", "m1", 0, tid).error_code == ErrorCode.NONE
        assert share_fetch(m2, "g", "m2", 0, tid).error_code == ErrorCode.NONE
        produce_records(m1, "q", 3)
        assert acquired(share_fetch(m1, "g", "m1", 1, tid, max_wait_ms=2000)) == [(0, 2, 1)]
        started = time.monotonic()
        thread, waited = in_background(lambda: share_fetch(m2, "g", "m2", 1, tid, max_wait_ms=10_000))
        time.sleep(1.0)  # m2's fetch is waiting: nothing is available
        assert waited == []
        mine = share_fetch(m1, "g", "m1", 2, tid, acks=[(1, 1, [RELEASE])], max_wait_ms=0)
        thread.join(10)
        assert time.monotonic() - started < 8
        assert acquired(waited[0]) == [(1, 1, 2)]
        assert record_offsets(waited[0]) == [0, 1, 2]  # the whole log batch holding offset 1
        assert acquired(mine) == []


def test_the_long_poll_acquires_once_within_one_record_limit(broker: BrokerProcess) -> None:
    """A fetch waiting for MinBytes while records trickle in acquires at completion, at most MaxRecords in
    record_limit mode, and returns each log batch once; nothing is held before it completes."""
    with WireClient(broker.bootstrap) as client, WireClient(broker.bootstrap) as producer:
        create_topic(client, "q")
        tid = topic_id(client, "q")
        join(client, "g", "m1", "q")
        assert share_fetch(client, "g", "m1", 0, tid).error_code == ErrorCode.NONE
        produce_records(client, "q", 2)
        req = ShareFetchRequest[2]
        request = req(
            group_id="g", member_id="m1", share_session_epoch=1, max_wait_ms=2500, min_bytes=1 << 20,
            max_bytes=1 << 20, max_records=3, batch_size=3, share_acquire_mode=ShareAcquireMode.RECORD_LIMIT.value,
            is_renew_ack=False, topics=[req.FetchTopic(topic_id=tid, partitions=[
                req.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=[])])],
            forgotten_topics_data=[])
        thread, out = in_background(lambda: client.request(request, ShareFetchResponse[2]))
        for n in range(5):  # one batch of one record each, while the fetch waits
            time.sleep(0.2)
            produce(producer, "q", 0, build_batch([Record(0, 1_700_000_000_000, b"k", b"late-%d" % n)],
                                                  base_offset=0))
        thread.join(10)
        (response,) = out
        ranges = acquired(response)
        assert sum(last - first + 1 for first, last, _count in ranges) == 3
        assert ranges == [(0, 2, 1)]
        batches = [b.base_offset for t in response.responses for p in t.partitions if p.records
                   for b in iter_batches(bytes(p.records))]
        assert len(batches) == len(set(batches))

"""A full disk under the coordinators, topic creation and the cleaner (issue 13, item 1).

A broker on a 40 MiB tmpfs, filled to the last byte by a ballast file. While the disk is full:
- an offset commit whose `__consumer_offsets` append fails answers NOT_COORDINATOR (Kafka's mapping of
  KAFKA_STORAGE_ERROR) and the group keeps its previous offsets;
- a transaction whose `__transaction_state` append fails cannot commit and stays Ongoing;
- CreateTopics answers KAFKA_STORAGE_ERROR and leaves neither a registered topic nor a directory behind;
- a manual compaction fails (its roll cannot write) without killing a cleaner thread, and the cleaner's own round
  fails (no room for the cleaned segment) without leftovers and without marking the partition uncleanable.
Once the ballast is deleted every one of these succeeds without a restart, and a restart finds exactly the
committed state. The records are sized so that each failing write needs whole new pages: a write that fits in a
file's last, partly used page succeeds even on a full tmpfs.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest

from minikafka.testing import MiniKafka
from tests.integration.client_drivers import create_topic, read_committed_values
from tests.integration.small_filesystem import fill_up, leftovers
from tests.wire_client import NOT_COORDINATOR, WireClient

WIDE = "wide"
WIDE_PARTITIONS = 32
COMPACTED = "compacted"
#: 32 partitions x 2,000 bytes of metadata: a 64 KB commit batch, far more than a page.
METADATA = "m" * 2000
#: A 10,000-character transactional id makes every `__transaction_state` record span new pages.
TRANSACTIONAL_ID = "tx-" + "x" * 10_000
MIN_LAG_MS = 8000
KAFKA_STORAGE_ERROR = 56


def commit(client: WireClient, group: str, offset: int, *, until_ready: bool = False) -> set[int]:
    """The commit's partition error codes; `until_ready` retries what clients retry (not while the disk is full,
    where NOT_COORDINATOR is the answer under test)."""
    cls = OffsetCommitRequest[8]
    request = cls(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, topics=[
        cls.OffsetCommitRequestTopic(name=WIDE, partitions=[
            cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=METADATA)
            for p in range(WIDE_PARTITIONS)])])
    response = client.request_until_ready(request) if until_ready else client.request(request)
    return {p.error_code for t in response.topics for p in t.partitions}


def committed(client: WireClient, group: str) -> set[int]:
    cls = OffsetFetchRequest[7]
    response = client.request_until_ready(cls(group_id=group, require_stable=False, topics=[
        cls.OffsetFetchRequestTopic(name=WIDE, partition_indexes=list(range(WIDE_PARTITIONS)))]))
    assert response.error_code == 0
    return {p.committed_offset for t in response.topics for p in t.partitions}


def transaction_state(client: WireClient) -> str:
    response = client.request_until_ready(DescribeTransactionsRequest[0](transactional_ids=[TRANSACTIONAL_ID]))
    state = response.transaction_states[0]
    assert state.error_code == 0
    return str(state.transaction_state)


def create_topic_error(client: WireClient, name: str) -> int:
    cls = CreateTopicsRequest[7]
    response = client.request(cls(topics=[cls.CreatableTopic(name=name, num_partitions=3, replication_factor=1,
                                                              assignments=[], configs=[])],
                                  timeout_ms=10_000, validate_only=False))
    return int(response.topics[0].error_code)


def compact(kafka: MiniKafka) -> dict[str, Any]:
    """The manual compaction's result for the compacted topic's one partition."""
    request = urllib.request.Request(f"{kafka.admin_url}/admin/compact?topic={COMPACTED}&wait=true&timeout_ms=30000",
                                     data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        body = json.loads(response.read())
    assert body["done"], body
    return dict(body["results"][0])


def cleaner_state(kafka: MiniKafka) -> dict[str, Any]:
    with urllib.request.urlopen(f"{kafka.admin_url}/admin/cleaner-state?topic={COMPACTED}", timeout=10) as response:
        return dict(json.loads(response.read())["partitions"][0])


def wait_for(probe: Callable[[], Any], timeout_s: float) -> Any:
    """The first truthy value of `probe`, polled every 0.2 s."""
    deadline = time.monotonic() + timeout_s
    while not (value := probe()):
        assert time.monotonic() < deadline, f"nothing within {timeout_s} s"
        time.sleep(0.2)
    return value


@pytest.mark.timeout(240)
def test_coordinators_topic_creation_and_the_cleaner_on_a_full_disk(small_log_dir: Path) -> None:
    kafka = MiniKafka({"num.partitions": 1, "offsets.topic.num.partitions": 1,
                       "transaction.state.log.num.partitions": 1, "log.cleaner.backoff.ms": 200},
                      data_dir=small_log_dir)
    kafka.start()
    try:
        bootstrap = kafka.bootstrap_servers
        create_topic(bootstrap, WIDE, WIDE_PARTITIONS)
        # Cleanable only MIN_LAG_MS after being written: the cleaner's first round comes once the disk is full.
        create_topic(bootstrap, COMPACTED, 1, {"cleanup.policy": "compact", "segment.bytes": str(64 * 1024),
                                                "min.compaction.lag.ms": str(MIN_LAG_MS)})
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "batch.size": 16 * 1024})
        errors: list[object] = []
        for n in range(400):
            producer.produce(COMPACTED, key=b"k%d" % (n % 20), value=b"%d:" % n + b"v" * 1024,
                             on_delivery=lambda error, _message: error and errors.append(error))
        assert producer.flush(30) == 0 and errors == []
        txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID,
                        "transaction.timeout.ms": 120_000})
        txn.init_transactions(30)
        txn.begin_transaction()
        for n in range(3):
            txn.produce(WIDE, value=b"txn-%d" % n, partition=0)
        assert txn.flush(30) == 0
        with WireClient(bootstrap) as client:
            assert commit(client, "g", 5, until_ready=True) == {0}
            assert transaction_state(client) == "Ongoing"

            ballast = small_log_dir / "ballast"
            fill_up(ballast)

            assert commit(client, "g", 8) == {NOT_COORDINATOR}
            assert committed(client, "g") == {5}, "a failed commit changed the group's offsets"
            with pytest.raises(KafkaException) as failed_commit:
                txn.commit_transaction(5)
            assert failed_commit.value.args[0].retriable(), failed_commit.value
            assert transaction_state(client) == "Ongoing"
            assert read_committed_values(bootstrap, WIDE, 0) == []
            assert create_topic_error(client, "born-on-a-full-disk") == KAFKA_STORAGE_ERROR
            assert not list(small_log_dir.glob("born-on-a-full-disk-*"))
            assert create_topic_error(client, "born-on-a-full-disk") == KAFKA_STORAGE_ERROR  # not "already exists"
            # The request's roll fails when the new segment's first index pages find no room (it may find room in
            # pages already in use); either way the cleaner thread must live on to run the round below.
            request = compact(kafka)
            assert request["status"] == "nothing_to_clean" or (
                request["status"] == "failed" and "No space left" in request["error"]), request
            wait_for(lambda: cleaner_state(kafka)["cleaning_failure"], MIN_LAG_MS / 1000 + 30)
            # More failed rounds than the retries an ordinary failure gets, and still not uncleanable.
            failure = wait_for(lambda: (f := cleaner_state(kafka)["cleaning_failure"]) and f["failed_rounds"] > 4 and f,
                               30)
            assert "No space left" in failure["reason"] and not failure["uncleanable"], failure
            assert leftovers(small_log_dir) == []
            assert cleaner_state(kafka)["cleaner_checkpoint_offset"] is None

            ballast.unlink()
            assert commit(client, "g", 8, until_ready=True) == {0}
            assert committed(client, "g") == {8}
            txn.commit_transaction(30)
            assert transaction_state(client) == "CompleteCommit"
            assert create_topic_error(client, "born-on-a-full-disk") == 0
            cleaned = wait_for(lambda: cleaner_state(kafka)["cleaner_checkpoint_offset"], 30)
            assert cleaned > 0 and cleaner_state(kafka)["cleaning_failure"] is None

        assert read_committed_values(bootstrap, WIDE, 0) == [b"txn-0", b"txn-1", b"txn-2"]
        kafka.restart()
        with WireClient(kafka.bootstrap_servers) as client:
            assert committed(client, "g") == {8}
            assert transaction_state(client) == "CompleteCommit"
            assert create_topic_error(client, "born-on-a-full-disk") == 36  # TOPIC_ALREADY_EXISTS
        assert read_committed_values(kafka.bootstrap_servers, WIDE, 0) == [b"txn-0", b"txn-1", b"txn-2"]
        latest = {}
        for value in read_committed_values(kafka.bootstrap_servers, COMPACTED, 0):
            latest[int(value.split(b":")[0]) % 20] = value
        assert len(latest) == 20 and all(int(v.split(b":")[0]) >= 380 for v in latest.values())
        assert leftovers(small_log_dir) == []
    finally:
        kafka.stop()

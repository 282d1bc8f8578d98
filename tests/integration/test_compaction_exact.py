"""Exact compaction through the admin port of a real broker subprocess (issue 10, broker side):
`GET /admin/cleaner-state` gives the topic id and the range end, a plan computed from a read_committed consumer is
streamed to `POST /admin/compact?exact=true`, and every refusal is a 4xx with a clear message that deletes nothing."""

from __future__ import annotations

import base64
import json
import socket
import struct
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import crc32c
import pytest

from tests.broker_process import BrokerProcess
from tests.cleaner.retained_offset_plans import latest_offsets, write_plan
from tests.integration.client_drivers import create_topic
from tests.integration.test_compaction import FAST_CLEANER, BrokerFactory, consume_all, produce
from tests.segment_files import batch_data

pytestmark = pytest.mark.timeout(180)

QUIET_CLEANER = {**FAST_CLEANER, "log.cleaner.backoff.ms": "60000"}
TOPIC_CONFIG = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1.0", "delete.retention.ms": "600000"}
PLANS_DIR = ".compaction-plans"


def cleaner_state(broker: BrokerProcess, topic: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/admin/cleaner-state?topic={topic}",
                                timeout=10) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body


def post_plan(broker: BrokerProcess, query: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    """POST /admin/compact with `body` (urllib sends its Content-Length); (status, JSON reply)."""
    url = f"http://127.0.0.1:{broker.metrics_port}/admin/compact?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def raw_post(broker: BrokerProcess, target: str, headers: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """A hand-written request (to send a Content-Length urllib would not, or none); (status, JSON reply)."""
    with socket.create_connection(("127.0.0.1", broker.metrics_port), timeout=30) as connection:
        connection.sendall(f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode() + body)
        connection.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    head, _, reply = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(reply)


def committed_plan(broker: BrokerProcess, topic: str, start: int, end: int) -> list[int]:
    """The plan of [start, end), from what a read_committed consumer (librdkafka's default) returns."""
    return latest_offsets((offset, key) for offset, key, _ in consume_all(broker.bootstrap, topic)
                          if start <= offset < end)


def plan_bytes(tmp_path: Path, topic_id: bytes, partition: int, start: int, end: int, offsets: list[int]) -> bytes:
    return write_plan(tmp_path / "plan", topic_id, partition, start, end, offsets).read_bytes()


def raw_plan(topic_id: bytes, partition: int, start: int, end: int, offsets: list[int]) -> bytes:
    """Any offsets (unsorted too), with a correct checksum."""
    head = struct.pack(">8s16siqq", b"MKPLAN1\n", topic_id, partition, start, end)
    body = b"".join(struct.pack(">q", o) for o in offsets)
    return head + body + struct.pack(">qI", len(offsets), crc32c.crc32c(head + body))


def partition_files(broker: BrokerProcess, topic: str, partition: int = 0) -> dict[str, bytes]:
    """The batches of every non-empty segment and the bytes of every transaction index (a round may roll a new empty
    segment, and trims the zeros the active one was filled ahead with)."""
    directory = broker.data_dir / f"{topic}-{partition}"
    files = {p.name: batch_data(p) if p.suffix == ".log" else p.read_bytes() for p in sorted(directory.iterdir())
             if p.suffix in (".log", ".txnindex")}
    return {name: data for name, data in files.items() if data}


def transaction(broker: BrokerProcess, topic: str, pairs: list[tuple[bytes, bytes]], *, commit: bool) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"exact-{uuid.uuid4().hex[:8]}",
                         "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for key, value in pairs:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def test_a_plan_streamed_to_the_admin_port_cleans_one_round_to_one_record_per_key(
        broker_factory: BrokerFactory, tmp_path: Path) -> None:
    broker = broker_factory(QUIET_CLEANER)
    topic = "exact"
    create_topic(broker.bootstrap, topic, 1, TOPIC_CONFIG)
    for version in range(3):
        produce(broker.bootstrap, topic, [(b"k%03d" % i, None if version == 2 and i % 10 == 0 else b"v%d" % version)
                                          for i in range(200)])
    transaction(broker, topic, [(b"k%03d" % i, b"committed") for i in range(10)], commit=True)
    transaction(broker, topic, [(b"k%03d" % i, b"aborted") for i in range(10, 20)], commit=False)

    state = cleaner_state(broker, topic)
    topic_id = uuid.UUID(hex=state["topic_id_hex"])
    assert state["topic_id"] == base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")  # as Kafka prints it
    assert uuid.UUID(state["topic_id_uuid"]) == topic_id
    (partition,) = state["partitions"]
    end = partition["exact_end_offset_limit"]
    assert end == partition["last_stable_offset"] == partition["log_end_offset"]  # the broker rolls first
    assert partition["first_uncleanable_offset"] == 0  # what an ordinary round could reach now: the active segment
    before = consume_all(broker.bootstrap, topic)
    latest = {key: value for _, key, value in before}

    # A plan computed without read_committed names an aborted write: the round refuses it, deleting nothing.
    files = partition_files(broker, topic)
    uncommitted_plan = latest_offsets((o, k) for o, k in _all_data_offsets(broker, topic) if o < end)
    status, reply = post_plan(broker, {"topic": topic, "partition": "0", "exact": "true", "wait": "true"},
                              plan_bytes(tmp_path, topic_id.bytes, 0, 0, end, uncommitted_plan))
    assert status == 400 and "a record of an aborted transaction" in reply["error"], reply
    assert reply["results"][0]["status"] == "refused" and partition_files(broker, topic) == files

    plan = committed_plan(broker, topic, 0, end)
    assert len(plan) == 200
    status, reply = post_plan(broker, {"topic": topic, "partition": "0", "exact": "true", "wait": "true"},
                              plan_bytes(tmp_path, topic_id.bytes, 0, 0, end, plan))
    assert status == 200, reply
    assert reply["done"] and reply["exact"] and reply["plan"] == {"count": 200, "start_offset": 0, "end_offset": end}
    (result,) = reply["results"]
    assert (result["status"], result["rounds"], result["end_offset"]) == ("cleaned", 1, end)
    assert reply["records_removed"] == result["records_removed"] > 400 and reply["bytes_removed"] > 0

    after = consume_all(broker.bootstrap, topic)
    assert [offset for offset, _, _ in after] == plan  # one record per key: the latest (tombstones until horizon)
    assert {key: value for _, key, value in after} == latest
    assert not list((broker.data_dir / PLANS_DIR).iterdir())  # the upload is gone once applied
    assert cleaner_state(broker, topic)["partitions"][0]["cleaner_checkpoint_offset"] == end
    assert "Beginning exact cleaning of log exact-0 with a plan of 200 offsets" in broker.read_log()


def _all_data_offsets(broker: BrokerProcess, topic: str) -> list[tuple[int, bytes]]:
    """(offset, key) of every data record, aborted ones included (a read_uncommitted consumer)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"u-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": "read_uncommitted",
                         "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[tuple[int, bytes]] = []
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of partition"
            if message.error() is not None:
                break  # _PARTITION_EOF
            got.append((int(message.offset() or 0), message.key() or b""))
        return got
    finally:
        consumer.close()


def test_refused_plans_are_400s_that_delete_nothing(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    broker = broker_factory(QUIET_CLEANER)
    topic = "refuse"
    create_topic(broker.bootstrap, topic, 2, TOPIC_CONFIG)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for version in range(3):
        for i in range(50):
            producer.produce(topic, key=b"k%d" % i, value=b"v%d" % version, partition=0)
    assert producer.flush(30) == 0
    state = cleaner_state(broker, topic)
    topic_id = uuid.UUID(hex=state["topic_id_hex"]).bytes
    end = state["partitions"][0]["exact_end_offset_limit"]
    assert end == 150
    plan = committed_plan(broker, topic, 0, end)
    good = plan_bytes(tmp_path, topic_id, 0, 0, end, plan)
    before, files = consume_all(broker.bootstrap, topic), partition_files(broker, topic)
    flipped = bytearray(good)
    flipped[60] ^= 0x01
    exact = {"topic": topic, "partition": "0", "exact": "true", "wait": "true"}
    cases: list[tuple[dict[str, str], bytes, int, str]] = [
        (exact, plan_bytes(tmp_path, uuid.uuid4().bytes, 0, 0, end, plan), 400, "plan is for topic id"),
        (exact, plan_bytes(tmp_path, topic_id, 1, 0, end, plan), 400, "plan is for partition 1, not 0"),
        (exact, plan_bytes(tmp_path, topic_id, 0, 0, end + 5, plan), 400,
         "plan range [0, 155) is outside what refuse-0 can clean now: [0, 150)"),
        (exact, raw_plan(topic_id, 0, 0, end, [plan[1], plan[0], *plan[2:]]), 400,
         "plan offsets are not strictly increasing (unsorted)"),
        (exact, good[:-20] + good[-12:], 400, "truncated or corrupt: its trailer counts 50 offsets, its size holds 49"),
        (exact, good[:-3], 400, "is not a retained-offset plan (its size is 44 + 8 * count + 12 bytes)"),
        (exact, bytes(flipped), 400, "plan is corrupt: CRC-32C"),
        (exact, b"NOTAPLAN" + good[8:], 400, "not a retained-offset plan: magic b'NOTAPLAN'"),
        ({**exact, "partition": "7"}, good, 404, "Partition refuse-7 does not exist"),
        ({"topic": topic, "exact": "true"}, good, 400, "exact compaction needs a partition parameter"),
        ({**exact, "topic": "nope"}, good, 404, "Topic nope does not exist"),
    ]
    for query, body, expected_status, message in cases:
        status, reply = post_plan(broker, query, body)
        assert (status, message in reply.get("error", "")) == (expected_status, True), (message, status, reply)
    target = f"/admin/compact?topic={topic}&partition=0&exact=true"
    status, reply = raw_post(broker, target, "Content-Length: 1000000000000\r\n")  # no body follows
    assert status == 413 and f"has more offsets than {topic}-0" in reply["error"], reply
    status, reply = raw_post(broker, target, "")
    assert status == 411 and "Content-Length" in reply["error"], reply
    status, reply = raw_post(broker, target, f"Content-Length: {len(good) + 8}\r\n", good)  # 8 bytes never come
    assert status == 400 and "8 bytes short of its Content-Length" in reply["error"], reply

    assert consume_all(broker.bootstrap, topic) == before and partition_files(broker, topic) == files
    assert not list((broker.data_dir / PLANS_DIR).iterdir())
    assert cleaner_state(broker, topic)["partitions"][0]["cleaner_checkpoint_offset"] is None
    status, reply = post_plan(broker, exact, good)  # and the good plan still applies
    assert status == 200 and reply["results"][0]["status"] == "cleaned", reply
    assert [o for o, _, _ in consume_all(broker.bootstrap, topic)] == plan == list(range(100, 150))

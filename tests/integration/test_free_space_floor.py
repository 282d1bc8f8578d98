"""`minikafka.log.dir.min.free.bytes` on a real 40 MiB tmpfs (issue 13, item 1): client appends are refused with
KAFKA_STORAGE_ERROR once they would leave less than the floor, so the disk never fills; offset commits (an internal
topic) still succeed below the floor; deleting the ballast lets the very next append through."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError, Producer
from kafka.protocol.consumer.group import OffsetCommitRequest

from minikafka.testing import MiniKafka
from tests.integration.client_drivers import create_topic
from tests.integration.small_filesystem import fill_up, free_bytes
from tests.wire_client import WireClient

FLOOR_BYTES = 8 * 1024 * 1024
HEADROOM_BYTES = 4 * 1024 * 1024
VALUE = b"v" * 1024
TOPIC = "floored"


def produce(bootstrap: str, count: int, start: int) -> tuple[list[int], list[KafkaError]]:
    """(acknowledged offsets, errors) of `count` 1 KiB records from a non-retrying acks=all producer."""
    acked: list[int] = []
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: object) -> None:
        if error is None:
            acked.append(message.offset())  # type: ignore[attr-defined]
        else:
            errors.append(error)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0, "enable.idempotence": False,
                         "linger.ms": 5})
    for n in range(start, start + count):
        producer.produce(TOPIC, key=b"k%d" % n, value=VALUE, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return acked, errors


def commit(bootstrap: str, offset: int, *, until_ready: bool = False) -> int:
    """A simple commit's error code; `until_ready`: resent while the group coordinator loads (the first one)."""
    cls = OffsetCommitRequest[8]
    partition = cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")
    request = cls(group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                  topics=[cls.OffsetCommitRequestTopic(name=TOPIC, partitions=[partition])])
    with WireClient(bootstrap) as client:
        response = client.request_until_ready(request) if until_ready else client.request(request)
    return int(response.topics[0].partitions[0].error_code)


def test_client_appends_stop_at_the_floor_and_resume_once_space_is_back(small_log_dir: Path) -> None:
    kafka = MiniKafka({"minikafka.log.dir.min.free.bytes": FLOOR_BYTES, "num.partitions": 1,
                       "offsets.topic.num.partitions": 1}, data_dir=small_log_dir)
    kafka.start()
    try:
        bootstrap = kafka.bootstrap_servers
        create_topic(bootstrap, TOPIC, 1)
        assert commit(bootstrap, 0, until_ready=True) == 0  # __consumer_offsets exists before the disk gets tight
        ballast = small_log_dir / "ballast"
        fill_up(ballast, leave_bytes=FLOOR_BYTES + HEADROOM_BYTES)

        acked, errors = produce(bootstrap, 8 * 1024, 0)
        assert errors, "the floor never refused an append"
        assert {error.code() for error in errors} == {KafkaError.KAFKA_STORAGE_ERROR}
        assert sorted(acked) == list(range(len(acked)))
        assert HEADROOM_BYTES // 2 < len(acked) * len(VALUE) <= HEADROOM_BYTES
        assert free_bytes(small_log_dir) >= FLOOR_BYTES - 1024 * 1024, "the disk was filled past the floor"
        assert commit(bootstrap, len(acked)) == 0, "internal topics are not held to the floor"

        ballast.unlink()
        after, errors = produce(bootstrap, 100, len(acked))
        assert errors == [] and sorted(after) == list(range(len(acked), len(acked) + 100))
    finally:
        kafka.stop()

"""A full disk (issue 13): a broker whose log dir is a 40 MiB tmpfs, an acks=all producer writing 1 KiB records
until the disk fills. The failed appends answer KAFKA_STORAGE_ERROR and change nothing; reads are served
throughout; once space is freed the very next append succeeds, with no restart; nothing acknowledged is lost, also
across a restart; no temporary file is left behind.

Needs root to mount a tmpfs; skipped with that reason elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from minikafka.testing import MiniKafka
from tests.integration.small_filesystem import FILESYSTEM_BYTES, leftovers

BALLAST_BYTES = 4 * 1024 * 1024
VALUE = b"v" * 1024
TOPIC = "fill"
FAILURES_WANTED = 50


class AckLog:
    """Delivery reports of a non-retrying acks=all producer: what was acknowledged at which offset, and the
    errors of what was not."""

    def __init__(self) -> None:
        self.acked: dict[int, bytes] = {}
        self.errors: list[KafkaError] = []

    def __call__(self, error: KafkaError | None, message: object) -> None:
        if error is not None:
            self.errors.append(error)
        else:
            self.acked[message.offset()] = message.key()  # type: ignore[attr-defined]


def producer(bootstrap: str) -> Producer:
    # retries=0: each KAFKA_STORAGE_ERROR reaches the delivery report instead of being retried by librdkafka.
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False, "retries": 0,
                     "linger.ms": 5, "message.timeout.ms": 10_000})


def produce_until_full(bootstrap: str, acks: AckLog) -> None:
    """Chunks of 500 records, each flushed, until FAILURES_WANTED appends have failed."""
    client = producer(bootstrap)
    n = 0
    while len(acks.errors) < FAILURES_WANTED:
        assert n < 2 * FILESYSTEM_BYTES // len(VALUE), "the disk never filled"
        for _ in range(500):
            client.produce(TOPIC, key=b"k%d" % n, value=VALUE, on_delivery=acks)
            n += 1
        assert client.flush(30) == 0


def read_all(bootstrap: str) -> dict[int, bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "disk-full-reader", "enable.auto.commit": False,
                         "enable.partition.eof": True, "fetch.max.bytes": 4 * 1024 * 1024})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    found: dict[int, bytes] = {}
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "the fetch did not reach the end of the partition"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return found
            assert message.value() == VALUE
            found[message.offset()] = message.key()
    finally:
        consumer.close()


def test_a_full_disk_fails_appends_cleanly_serves_reads_and_recovers_without_a_restart(small_log_dir: Path) -> None:
    ballast = small_log_dir / "ballast"
    ballast.write_bytes(b"\0" * BALLAST_BYTES)
    # 4 MiB segments: the disk also fills across rolls (new segment files, producer-state snapshots).
    kafka = MiniKafka({"log.segment.bytes": 4 * 1024 * 1024, "num.partitions": 1}, data_dir=small_log_dir)
    kafka.start()
    try:
        acks = AckLog()
        produce_until_full(kafka.bootstrap_servers, acks)
        assert {error.code() for error in acks.errors} == {KafkaError.KAFKA_STORAGE_ERROR}
        assert len(acks.acked) > 30_000, "the disk filled far too early"
        assert sorted(acks.acked) == list(range(len(acks.acked))), "acknowledged offsets have gaps"
        assert "Taking the log" not in kafka.read_log(), "a full disk took the partition offline"

        assert read_all(kafka.bootstrap_servers) == acks.acked, "reads while the disk is full"

        ballast.unlink()
        after = AckLog()
        client = producer(kafka.bootstrap_servers)
        client.produce(TOPIC, key=b"after-0", value=VALUE, on_delivery=after)
        assert client.flush(30) == 0
        assert after.errors == [], "the first append after freeing space failed"
        for n in range(1, 100):
            client.produce(TOPIC, key=b"after-%d" % n, value=VALUE, on_delivery=after)
        assert client.flush(30) == 0
        assert after.errors == [] and sorted(after.acked) == list(range(len(acks.acked), len(acks.acked) + 100))
        expected = {**acks.acked, **after.acked}

        assert read_all(kafka.bootstrap_servers) == expected
        assert leftovers(small_log_dir) == []
        kafka.restart()
        assert read_all(kafka.bootstrap_servers) == expected, "after a restart"
        assert leftovers(small_log_dir) == []
    finally:
        kafka.stop()

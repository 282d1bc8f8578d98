"""`minikafka erase` against a real broker (broker/erase_cli.py, broker/erasure.py): the receipt says verified
only when a byte search of the partition's directory — every file, `.deleted` leftovers too — finds no older value
of the key; while `min.compaction.lag.ms` (or `file.delete.delay.ms`) holds one it says not verified, why, and exits
non-zero."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.broker.__main__ import main as minikafka_main
from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(180)
DELETE_DELAY_MS = 3000


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    config = {"log.cleaner.backoff.ms": 200, "minikafka.log.roll.check.interval.ms": 200,
              "log.segment.delete.delay.ms": DELETE_DELAY_MS}
    with MiniKafka(config) as broker:
        yield broker


def new_topic(kafka: MiniKafka, partitions: int, **config: str) -> str:
    topic = f"erase-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    configs = {"cleanup.policy": "compact", "delete.retention.ms": "600000", **config}
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(30)
    return topic


def produce(kafka: MiniKafka, topic: str, pairs: list[tuple[bytes, bytes]]) -> dict[bytes, int]:
    """Produce with the Java client's partitioner (murmur2); the partition each key went to."""
    partitions: dict[bytes, int] = {}
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "partitioner": "murmur2_random",
                         "linger.ms": 0})

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        partitions[message.key()] = message.partition()

    for key, value in pairs:
        producer.produce(topic, key=key, value=value, on_delivery=delivered)
    assert producer.flush(30) == 0
    return partitions


def bytes_on_disk(kafka: MiniKafka, topic: str, partition: int, needle: bytes) -> list[str]:
    """The files of the partition directory whose raw bytes contain `needle` (the records are uncompressed)."""
    directory = kafka.data_dir / f"{topic}-{partition}"
    return sorted(p.name for p in directory.iterdir() if p.is_file() and needle in p.read_bytes())


def erase(kafka: MiniKafka, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = minikafka_main(["erase", "--admin-url", kafka.admin_url, *args])
    out, err = capsys.readouterr()
    receipt = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    return code, receipt, err


def latest_values(kafka: MiniKafka, topic: str, partition: int) -> dict[bytes, bytes | None]:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    latest: dict[bytes, bytes | None] = {}
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    position = 0
    while position < high:
        message = consumer.poll(5)
        assert message is not None and message.error() is None
        latest[message.key()] = message.value()
        position = message.offset() + 1
    consumer.close()
    return latest


def test_erase_is_verified_only_once_no_older_value_is_left_on_disk(
        kafka: MiniKafka, capsys: pytest.CaptureFixture[str]) -> None:
    topic = new_topic(kafka, 3, **{"min.compaction.lag.ms": "0"})
    secret = b"secret-of-user-42"
    pairs = [(f"user-{i % 10}".encode(), f"value-{i}".encode()) for i in range(60)]
    pairs += [(b"user-42", secret + b"-v%d" % version) for version in range(5)]
    partitions = produce(kafka, topic, pairs)
    partition = partitions[b"user-42"]
    assert bytes_on_disk(kafka, topic, partition, secret) == ["00000000000000000000.log"]

    # One attempt: the cleaner removed the values from the log, but the replaced segment waits as .deleted.
    code, receipt, err = erase(kafka, capsys, "--topic", topic, "--key", "user-42")
    leftovers = bytes_on_disk(kafka, topic, partition, secret)
    assert code == 1 and receipt["verified"] is False, (receipt, err)
    assert leftovers and all(name.endswith(".deleted") for name in leftovers), leftovers
    assert "file.delete.delay.ms" in receipt["reason"] and "not verified" in err
    assert {r["file"] for r in receipt["older_records_on_disk"]} == set(leftovers)
    assert receipt["partition"] == partition and receipt["key_sha256"] == hashlib.sha256(b"user-42").hexdigest()
    assert b"user-42" not in json.dumps(receipt).encode()  # the key is named by its hash only

    # --wait: the same tombstone, verified once the .deleted segment is unlinked.
    code, receipt, err = erase(kafka, capsys, "--topic", topic, "--key", "user-42", "--wait", "--timeout", "30")
    assert code == 0 and receipt["verified"] is True, (receipt, err)
    assert bytes_on_disk(kafka, topic, partition, secret) == []
    assert receipt["segments_scanned"] >= 1 and receipt["verified_at"] and receipt["tombstone_removable_after"]
    assert receipt["delete_retention_ms"] == 600000 and receipt["older_records_on_disk"] == []
    for field in ("topic", "partition", "key_sha256", "tombstone_offset", "requested_at", "verified",
                  "verified_at", "segments_scanned"):
        assert field in receipt
    latest = latest_values(kafka, topic, partition)
    assert latest[b"user-42"] is None  # the tombstone is served until delete.retention.ms has passed
    assert all(value is not None for key, value in latest.items() if key != b"user-42")


def test_min_compaction_lag_holds_the_record_and_the_receipt_says_so(
        kafka: MiniKafka, capsys: pytest.CaptureFixture[str]) -> None:
    topic = new_topic(kafka, 1, **{"min.compaction.lag.ms": "600000"})
    secret = b"held-secret-value"
    produce(kafka, topic, [(b"\x00\xffbin", secret), (b"other", b"x")])
    code, receipt, err = erase(kafka, capsys, "--topic", topic, "--key-hex", "00ff62696e", "--wait",
                               "--timeout", "3")
    assert code == 1 and receipt["verified"] is False and receipt["verified_at"] is None
    assert "min.compaction.lag.ms=600000" in receipt["reason"] and "min.compaction.lag.ms=600000" in err
    assert receipt["min_compaction_lag_ms"] == 600000 and receipt["retry_after_ms"] > 590_000
    assert [r["offset"] for r in receipt["older_records_on_disk"]] == [0]
    assert bytes_on_disk(kafka, topic, 0, secret) == ["00000000000000000000.log"]


def test_a_tombstone_produced_over_kafka_and_refusals(kafka: MiniKafka, capsys: pytest.CaptureFixture[str]) -> None:
    topic = new_topic(kafka, 2, **{"min.compaction.lag.ms": "0", "file.delete.delay.ms": "0"})
    partitions = produce(kafka, topic, [(b"k", b"old-value-over-kafka"), (b"k", b"newer-value-over-kafka")])
    code, receipt, err = erase(kafka, capsys, "--topic", topic, "--key", "k", "--wait", "--timeout", "30",
                               "--bootstrap-servers", kafka.bootstrap_servers)
    assert code == 0 and receipt["verified"], (receipt, err)
    assert receipt["partition"] == partitions[b"k"] and receipt["tombstone_offset"] == 2
    assert bytes_on_disk(kafka, topic, partitions[b"k"], b"value-over-kafka") == []

    code, _, err = erase(kafka, capsys, "--topic", "no-such-topic", "--key", "k")
    assert code == 1 and "HTTP 404" in err and "no-such-topic" in err
    plain = f"plain-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(plain, 1, 1)])[plain].result(30)
    code, _, err = erase(kafka, capsys, "--topic", plain, "--key", "k")
    assert code == 1 and "HTTP 400" in err and "compact" in err
    assert latest_values(kafka, plain, 0) == {}  # refused before any tombstone was written


def test_with_security_erase_needs_the_admin_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.integration.test_admin_http_auth import ScramBootstrappedKafka

    config = {"sasl.enabled.mechanisms": "SCRAM-SHA-256", "super.users": "User:admin",
              "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with ScramBootstrappedKafka(config, {"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
                                ["SCRAM-SHA-256=[name=admin,password=admin-secret]"]) as secured:
        code, receipt, err = erase(secured, capsys, "--topic", "t", "--key", "k")
        assert (code, receipt) == (1, {}) and "HTTP 401" in err and "--admin-user" in err
        code, _, err = erase(secured, capsys, "--topic", "t", "--key", "k", "--admin-user", "admin",
                             "--admin-password", "admin-secret")
        assert code == 1 and "HTTP 404" in err and "Topic t does not exist" in err  # past the check

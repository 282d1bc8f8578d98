"""When a real broker builds and loads its group, share-group and transaction coordinators
(broker/lazy_coordinators.py): at the first request that needs one on a fresh log dir, right after start-up on a
log dir that holds their state.

The broker logs "Loaded N consumer groups" when its coordinators' load ends; that line is the observable here.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from minikafka.broker.groups.offsets_topic import OFFSETS_TOPIC
from minikafka.broker.lazy_coordinators import COORDINATOR_TOPICS
from minikafka.broker.share.share_state_store import SHARE_GROUP_STATE_TOPIC
from minikafka.broker.transactions.transaction_log import TRANSACTION_STATE_TOPIC
from minikafka.testing import MiniKafka

LOADED = "Loaded "


def _produce_one(kafka: MiniKafka, topic: str) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    producer.produce(topic, b"value", key=b"key")
    assert producer.flush(30) == 0


def _wait_for_log(kafka: MiniKafka, text: str, log_offset: int, timeout_s: float = 30.0) -> str:
    deadline = time.monotonic() + timeout_s
    while text not in (tail := kafka.log_tail(log_offset)):
        assert time.monotonic() < deadline, f"{text!r} not in the broker log:\n{tail}"
        time.sleep(0.05)
    return tail


def test_the_topic_names_are_the_coordinators_own() -> None:
    assert COORDINATOR_TOPICS == (OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC)


def test_a_fresh_broker_builds_its_coordinators_at_the_first_group_request_and_loads_them_at_restart(
        tmp_path: Path) -> None:
    with MiniKafka(data_dir=tmp_path / "data") as kafka:
        _produce_one(kafka, "lazy-coordinators")
        time.sleep(0.5)
        assert "consumer groups" not in kafka.log_tail(), "built without a group request"
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "g",
                             "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[TopicPartition("lazy-coordinators", 0, 1)], asynchronous=False)
        finally:
            consumer.close()
        assert "Loaded 0 consumer groups" in _wait_for_log(kafka, LOADED, 0)
        kafka.stop()
        log_offset = kafka.log_path.stat().st_size
        kafka.start()  # __consumer_offsets is in the log dir now: loaded at start-up, no request needed
        assert "Loaded 1 consumer groups" in _wait_for_log(kafka, "consumer groups", log_offset)

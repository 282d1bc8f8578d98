"""Issue 2 "Done when": `kill -9` mid-stream, restart, and every acknowledged record (acks=all) is intact at its
acknowledged offset, offsets are contiguous and the log recovered; a clean SIGTERM exits 0 and loses nothing."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import consume_confluent, create_topic, produce_confluent
from tests.integration.expected_records import ExpectedRecords, digest

PARTITIONS = 2


class BackgroundProducer(threading.Thread):
    """Produces keyed records with acks=all until stopped; records every delivery report. The callbacks run on
    this thread (poll/flush); the main thread only reads `acked` sizes while it runs."""

    def __init__(self, bootstrap: str, topic: str, idempotent: bool) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.stop_event = threading.Event()
        self.acked: dict[tuple[int, int], bytes] = {}  # (partition, offset) -> key
        self.delivery_errors: list[str] = []
        self.fatal_errors: list[str] = []
        self.undelivered = -1
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": idempotent,
            "message.timeout.ms": 60_000, "queue.buffering.max.messages": 50_000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "error_cb": self._on_error,
        })

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.fatal_errors.append(str(err))

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.delivery_errors.append(str(err))
        else:
            previous = self.acked.setdefault((msg.partition(), msg.offset()), msg.key())
            assert previous == msg.key(), f"two records acknowledged at {msg.partition()}/{msg.offset()}"

    def run(self) -> None:
        index = 0
        while not self.stop_event.is_set():
            try:
                self.producer.produce(self.topic, key=b"k%d" % index, value=b"value-%d" % index,
                                      on_delivery=self._on_delivery)
                index += 1
            except BufferError:
                self.producer.poll(0.05)
            if index % 500 == 0:
                self.producer.poll(0)
        self.undelivered = self.producer.flush(90)


def _wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(0.05)


def _high_watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks", "enable.auto.commit": False})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
def test_kill9_mid_stream_keeps_every_acknowledged_record_at_its_offset(
    broker: BrokerProcess, idempotent: bool
) -> None:
    topic = "crash"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    producer = BackgroundProducer(broker.bootstrap, topic, idempotent)
    producer.start()
    try:
        _wait_for(lambda: len(producer.acked) >= 20_000, 120, "20k acknowledged records before the crash")
        broker.kill9()
        acked_at_crash = len(producer.acked)
        log_size_at_crash = len(broker.read_log())
        broker.start()
        # Producing more works after the restart (the same producer reconnects and gets acks again).
        _wait_for(lambda: len(producer.acked) >= acked_at_crash + 10_000, 120, "acks after the restart")
    finally:
        producer.stop_event.set()
        producer.join(120)
    assert not producer.is_alive(), "background producer did not finish flushing"
    assert producer.undelivered == 0
    assert not producer.fatal_errors, producer.fatal_errors

    log_after_restart = broker.read_log()[log_size_at_crash:]
    # The loader announces an unclean load and recovers every segment written since the last flush.
    assert "clean shutdown: False" in log_after_restart and "Recovering unflushed segment" in log_after_restart, (
        f"broker log does not mention recovery after kill -9:\n{log_after_restart[-3000:]}"
    )

    high_watermarks = _high_watermarks(broker.bootstrap, topic)
    consumed = consume_confluent(broker.bootstrap, topic, high_watermarks)
    by_position = {(r.partition, r.offset): r for r in consumed}
    for partition, high_watermark in high_watermarks.items():
        offsets = sorted(o for p, o in by_position if p == partition)
        assert offsets == list(range(high_watermark)), f"partition {partition}: offsets not contiguous"
    missing = [pos for pos in producer.acked if pos not in by_position]
    assert not missing, f"{len(missing)} acknowledged records missing, e.g. {missing[:5]}"
    wrong = [(pos, key, by_position[pos].key) for pos, key in producer.acked.items() if by_position[pos].key != key]
    assert not wrong, f"{len(wrong)} acknowledged offsets hold another record, e.g. {wrong[:5]}"
    for pos, key in producer.acked.items():
        assert by_position[pos].value == b"value-" + key[1:], f"value at {pos} corrupted"


@pytest.mark.timeout(180)
def test_sigterm_exits_0_and_restart_serves_identical_records(broker: BrokerProcess) -> None:
    topic = "graceful"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    expected = ExpectedRecords(5_000)
    produce_confluent(broker.bootstrap, topic, expected, "lz4")
    counts = {p: sum(1 for (q, _o) in expected.acked if q == p) for p in range(PARTITIONS)}
    before = consume_confluent(broker.bootstrap, topic, counts)
    expected.check_consumed(before, PARTITIONS)

    log_size = len(broker.read_log())
    assert broker.stop() == 0, f"SIGTERM exit code not 0:\n{broker.read_log()[-3000:]}"
    shutdown_log = broker.read_log()[log_size:]
    assert "shut down cleanly" in shutdown_log, shutdown_log[-3000:]

    broker.start()
    after = consume_confluent(broker.bootstrap, topic, counts)
    assert digest(after) == digest(before)
    restart_log = broker.read_log()[log_size:]
    assert "clean shutdown: True" in restart_log, f"restart after SIGTERM not seen as clean:\n{restart_log}"
    assert "Truncated" not in restart_log, "a clean shutdown still needed truncation"

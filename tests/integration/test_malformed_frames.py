"""Malformed bytes close only the offending connection: a real confluent-kafka producer running at the same time
sees no error and the broker keeps serving. A too-new ApiVersions gets UNSUPPORTED_VERSION in a v0 body."""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import consume_confluent, create_topic

pytestmark = pytest.mark.timeout(120)

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _request_header(api_key: int, api_version: int, correlation_id: int, flexible: bool = False) -> bytes:
    client_id = b"raw-socket"
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id
    return header + (b"\x00" if flexible else b"")  # header v2: empty tagged fields


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, f"connection closed after {len(data)} of {size} bytes"
        data += chunk
    return data


def _read_response(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _read_exactly(sock, 4))
    return _read_exactly(sock, size)


def _closed_by_broker(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """True once the broker closes the connection (EOF or reset); False if it stays open for timeout_s."""
    sock.settimeout(timeout_s)
    try:
        while sock.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _api_versions_v0(port: int) -> tuple[int, dict[int, tuple[int, int]]]:
    """A fresh connection's ApiVersions v0: (error code, {api key: (min, max)})."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_frame(_request_header(API_VERSIONS, 0, 42)))
        return _parse_api_versions_v0(_read_response(sock), 42)


def _parse_api_versions_v0(response: bytes, correlation_id: int) -> tuple[int, dict[int, tuple[int, int]]]:
    got_correlation_id, error_code, count = struct.unpack_from(">ihi", response, 0)
    assert got_correlation_id == correlation_id
    versions = {}
    for i in range(count):
        key, min_version, max_version = struct.unpack_from(">hhh", response, 10 + 6 * i)
        versions[key] = (min_version, max_version)
    assert len(response) == 10 + 6 * count, "trailing bytes after the v0 body (response header must be v0)"
    return error_code, versions


class ConcurrentProducer(threading.Thread):
    """A real confluent-kafka producer producing steadily until stopped; collects acks and every error."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.stop_event = threading.Event()
        self.acked: dict[tuple[int, int], bytes] = {}
        self.errors: list[str] = []
        self.undelivered = -1
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1,
                                  "error_cb": lambda err: self.errors.append(f"error_cb: {err}")})

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(f"delivery: {err}")
        else:
            self.acked[(msg.partition(), msg.offset())] = msg.value()

    def run(self) -> None:
        index = 0
        while not self.stop_event.is_set():
            self.producer.produce(self.topic, key=b"k%d" % index, value=b"v%d" % index,
                                  on_delivery=self._on_delivery)
            index += 1
            self.producer.poll(0.002)
        self.undelivered = self.producer.flush(30)


class ConcurrentConsumer(threading.Thread):
    """A real confluent-kafka consumer tailing partition 0 from the beginning until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.stop_event = threading.Event()
        self.received: dict[tuple[int, int], bytes | None] = {}
        self.errors: list[str] = []
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bystander",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                                  "error_cb": lambda err: self.errors.append(f"error_cb: {err}")})
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                for msg in self.consumer.consume(num_messages=1000, timeout=0.1):
                    if msg.error() is not None:
                        self.errors.append(f"message: {msg.error()}")
                    else:
                        self.received[(int(msg.partition() or 0), int(msg.offset() or 0))] = msg.value()
        finally:
            self.consumer.close()


def test_bad_frames_close_only_their_connection_while_real_clients_keep_working(broker: BrokerProcess) -> None:
    topic = "bystander"
    create_topic(broker.bootstrap, topic, 1)
    bystander = ConcurrentProducer(broker.bootstrap, topic)
    reader = ConcurrentConsumer(broker.bootstrap, topic)
    bystander.start()
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while len(bystander.acked) < 200:
            assert time.monotonic() < deadline, "bystander producer got no acks"
            time.sleep(0.05)
        bad_inputs = {
            "garbage frame (too short for a header)": _frame(b"\x01\x02\x03"),
            "garbage frame (random bytes)": _frame(bytes(range(7, 250, 3))),
            "negative frame size": struct.pack(">i", -5) + b"\x00" * 16,
            "oversize frame (200 MB > socket.request.max.bytes)": struct.pack(">i", 200_000_000) + b"\x00" * 64,
            "unknown api key 999": _frame(_request_header(999, 0, 1)),
        }
        for name, data in bad_inputs.items():
            with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
                sock.sendall(data)
                assert _closed_by_broker(sock), f"{name}: the broker kept the connection open"
        acked_after_abuse = len(bystander.acked)
        deadline = time.monotonic() + 30
        while len(bystander.acked) < acked_after_abuse + 200:
            assert time.monotonic() < deadline, "bystander producer stalled after the malformed frames"
            time.sleep(0.05)
        bystander.stop_event.set()
        bystander.join(60)  # from here on `acked` is frozen
        deadline = time.monotonic() + 30
        while len(reader.received) < len(bystander.acked):
            assert time.monotonic() < deadline, "the concurrent consumer stopped receiving what was acked"
            time.sleep(0.05)
    finally:
        bystander.stop_event.set()
        reader.stop_event.set()
        bystander.join(60)
        reader.join(30)
    assert bystander.undelivered == 0
    assert not bystander.errors, f"the bystander producer saw errors: {bystander.errors[:5]}"
    assert not reader.errors, f"the bystander consumer saw errors: {reader.errors[:5]}"
    assert all(reader.received[pos] == value for pos, value in bystander.acked.items())

    error_code, versions = _api_versions_v0(broker.port)
    assert error_code == 0 and API_VERSIONS in versions, "broker no longer serves new connections"
    high_watermark = max(offset for _, offset in bystander.acked) + 1
    records = consume_confluent(broker.bootstrap, topic, {0: high_watermark})
    assert {(r.partition, r.offset): r.value for r in records} == bystander.acked


def test_api_versions_v99_gets_unsupported_version_with_v0_body(broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        body = b"\x04raw\x041.0\x00"  # v3+ shape: compact client software name/version, tagged fields
        sock.sendall(_frame(_request_header(API_VERSIONS, 99, 7, flexible=True) + body))
        error_code, versions = _parse_api_versions_v0(_read_response(sock), 7)
    assert error_code == UNSUPPORTED_VERSION
    assert API_VERSIONS in versions
    assert versions[API_VERSIONS][0] == 0 and versions[API_VERSIONS][1] >= 3


def test_api_versions_v0_lists_the_implemented_apis(broker: BrokerProcess) -> None:
    error_code, versions = _api_versions_v0(broker.port)
    assert error_code == 0
    for api_key in (0, 1, 2, 3, 18, 19, 20, 22, 23, 32, 33, 37, 44):  # issue 2's APIs
        assert api_key in versions, f"api key {api_key} not advertised"
    assert versions[0][1] >= 9 and versions[1][1] >= 12

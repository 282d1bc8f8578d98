"""`WireClient`: a blocking raw-socket Kafka client for tests that need exact control over request versions
and bytes (built on kafka-python's generated message classes, the same ones real clients use)."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

LEADER_NOT_AVAILABLE = 5
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
#: What Kafka's clients retry while a broker starts, loads a coordinator's partition (in slices, on the event loop)
#: or elects a leader for a topic just created: an answer with one of these is "not yet", never a result.
NOT_READY_YET = frozenset({LEADER_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
                           NOT_COORDINATOR})
#: How long `request_until_ready` resends before it fails the test (a coordinator load on a busy 2-core machine)
READY_TIMEOUT_S = 60.0


def error_codes(response: Any) -> Iterator[int]:
    """Every `error_code` field in a decoded response, at any depth (top level, per group, topic, partition)."""

    def walk(value: Any) -> Iterator[int]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "error_code" and isinstance(item, int):
                    yield item
                else:
                    yield from walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                yield from walk(item)

    return walk(response.to_dict())


class WireClient:
    """One TCP connection; `request()` sends a versioned request object and decodes the response."""

    def __init__(self, bootstrap: str, timeout_s: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < count:
            chunk = self.sock.recv(count - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def request(self, request: Any, response_class: Any | None = None) -> Any:
        """Send `request` (e.g. `MetadataRequest[12](...)`) and return the decoded response."""
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id="wire-test")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        frame = self.read_frame()
        cls = response_class if response_class is not None else request.header.get_response_class()
        response = cls.decode(frame, header=True)
        assert response.header.correlation_id == self._correlation_id
        return response

    def request_until_ready(self, request: Any, response_class: Any | None = None, *,
                            retriable: frozenset[int] = NOT_READY_YET, codes: Callable[[Any], Any] = error_codes,
                            timeout_s: float = READY_TIMEOUT_S) -> Any:
        """`request()`, resent every 0.1 s while any of the response's error codes is one Kafka's clients retry
        (`retriable`), up to `timeout_s`: for requests right after a start, a restart or a topic creation. Returns
        the first answer without one, whatever its other codes (the caller asserts them); fails with the last
        answer at the deadline. A test that expects NOT_COORDINATOR itself sends a one-shot `request()`."""
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.request(request, response_class)
            if not retriable.intersection(codes(response)):
                return response
            assert time.monotonic() < deadline, f"still not ready after {timeout_s} s: {response}"
            time.sleep(0.1)

    def is_closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

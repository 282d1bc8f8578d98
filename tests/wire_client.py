"""`WireClient`: a blocking raw-socket Kafka client for tests that need exact control over request versions
and bytes (built on kafka-python's generated message classes, the same ones real clients use)."""

from __future__ import annotations

import socket
import struct
from typing import Any


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

    def is_closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

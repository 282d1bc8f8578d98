"""The metrics/admin port on aiohttp (broker/admin_http.py) over real sockets of a real broker: connections are
kept alive across requests (the old responder closed after each), a client that half-closes after its request still
gets the answer (and one that half-closes after reading its answer is closed), and malformed requests are 400s that
leave the port serving."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator

import pytest

from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    with MiniKafka({"log.cleaner.backoff.ms": 100}) as broker:
        yield broker


def test_one_connection_serves_many_requests(kafka: MiniKafka) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", kafka.metrics_port, timeout=10)
    connection.connect()
    local_port = connection.sock.getsockname()[1]
    answers = []
    for path in ["/metrics", "/admin/cleaner-state?topic=none", "/metrics", "/no-such-page", "/metrics"]:
        connection.request("GET", path)
        response = connection.getresponse()
        answers.append((response.status, response.getheader("Connection")))
        body = response.read()
        assert body
        assert connection.sock is not None and connection.sock.getsockname()[1] == local_port, "reconnected"
    assert answers == [(200, None), (404, None), (200, None), (404, None), (200, None)]
    # A POST with a body the route does not read: the next request on the connection is still answered.
    connection.request("POST", "/admin/compact?topic=none", body=b"x" * 100_000)
    response = connection.getresponse()
    assert response.status == 404 and "does not exist" in json.loads(response.read())["error"]
    connection.request("GET", "/metrics")
    assert connection.getresponse().status == 200
    connection.close()


def raw_exchange(port: int, request: bytes) -> bytes:
    """Send `request`, shut our write side, read until the broker closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    return data


def content_length(head: bytes) -> int:
    """The Content-Length of a response head (status line and headers)."""
    return int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
               .split(b":")[1])


def test_a_half_closed_request_is_answered_and_closed(kafka: MiniKafka) -> None:
    reply = raw_exchange(kafka.metrics_port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    # The answer says "Connection: close" when the broker read the half-close before answering, and is a keep-alive
    # answer when the half-close arrived just after; either way the whole answer came and the broker closed the
    # connection (raw_exchange reads until it does).
    assert len(body) == content_length(head)
    assert b"kafka_server" in body or b"minikafka" in body


def test_a_half_close_after_the_answer_closes_the_idle_connection(kafka: MiniKafka) -> None:
    """The client shuts its write side only after it has read a keep-alive answer (a slow client, or one
    descheduled between send and shutdown): the broker closes the idle connection at once."""
    with socket.create_connection(("127.0.0.1", kafka.metrics_port), timeout=10) as connection:
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        received = b""
        while b"\r\n\r\n" not in received:
            received += connection.recv(65536)
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" not in head
        length = content_length(head)
        while len(body) < length:
            body += connection.recv(65536)
        connection.shutdown(socket.SHUT_WR)
        connection.settimeout(5)
        assert connection.recv(65536) == b""


def test_malformed_requests_are_400s_and_the_port_keeps_serving(kafka: MiniKafka) -> None:
    for request in [b"NONSENSE\r\n\r\n", b"GET /metrics HTTP/1.1\r\nContent-Length: -4\r\n\r\n",
                    b"GET /metrics HTTP/1.1\r\n" + b"X-Big: " + b"a" * 20_000 + b"\r\n\r\n"]:
        reply = raw_exchange(kafka.metrics_port, request)
        assert reply.split(b" ", 2)[1] == b"400", reply[:200]
    connection = http.client.HTTPConnection("127.0.0.1", kafka.metrics_port, timeout=10)
    connection.request("GET", "/metrics")
    assert connection.getresponse().status == 200
    connection.close()

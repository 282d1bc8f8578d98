"""`AdminHttpServer`: the Prometheus scrape endpoint (`GET /metrics`) on `minikafka.metrics.port`, and `/admin/*`.

A deliberately tiny HTTP/1.1 responder on the event loop (one request per connection, then close), so the
admin endpoints that come with the cleaner can share it without another dependency. Routes are
`(method, path) -> async callable returning (status, content type, body)`. Event-loop thread only.

`body_routes` also get the request body as a `RequestBody`: read on demand, a chunk at a time, never held whole
(an exact-compaction plan may be gigabytes). Only a `Content-Length` body is accepted. A body a route left unread is
drained (up to `DRAIN_BYTES`, for `DRAIN_TIMEOUT_S`) after the response is written, so the client reads the
response instead of a connection reset.

With an `admin_auth` (security configured: see broker/admin_auth.py) every `/admin/*` request, known path or not,
is checked before routing and answered 401/403 when refused; `/metrics` is never guarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

if TYPE_CHECKING:
    from minikafka.broker.admin_auth import AdminAuthenticator

log = logging.getLogger(__name__)

Route = Callable[[dict[str, list[str]]], Awaitable[tuple[int, str, bytes]]]
_REASONS = {
    200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required", 413: "Content Too Large", 500: "Internal Server Error", 507: "Insufficient Storage",
}
MAX_HEADER_BYTES = 16 * 1024
BODY_CHUNK_BYTES = 64 * 1024
#: a body read stalls for at most this long between two chunks
BODY_READ_TIMEOUT_S = 30.0
DRAIN_BYTES = 64 * 1024 * 1024
DRAIN_TIMEOUT_S = 5.0
ADMIN_PATH_PREFIX = "/admin/"


class RequestBody:
    """The body of one admin request, `content_length` bytes (None: the request had no Content-Length), read
    from the connection on demand. Event-loop thread only."""

    def __init__(self, reader: asyncio.StreamReader, content_length: int | None) -> None:
        self._reader = reader
        self.content_length = content_length
        self.remaining = content_length or 0

    async def chunks(self, chunk_bytes: int = BODY_CHUNK_BYTES) -> AsyncIterator[bytes]:
        """The unread rest of the body, at most `chunk_bytes` at a time; ValueError if the client sends less
        than its Content-Length (or stalls for BODY_READ_TIMEOUT_S)."""
        while self.remaining > 0:
            try:
                chunk = await asyncio.wait_for(self._reader.read(min(chunk_bytes, self.remaining)),
                                               BODY_READ_TIMEOUT_S)
            except TimeoutError:
                raise ValueError(f"request body stalled with {self.remaining} bytes still to come") from None
            if not chunk:
                raise ValueError(f"request body ended {self.remaining} bytes short of its Content-Length")
            self.remaining -= len(chunk)
            yield chunk

    async def drain(self) -> None:
        """Read and drop what is left of the body (bounded), so that closing does not reset the connection."""
        limit = DRAIN_BYTES
        with contextlib.suppress(ValueError, ConnectionError, TimeoutError):
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                async for chunk in self.chunks():
                    limit -= len(chunk)
                    if limit <= 0:
                        break


BodyRoute = Callable[[dict[str, list[str]], RequestBody], Awaitable[tuple[int, str, bytes]]]


def _header(head: bytes, wanted: bytes) -> str | None:
    """The first value of header `wanted` (lower case), or None."""
    for line in head.split(b"\r\n")[1:]:
        name, separator, value = line.partition(b":")
        if separator and name.strip().lower() == wanted:
            return value.strip().decode("latin-1")
    return None


def _content_length(head: bytes) -> int | None:
    """The Content-Length header's value (None if absent); ValueError if malformed or with chunked encoding."""
    length = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
            if length < 0:
                raise ValueError("negative Content-Length")
        elif name == b"transfer-encoding" and value.strip().lower() != b"identity":
            raise ValueError("only Content-Length bodies are accepted")
    return length


class AdminHttpServer:
    """Serves /metrics from a Prometheus registry, plus any registered admin routes (guarded by `admin_auth`)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 admin_auth: AdminAuthenticator | None = None) -> None:
        self.host = host
        self.port = port
        self.admin_auth = admin_auth
        self.routes: dict[tuple[str, str], Route] = {("GET", "/metrics"): self._metrics}
        self.body_routes: dict[tuple[str, str], BodyRoute] = {}
        self._registry = registry
        self._server: asyncio.Server | None = None

    async def _metrics(self, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        # Collectors read logs and the cleaner checkpoint: keep that file I/O off the event loop.
        return 200, CONTENT_TYPE_LATEST, await asyncio.to_thread(generate_latest, self._registry)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_body: RequestBody | None = None
        extra_headers: Mapping[str, str] = {}
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            if len(head) > MAX_HEADER_BYTES:
                raise ValueError("header too large")
            method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            url = urlsplit(target)
            request_body = RequestBody(reader, _content_length(head))
            denial = None
            if self.admin_auth is not None and url.path.startswith(ADMIN_PATH_PREFIX):
                peer = writer.get_extra_info("peername")
                denial = await self.admin_auth.check(method, _header(head, b"authorization"),
                                                     str(peer[0]) if peer else "")
            body_route = self.body_routes.get((method, url.path))
            route = self.routes.get((method, url.path))
            if denial is not None:
                status, ctype, body, extra_headers = denial.status, "text/plain", denial.body, denial.headers
            elif body_route is not None:
                status, ctype, body = await body_route(parse_qs(url.query), request_body)
            elif route is None:
                known_path = any(path == url.path for _m, path in [*self.routes, *self.body_routes])
                status, ctype, body = (405 if known_path else 404), "text/plain", b"no such endpoint\n"
            else:
                status, ctype, body = await route(parse_qs(url.query))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            status, ctype, body = 400, "text/plain", b"bad request\n"
        except Exception:
            log.exception("admin endpoint failed")
            status, ctype, body = 500, "text/plain", b"internal error\n"
        header = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n"
            + "".join(f"{name}: {value}\r\n" for name, value in extra_headers.items()) + "\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(header.encode("latin-1") + body)
            await writer.drain()
            if request_body is not None and request_body.remaining > 0:
                await request_body.drain()
        writer.close()

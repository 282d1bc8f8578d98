"""`AdminHttpServer`: the Prometheus scrape endpoint (`GET /metrics`) on `minikafka.metrics.port`.

A deliberately tiny HTTP/1.1 responder on the event loop (one request per connection, then close), so the
admin endpoints that come with the cleaner can share it without another dependency. Routes are
`(method, path) -> async callable returning (status, content type, body)`. Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

Route = Callable[[dict[str, list[str]]], Awaitable[tuple[int, str, bytes]]]
_REASONS = {
    200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
    500: "Internal Server Error",
}
MAX_HEADER_BYTES = 16 * 1024


class AdminHttpServer:
    """Serves /metrics from a Prometheus registry, plus any registered admin routes."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        self.host = host
        self.port = port
        self.routes: dict[tuple[str, str], Route] = {("GET", "/metrics"): self._metrics}
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
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            if len(head) > MAX_HEADER_BYTES:
                raise ValueError("header too large")
            method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            url = urlsplit(target)
            route = self.routes.get((method, url.path))
            if route is None:
                known_path = any(path == url.path for _m, path in self.routes)
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
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(header.encode("latin-1") + body)
            await writer.drain()
        writer.close()

"""`AdminHttpServer`: the Prometheus scrape endpoint (`GET /metrics`) on `minikafka.metrics.port`, `/admin/*` and the
console's pages, served by aiohttp's HTTP/1.1 server on the broker's event loop (DESIGN.md "The admin port").

Routes are `(method, path) -> async callable returning (status, content type, body)`; aiohttp parses requests,
keeps connections alive, and answers malformed requests with 400 itself. Event-loop thread only.

`body_routes` also get the request body as a `RequestBody`: read on demand, a chunk at a time, never held whole
(an exact-compaction plan may be gigabytes). Only a `Content-Length` body has a length (`content_length` is None for
a request without one, chunked too). A body a route left unread is discarded by aiohttp before the connection
takes its next request (or the connection is closed).

Every request first passes the `BrowserGuard` (broker/admin_guard.py: the Host header, cross-site state changes,
and peers beyond loopback when no credentials are configured), then, with an `admin_auth` (security configured: see
broker/admin_auth.py), every request but `GET /metrics` — `/admin/*` and the console, known path or not — is checked
before routing and answered 401/403 when refused; `/metrics` never needs credentials. A route registered on
`routes`/`body_routes`, now or later, gets both checks: no route has its own.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from aiohttp import StreamReader, web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from minikafka.broker.admin_guard import BrowserGuard
from minikafka.broker.admin_workers import AdminWorkers, serve_with

if TYPE_CHECKING:
    from minikafka.broker.admin_auth import AdminAuthenticator

log = logging.getLogger(__name__)
#: aiohttp's access log (a line per request) under the broker's name, off by default: Kafka logs no HTTP. The
#: broker-loggers resource turns it on (`kafka-configs --entity-type broker-loggers --entity-name 1 --alter
#: --add-config minikafka.broker.admin_http.access=INFO`), for connections opened after that.
access_log = logging.getLogger(f"{__name__}.access")
access_log.setLevel(logging.WARNING)

Route = Callable[[dict[str, list[str]]], Awaitable[tuple[int, str, bytes]]]
MAX_HEADER_BYTES = 16 * 1024
BODY_CHUNK_BYTES = 64 * 1024
#: a body read stalls for at most this long between two chunks
BODY_READ_TIMEOUT_S = 30.0
#: an idle keep-alive connection is closed after this long
KEEPALIVE_TIMEOUT_S = 15.0
#: on shutdown, requests still running (a `wait=true` compaction) get this long before they are cancelled
SHUTDOWN_TIMEOUT_S = 2.0
ADMIN_PATH_PREFIX = "/admin/"
METRICS_PATH = "/metrics"
#: on every answer: no page of another site may frame the console (clickjacking) or sniff a type
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'",
                    "X-Content-Type-Options": "nosniff"}


class RequestBody:
    """The body of one admin request, `content_length` bytes (None: the request had no Content-Length), read
    from the connection on demand. Event-loop thread only."""

    def __init__(self, content: StreamReader, content_length: int | None) -> None:
        self._content = content
        self.content_length = content_length
        self.remaining = content_length or 0

    async def chunks(self, chunk_bytes: int = BODY_CHUNK_BYTES) -> AsyncIterator[bytes]:
        """The unread rest of the body, at most `chunk_bytes` at a time; ValueError if the client sends less
        than its Content-Length (or stalls for BODY_READ_TIMEOUT_S)."""
        read = self._content.read
        while self.remaining > 0:
            try:
                chunk = await asyncio.wait_for(read(min(chunk_bytes, self.remaining)), BODY_READ_TIMEOUT_S)
            except TimeoutError:
                raise ValueError(f"request body stalled with {self.remaining} bytes still to come") from None
            except (ConnectionError, HttpProcessingError):  # the connection ended early
                raise ValueError(f"request body ended {self.remaining} bytes short of its Content-Length") from None
            if not chunk:
                raise ValueError(f"request body ended {self.remaining} bytes short of its Content-Length")
            self.remaining -= len(chunk)
            yield chunk


BodyRoute = Callable[[dict[str, list[str]], RequestBody], Awaitable[tuple[int, str, bytes]]]


class AdminHttpServer:
    """Serves /metrics from a Prometheus registry, plus any registered admin and console routes (guarded by
    `guard`, then `admin_auth`). `allowed_hosts` is `minikafka.metrics.allowed.hosts`; `before_scrape` runs on the
    loop before each scrape (the loop-owned collectors' snapshots)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 admin_auth: AdminAuthenticator | None = None, allowed_hosts: Iterable[str] = (),
                 before_scrape: Callable[[], None] | None = None) -> None:
        self.host = host
        self.port = port
        self.admin_auth = admin_auth
        self.guard = BrowserGuard.from_config(host, allowed_hosts, admin_auth is not None)
        self.routes: dict[tuple[str, str], Route] = {("GET", METRICS_PATH): self._metrics}
        self.body_routes: dict[tuple[str, str], BodyRoute] = {}
        self._registry = registry
        self._before_scrape = before_scrape
        self.workers = AdminWorkers()
        self._runner: web.ServerRunner | None = None

    async def _metrics(self, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        if self._before_scrape is not None:
            self._before_scrape()
        # Collectors read logs and the cleaner checkpoint: keep that file I/O off the event loop.
        scrape = asyncio.get_running_loop().run_in_executor(self.workers.scrape_pool, generate_latest, self._registry)
        return 200, CONTENT_TYPE_LATEST, await scrape

    async def start(self, sockets: Sequence[socket.socket] = ()) -> None:
        """Serve on `host:port`, or on `sockets` bound and listening already (broker/admin_port.py)."""
        server = _AdminWebServer(self._handle, access_log=access_log, keepalive_timeout=KEEPALIVE_TIMEOUT_S,
                                 max_field_size=MAX_HEADER_BYTES, max_line_size=MAX_HEADER_BYTES)
        runner = web.ServerRunner(server, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        for sock in sockets:
            await web.SockSite(runner, sock).start()
        if not sockets:
            await web.TCPSite(runner, self.host, self.port, reuse_address=True).start()
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def stop(self) -> None:
        """Close the port, cancel the requests still running after SHUTDOWN_TIMEOUT_S, then wait for the admin
        threads they started (a cancelled request's thread runs on: it is waited for, not abandoned)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await asyncio.to_thread(self.workers.shutdown)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        extra_headers: Mapping[str, str] = {}
        method, path = request.method, request.path
        serve_with(self.workers)
        if (isinstance(request.protocol, _HalfClosingRequestHandler) and request.protocol.peer_closed
                and not request.content.is_eof()):
            request.content.feed_eof()  # EOF came while the request waited to be handled
        try:
            peer = request.transport.get_extra_info("peername") if request.transport is not None else None
            peer_address = str(peer[0]) if peer else ""
            denial = self.guard.check(method, path, request.headers, peer_address, METRICS_PATH)
            if denial is None and self.admin_auth is not None and path != METRICS_PATH:
                denial = await self.admin_auth.check(method, request.headers.get("Authorization"), peer_address)
            body_route = self.body_routes.get((method, path))
            route = self.routes.get((method, path))
            query = parse_qs(request.query_string)
            if denial is not None:
                status, ctype, body, extra_headers = denial.status, "text/plain", denial.body, denial.headers
            elif body_route is not None:
                status, ctype, body = await body_route(query, RequestBody(request.content, request.content_length))
            elif route is None:
                known_path = any(known == path for _m, known in [*self.routes, *self.body_routes])
                status, ctype, body = (405 if known_path else 404), "text/plain", b"no such endpoint\n"
            else:
                status, ctype, body = await route(query)
        except ValueError:
            status, ctype, body = 400, "text/plain", b"bad request\n"
        except Exception:
            log.exception("admin endpoint failed")
            status, ctype, body = 500, "text/plain", b"internal error\n"
        response = web.Response(status=status, body=body,
                                headers={"Content-Type": ctype, **SECURITY_HEADERS, **extra_headers})
        if isinstance(request.protocol, _HalfClosingRequestHandler) and request.protocol.peer_closed:
            response.force_close()  # the client sent all it will: close once the response is out
        return response


class _HalfClosingRequestHandler(web.RequestHandler):
    """aiohttp's connection protocol, except that a client that half-closes (sends its request, then shuts its
    write side: `curl --data-binary @plan`, `nc -N`) still gets its response. aiohttp closes the transport on EOF;
    here EOF ends the bodies still being received (a short body then reads as short instead of stalling) and
    the connection closes after the response, or at once when no request is in hand. Event-loop thread only."""

    peer_closed = False

    def eof_received(self) -> bool:  # type: ignore[override]  # asyncio's protocol returns bool
        self.peer_closed = True
        # _current_request/_messages are aiohttp's (3.9+): the request being handled and those parsed but queued
        pending = [self._current_request.content] if self._current_request is not None else []
        pending += [payload for _message, payload in self._messages]
        for payload in pending:
            if not payload.is_eof():
                payload.feed_eof()
        if self._waiter is not None and not self._waiter.done():
            # Idle between requests (the last answer went out before the EOF came): nothing to answer. close()
            # would cancel the waiter, end start() and leave the transport open.
            self.force_close()
            return False
        self.close()  # no request follows: close once the one in hand is answered (force_close would drop it)
        return True  # keep our side open for the response


class _AdminWebServer(web.Server):
    """aiohttp's low-level server with `_HalfClosingRequestHandler` connections."""

    def __call__(self) -> web.RequestHandler:
        return _HalfClosingRequestHandler(self, loop=self._loop, **self._kwargs)

"""The asyncio listener: one task per client connection feeding a sans-IO `ServerConnection`.

Kafka processes one request at a time per connection (it mutes the channel until the response is sent),
which is also what keeps responses in request order; this loop does the same. A ProtocolError closes only
the offending connection. Runs on the event loop thread only.

Resource limits, by Kafka's names (`NetworkLimits`): `max.connections`, `max.connections.per.ip` (+ overrides)
through `ConnectionQuotas`; `connections.max.idle.ms` (a connection with no bytes read or written for that long
is closed); `socket.request.max.bytes` (a larger frame closes the connection); `queued.max.request.bytes`
(`MemoryPool`): a frame above SMALL_FRAME_BYTES reserves its declared size before its body is read, and the
connection is muted until it gets it. What the broker holds for requests is therefore bounded by
    queued.max.request.bytes + connections x (SMALL_FRAME_BYTES + READER_LIMIT_BYTES x 2 + one socket read)
however clients behave; a client that trickles a frame holds at most its reservation, and one below
SMALL_FRAME_BYTES needs no reservation, so small requests (Metadata, Fetch, small Produce) are served even while
large ones wait for the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from minikafka.broker.connection_quotas import ConnectionQuotas
from minikafka.broker.memory_pool import MemoryPool
from minikafka.broker.session import ANONYMOUS, Session
from minikafka.protocol.connection import CONNECTION_CLOSED, NEED_DATA, RequestReceived, ServerConnection
from minikafka.protocol.errors import ProtocolError

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 256 * 1024
#: asyncio's StreamReader pauses the socket once it buffers twice this much unread data.
READER_LIMIT_BYTES = 64 * 1024
#: Frames up to this size are read without a reservation from the memory pool.
SMALL_FRAME_BYTES = 64 * 1024

#: Handles one request of a session; returns the response frame, or None when no response is sent (acks=0 Produce).
RequestDispatcher = Callable[[RequestReceived, Session], Awaitable[bytes | None]]


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection (e.g. a failed acks=0 Produce)."""


@dataclass(frozen=True)
class NetworkLimits:
    """The listener's resource limits (Kafka's defaults: no connection limits, unbounded request memory)."""

    max_request_bytes: int = 104_857_600
    max_connections: int = 2_147_483_647
    max_connections_per_ip: int = 2_147_483_647
    per_ip_overrides: tuple[tuple[str, int], ...] = ()
    connections_max_idle_ms: int = 600_000
    queued_max_request_bytes: int | None = None


class _Client:
    """One live connection's task, peer address and last I/O time."""

    __slots__ = ("busy", "ip", "last_io_s", "task")

    def __init__(self, ip: str, task: asyncio.Task[None]) -> None:
        self.ip = ip
        self.task = task
        self.last_io_s = time.monotonic()
        self.busy = False  # a request is being handled (a long-polling Fetch, a JoinGroup): never idle


class SocketServer:
    """Owns the listening socket, the live connections, their quotas and the request memory pool."""

    def __init__(self, host: str, port: int, dispatch: RequestDispatcher, limits: NetworkLimits | None = None) -> None:
        self.host = host
        self.port = port
        self._dispatch = dispatch
        self.limits = limits or NetworkLimits()
        self.quotas = ConnectionQuotas(self.limits.max_connections, self.limits.max_connections_per_ip,
                                       dict(self.limits.per_ip_overrides))
        self.memory_pool = MemoryPool(self.limits.queued_max_request_bytes)
        self._server: asyncio.Server | None = None
        self._clients: dict[asyncio.Task[None], _Client] = {}
        self._idle_reaper: asyncio.Task[None] | None = None
        self._in_flight = 0  # requests being handled right now, across connections
        self._idle = asyncio.Event()
        self._idle.set()
        self._stopping = False

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, limit=READER_LIMIT_BYTES, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._idle_reaper = asyncio.create_task(self._close_idle_connections(), name="minikafka-idle-reaper")

    @property
    def connection_count(self) -> int:
        return len(self._clients)

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        ip = str(peer[0]) if peer else "?"
        refused = self.quotas.try_accept(ip)
        if refused is not None:
            log.info("closing connection from %s: %s", peer, refused)
            writer.close()
            return
        client = self._clients[task] = _Client(ip, task)
        try:
            await self._serve(reader, writer, client)
        except ProtocolError as exc:
            log.info("closing connection from %s: %s", peer, exc)
        except CloseConnection as exc:
            log.debug("closing connection from %s: %s", peer, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("unexpected error on connection from %s; closing it", peer)
        finally:
            del self._clients[task]
            self.quotas.release(ip)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: _Client) -> None:
        connection = ServerConnection(self.limits.max_request_bytes)
        session = Session(ANONYMOUS, client.ip)
        reserved_bytes = 0  # pool reservation of the frame being read
        try:
            while not self._stopping:
                if not reserved_bytes:
                    reserved_bytes = await self._reserve(writer, connection.pending_frame_bytes())
                data = await reader.read(READ_CHUNK_BYTES)
                client.last_io_s = time.monotonic()
                connection.receive_data(data)
                while True:
                    event = connection.next_event()
                    if event is NEED_DATA:
                        break
                    if event is CONNECTION_CLOSED:
                        return
                    assert isinstance(event, RequestReceived)
                    self._in_flight += 1
                    self._idle.clear()
                    client.busy = True
                    try:
                        frame = await self._dispatch(event, session)
                        if frame is not None:
                            writer.write(frame)
                    finally:
                        client.busy = False
                        client.last_io_s = time.monotonic()
                        self._in_flight -= 1
                        if not self._in_flight:
                            self._idle.set()
                        self.memory_pool.release(reserved_bytes)
                        reserved_bytes = 0
                    if self._stopping:
                        break
                    reserved_bytes = await self._reserve(writer, connection.pending_frame_bytes())
                await writer.drain()
                client.last_io_s = time.monotonic()
        finally:
            self.memory_pool.release(reserved_bytes)

    async def _reserve(self, writer: asyncio.StreamWriter, frame_bytes: int | None) -> int:
        """Reserve the next frame's size if it is large, with the socket muted while the pool is short; returns
        the bytes reserved. A frame over socket.request.max.bytes is left to ServerConnection to refuse."""
        if (not self.memory_pool.bounded or frame_bytes is None
                or not SMALL_FRAME_BYTES < frame_bytes <= self.limits.max_request_bytes):
            return 0
        transport = cast(asyncio.Transport, writer.transport)  # a socket transport: it reads too
        transport.pause_reading()
        try:
            await self.memory_pool.acquire(frame_bytes)
        finally:
            if not transport.is_closing():
                transport.resume_reading()
        return frame_bytes

    async def _close_idle_connections(self) -> None:
        """connections.max.idle.ms: close connections without I/O for that long (checked a few times per
        period, at least every 30 s)."""
        idle_s = self.limits.connections_max_idle_ms / 1000.0
        interval_s = min(max(idle_s / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval_s)
            deadline = time.monotonic() - idle_s
            for client in list(self._clients.values()):
                if client.last_io_s < deadline and not client.busy:
                    log.debug("closing connection from %s idle for more than %d ms", client.ip,
                              self.limits.connections_max_idle_ms)
                    client.task.cancel()

    async def stop(self, grace_s: float) -> None:
        """Stop accepting, let in-flight requests finish (up to grace_s), then close every connection."""
        self._stopping = True
        if self._server is not None:
            self._server.close()
        if self._idle_reaper is not None:
            self._idle_reaper.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace_s)
        tasks = list(self._clients)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

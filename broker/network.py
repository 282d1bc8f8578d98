"""The asyncio listener: one task per client connection feeding a sans-IO `ServerConnection`.

Kafka processes one request at a time per connection (it mutes the channel until the response is sent),
which is also what keeps responses in request order; this loop does the same. A ProtocolError closes only
the offending connection. Runs on the event loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from minikafka.protocol.connection import CONNECTION_CLOSED, NEED_DATA, RequestReceived, ServerConnection
from minikafka.protocol.errors import ProtocolError

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 256 * 1024

#: Handles one request; returns the response frame, or None when no response is sent (acks=0 Produce).
RequestDispatcher = Callable[[RequestReceived], Awaitable[bytes | None]]


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection (e.g. a failed acks=0 Produce)."""


class SocketServer:
    """Owns the listening socket and the set of live connection tasks."""

    def __init__(self, host: str, port: int, dispatch: RequestDispatcher, max_request_bytes: int) -> None:
        self.host = host
        self.port = port
        self._dispatch = dispatch
        self._max_request_bytes = max_request_bytes
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._in_flight = 0  # requests being handled right now, across connections
        self._idle = asyncio.Event()
        self._idle.set()
        self._stopping = False

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, limit=READ_CHUNK_BYTES, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            await self._serve(reader, writer)
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
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = ServerConnection(self._max_request_bytes)
        while not self._stopping:
            data = await reader.read(READ_CHUNK_BYTES)
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
                try:
                    frame = await self._dispatch(event)
                    if frame is not None:
                        writer.write(frame)
                finally:
                    self._in_flight -= 1
                    if not self._in_flight:
                        self._idle.set()
                if self._stopping:
                    break
            await writer.drain()

    async def stop(self, grace_s: float) -> None:
        """Stop accepting, let in-flight requests finish (up to grace_s), then close every connection."""
        self._stopping = True
        if self._server is not None:
            self._server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace_s)
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

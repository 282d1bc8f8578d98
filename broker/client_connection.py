"""`ClientConnection`: the asyncio protocol of one client connection, feeding its bytes straight into the
connection's sans-IO `ServerConnection` and giving the connection's task a reader's and a writer's waits.

It replaces asyncio's StreamReader/StreamWriter pair, which copied every byte twice more (into the reader's buffer,
and out of it). What the transport delivers goes to `ServerConnection.receive_data` as it is. Reading pauses once
more than `max_buffered_bytes` wait unparsed, and the task's next `wait_for_data` resumes it (the task calls it
whenever no whole frame is left, also in the middle of a large frame), as StreamReader.read did. The network layer
also pauses reading while a frame waits for the memory pool. Response frames are queued and handed to the
transport together once the task next yields to the event loop (`loop.call_soon`), so the responses to the requests
of one read (a producer pipelines up to five) leave in one send instead of one each: a send on loopback runs the
receiver's side and its wake-up in the sender's time. `drain` writes the queue, then waits while the transport has
paused writing (its high-water mark), as StreamWriter.drain does.

Runs on the event loop thread only; one instance per connection, used by that connection's task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, cast

from minikafka.protocol.connection import ServerConnection
from minikafka.protocol.response_frame import BufferedFrame, ResponseFrame


class ClientConnection(asyncio.Protocol):
    """Owns one connection's transport, its `ServerConnection` (`self.requests`), and the futures its task waits
    on. `on_connected(self)` is started as the connection's task once the transport is up (after a TLS
    handshake)."""

    def __init__(self, on_connected: Callable[[ClientConnection], Coroutine[Any, Any, None]],
                 max_buffered_bytes: int) -> None:
        self._on_connected = on_connected
        self.max_buffered_bytes = max_buffered_bytes
        self.requests = ServerConnection()
        self.transport: asyncio.Transport | None = None
        #: the loop the transport runs on, kept from `connection_made`: Python 3.11's asyncio.get_running_loop()
        #: makes a getpid() system call each time, and a produce request would ask twice
        self._loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        self._data_waiter: asyncio.Future[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._reading_paused = False  # by this class, for the buffer limit
        self._writing_paused = False
        self._lost: asyncio.Future[None] | None = None  # done once the transport is closed
        self._lost_error: Exception | None = None  # what connection_lost() was given
        self._queued_buffers: list[bytes | bytearray | memoryview] = []  # response bytes not yet written

    # --- asyncio.Protocol -------------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        loop = self._loop = asyncio.get_running_loop()
        self._lost = loop.create_future()
        self.task = loop.create_task(self._on_connected(self))

    def data_received(self, data: bytes) -> None:
        requests = self.requests
        requests.receive_data(data)
        if not self._reading_paused and requests.buffered_bytes > self.max_buffered_bytes:
            assert self.transport is not None
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self.requests.receive_data(b"")
        self._wake_reader()
        # Keep a plain socket open for the responses to requests already read (TLS transports cannot).
        return self.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost_error = exc
        self.requests.receive_data(b"")
        self._wake_reader()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_exception(ConnectionResetError("Connection lost"))
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # --- the connection's task ---------------------------------------------------------------------------------
    @property
    def is_lost(self) -> bool:
        return self._lost is not None and self._lost.done()

    async def wait_for_data(self) -> None:
        """Wait until bytes or EOF arrive that `requests` has not been offered yet (resuming the transport if
        this class paused it). Call it once `requests` has no complete frame left. Raises what the transport failed
        with; after a clean close it returns at once, and `requests` reports the end."""
        if self._reading_paused:
            self._reading_paused = False
            if self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()
        if self.is_lost:
            if self._lost_error is not None:
                raise self._lost_error
            return
        self._data_waiter = self._running_loop().create_future()
        try:
            await self._data_waiter
        finally:
            self._data_waiter = None

    def write_frame(self, frame: ResponseFrame) -> None:
        """Queue one response frame, written with the others queued before the event loop's next iteration."""
        queued = self._queued_buffers
        if not queued:
            self._running_loop().call_soon(self.write_queued)
        if isinstance(frame, BufferedFrame):
            queued.extend(frame.buffers)
        else:
            queued.append(frame)

    def write_queued(self) -> None:
        """Hand the queued frames to the transport in one `writelines`, which uvloop's socket and TLS transports
        write without joining them (a Fetch response's record data is never copied in Python)."""
        queued = self._queued_buffers
        if not queued:
            return
        self._queued_buffers = []
        assert self.transport is not None
        if not self.transport.is_closing():  # else the peer is gone: nobody can read them
            self.transport.writelines(queued)

    async def drain(self) -> None:
        """Write the queued frames, then wait while the transport's write buffer is above its high-water mark;
        raises once the connection is lost."""
        self.write_queued()
        if self.is_lost:
            raise ConnectionResetError("Connection lost")
        if not self._writing_paused:
            return
        self._drain_waiter = self._running_loop().create_future()
        try:
            await self._drain_waiter
        finally:
            self._drain_waiter = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        assert self.transport is not None
        return self.transport.get_extra_info(name, default)

    def close(self) -> None:
        if self.transport is not None:
            self.write_queued()
            self.transport.close()

    async def wait_closed(self) -> None:
        if self._lost is not None:
            await self._lost

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop if self._loop is not None else asyncio.get_running_loop()

    def _wake_reader(self) -> None:
        if self._data_waiter is not None and not self._data_waiter.done():
            self._data_waiter.set_result(None)

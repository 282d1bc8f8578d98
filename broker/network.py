"""The asyncio listeners: one task per client connection feeding a sans-IO `ServerConnection`.

Kafka processes one request at a time per connection (it mutes the channel until the response is sent),
which is also what keeps responses in request order; this loop does the same. A ProtocolError closes only
the offending connection. Runs on the event loop thread only.

One `SocketServer` serves every listener (`listeners=PLAINTEXT://...,SSL://...`); each connection's `Session`
carries the listener's name and security protocol, and its principal: `User:ANONYMOUS` on PLAINTEXT, on SSL the
client certificate's DN through `ssl.principal.mapping.rules` (ANONYMOUS without a certificate), on SASL
listeners what the `SaslAuthenticator` established. TLS is asyncio's: the handshake completes before the
connection is handed to this module (a failed handshake never reaches it and is logged at DEBUG).

SASL (SASL_PLAINTEXT, SASL_SSL), the network side of the contract with `broker/security/sasl_authenticator.py`:
one authenticator per connection; until it has authenticated, frames above `sasl.server.max.receive.size` close
the connection; each request is routed by it: CLOSE closes the connection, SASL is answered by the authenticator
(closing afterwards when it says so), DISPATCH goes to the dispatcher with the authenticator's session, unless
that session has expired (KIP-368), which closes the connection as Kafka does.

Resource limits, by Kafka's names (`NetworkLimits`), shared by all listeners: `max.connections`,
`max.connections.per.ip` (+ overrides) through `ConnectionQuotas`; `connections.max.idle.ms` (a connection with no
bytes read or written for that long is closed); `socket.request.max.bytes` (a larger frame closes the connection);
`queued.max.request.bytes` (`MemoryPool`): a frame above SMALL_FRAME_BYTES reserves its declared size before its
body is read, and the connection is muted until it gets it. What the broker holds for requests is therefore
bounded by
    queued.max.request.bytes + connections x (SMALL_FRAME_BYTES + READER_LIMIT_BYTES + one socket read)
however clients behave; a client that trickles a frame holds at most its reservation, and one below
SMALL_FRAME_BYTES needs no reservation, so small requests (Metadata, Fetch, small Produce) are served even while
large ones wait for the pool. `socket.send.buffer.bytes` and `socket.receive.buffer.bytes` size each connection's
kernel buffers as Kafka does (SO_RCVBUF on the listening sockets, SO_SNDBUF on each accepted one; -1 leaves the OS's).

Client quotas (KIP-219): a request that pushes its client over a quota is answered at once with throttle_time_ms,
and the dispatcher calls `throttle_connection`, which mutes that connection: nothing more is read from it until
the throttle time has passed.

Faults (broker/faults, DESIGN.md "The fault layer"): every request passes `SocketServer.faults`, a
`RequestInterceptor`; while its `active` is false (no fault set: always, outside tests) that one attribute check is
all it costs. An active one takes the request instead of the dispatcher: it may answer an error, close the
connection, hold the request, or hand the response to `respond_later`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import enum
import errno
import functools
import itertools
import logging
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from minikafka.broker.client_connection import ClientConnection
from minikafka.broker.connection_quotas import ConnectionQuotas
from minikafka.broker.listeners import EndPoint
from minikafka.broker.memory_pool import MemoryPool
from minikafka.broker.security.principal_mapping import NoMatchingRule, SslPrincipalMapper
from minikafka.broker.session import ANONYMOUS, KafkaPrincipal, Session
from minikafka.broker.startup_error import bind_error
from minikafka.protocol.connection import CONNECTION_CLOSED, NEED_DATA, RequestReceived, ServerConnection
from minikafka.protocol.errors import InvalidConfigError, ProtocolError
from minikafka.protocol.response_frame import ResponseFrame

log = logging.getLogger(__name__)

#: A connection stops reading from its socket once this much unparsed data waits (beyond one socket read).
READER_LIMIT_BYTES = 128 * 1024
#: Frames up to this size are read without a reservation from the memory pool.
SMALL_FRAME_BYTES = 64 * 1024
#: How long a TLS handshake may take before the connection is dropped.
SSL_HANDSHAKE_TIMEOUT_S = 10.0

#: Handles one request of a session; returns the response frame, or None when no response is sent (acks=0 Produce).
RequestDispatcher = Callable[[RequestReceived, Session], Awaitable[ResponseFrame | None]]


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection (e.g. a failed acks=0 Produce)."""


@dataclass(frozen=True)
class NetworkLimits:
    """The broker's resource limits, across listeners (Kafka's defaults: no connection limits, unbounded memory)."""

    max_request_bytes: int = 104_857_600
    max_connections: int = 2_147_483_647
    max_connections_per_ip: int = 2_147_483_647
    per_ip_overrides: tuple[tuple[str, int], ...] = ()
    connections_max_idle_ms: int = 600_000
    queued_max_request_bytes: int | None = None
    #: SO_SNDBUF of each accepted connection and SO_RCVBUF of the listening sockets (None: the OS default, which
    #: Linux grows per connection up to net.ipv4.tcp_wmem/tcp_rmem); Kafka's 100 KiB defaults
    send_buffer_bytes: int | None = 102_400
    receive_buffer_bytes: int | None = 102_400


@dataclass(frozen=True)
class Listener:
    """One endpoint to serve: where to bind, its security protocol, and for TLS its context and principal rules."""

    endpoint: EndPoint
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None


class SaslAuthenticatorLike(Protocol):
    """The part of `sasl_authenticator.SaslAuthenticator` the network layer uses (see the module docstring)."""

    @property
    def authenticated(self) -> bool: ...

    @property
    def session(self) -> Session: ...

    def route(self, event: RequestReceived) -> enum.Enum: ...

    def handle(self, event: RequestReceived) -> Any: ...  # a SaslReply: .response, .close_after

    def session_expired(self, now_monotonic_s: float) -> bool: ...


class SaslMechanismsLike(Protocol):
    """The part of `sasl_authenticator.SaslMechanisms` the network layer uses."""

    def failed_authentication_delay_s(self) -> float: ...

    def authenticator(self, session: Session, connections_max_reauth_ms: int) -> SaslAuthenticatorLike: ...

    def max_receive_size_bytes(self, listener_name: str) -> int: ...

    def connections_max_reauth_ms(self, listener_name: str) -> int: ...


class RequestInterceptor(Protocol):
    """What `SocketServer.faults` is (the fault layer's `BrokerFaults`): consulted for every request while `active`."""

    active: bool

    def intercept(self, event: RequestReceived, session: Session,
                  dispatch: RequestDispatcher) -> Awaitable[ResponseFrame | None]: ...


class _NoFaults:
    """The interceptor of a broker without a fault layer: never active."""

    active = False

    async def intercept(self, event: RequestReceived, session: Session,
                        dispatch: RequestDispatcher) -> ResponseFrame | None:
        return await dispatch(event, session)


class _Client:
    """One live connection's task, its protocol, peer address and last I/O time."""

    __slots__ = ("busy", "conn", "held_responses", "ip", "last_io_s", "muted_until_s", "task")

    def __init__(self, ip: str, task: asyncio.Task[None], conn: ClientConnection) -> None:
        self.ip = ip
        self.task = task
        #: None once the connection's task ended: the task and its context (which holds this object) form a cycle
        #: that only the cyclic GC frees, and the connection's buffers must not wait for it
        self.conn: ClientConnection | None = conn
        self.last_io_s = time.monotonic()
        self.busy = False  # a request is being handled (a long-polling Fetch, a JoinGroup): never idle
        self.muted_until_s = 0.0  # KIP-219: throttled by a client quota, nothing is read before this time
        #: (due time, frame, callback) of the responses `respond_later` holds, in request order
        self.held_responses: collections.deque[tuple[float, ResponseFrame, Callable[[], None]]] = collections.deque()


#: The connection whose request is being handled (each connection's task sets it): `throttle_connection` mutes it.
_CURRENT_CLIENT: contextvars.ContextVar[_Client | None] = contextvars.ContextVar("minikafka_client", default=None)


def throttle_connection(throttle_ms: int) -> None:
    """KIP-219: mute the connection of the request being handled for `throttle_ms` from now. Its response still
    goes out at once; the next request is read from it once the time has passed. No-op outside a connection."""
    client = _CURRENT_CLIENT.get()
    if client is not None and throttle_ms > 0:
        client.muted_until_s = max(client.muted_until_s, time.monotonic() + throttle_ms / 1000.0)


def respond_later(frame: ResponseFrame, delay_s: float, on_written: Callable[[], None]) -> None:
    """Write `frame` on the connection of the request being handled `delay_s` from now (a fault's round-trip time),
    never before a response held earlier on that connection, so responses keep their request order; then call
    `on_written` (also when the connection closed meanwhile and the frame is dropped). The connection goes on
    reading and serving meanwhile, as it would behind a slow network. Outside a connection the frame is dropped."""
    client = _CURRENT_CLIENT.get()
    if client is None:
        on_written()
        return
    held = client.held_responses
    due_s = time.monotonic() + delay_s
    if held:
        due_s = max(due_s, held[-1][0])
    held.append((due_s, frame, on_written))
    if len(held) == 1:
        _write_held_when_due(client)


def _listener_bind_error(endpoint: EndPoint, port: int, error: OSError) -> Exception:
    """What a listener that cannot listen on `port` fails start-up with (startup_error.bind_error)."""
    return bind_error("listeners", f"{endpoint.listener_name}://{endpoint.host}:{port}", error,
                      "choose another port or host in listeners")


def _write_held_when_due(client: _Client) -> None:
    """Write the held responses that are due, in order; wait for the next one. A queue rather than a timer per
    response: timers due at the same millisecond need not fire in the order they were set."""
    held = client.held_responses
    now_s = time.monotonic()
    while held and held[0][0] <= now_s:
        _due_s, frame, on_written = held.popleft()
        try:
            if client.conn is not None and not client.conn.is_lost:
                client.conn.write_frame(frame)
        finally:
            on_written()
    if held:
        asyncio.get_running_loop().call_later(held[0][0] - now_s, _write_held_when_due, client)


class SocketServer:
    """Owns the listening sockets, the live connections of every listener, their quotas and the request memory
    pool. `bind()` opens the sockets (the bound ports are then known), `start()` begins serving."""

    def __init__(
        self,
        listeners: Sequence[Listener],
        limits: NetworkLimits | None = None,
        sasl_mechanisms: SaslMechanismsLike | None = None,
    ) -> None:
        if not listeners:
            raise ValueError("at least one listener")
        for listener in listeners:
            endpoint = listener.endpoint
            if endpoint.uses_sasl and sasl_mechanisms is None:
                raise InvalidConfigError(
                    f"Invalid value {endpoint.connection_string} for configuration listeners: listener "
                    f"{endpoint.listener_name} uses {endpoint.security_protocol} but no SASL mechanism is enabled "
                    f"on this broker (sasl.enabled.mechanisms)")
            if endpoint.uses_tls and listener.ssl_context is None:
                raise InvalidConfigError(f"listener {endpoint.listener_name} uses {endpoint.security_protocol} "
                                         f"but has no SSL context")
        self.listeners = tuple(listeners)
        self._dispatch: RequestDispatcher | None = None
        self.limits = limits or NetworkLimits()
        self._sasl_mechanisms = sasl_mechanisms
        self.quotas = ConnectionQuotas(self.limits.max_connections, self.limits.max_connections_per_ip,
                                       dict(self.limits.per_ip_overrides))
        self.memory_pool = MemoryPool(self.limits.queued_max_request_bytes)
        self._servers: dict[str, asyncio.Server] = {}
        self.bound_ports: dict[str, int] = {}
        self._clients: dict[asyncio.Task[None], _Client] = {}
        self._idle_reaper: asyncio.Task[None] | None = None
        self._in_flight = 0  # requests being handled right now, across connections
        self._idle = asyncio.Event()
        self._idle.set()
        self._stopping = False
        self._connection_ids = itertools.count()
        #: called with a connection's Session once it closed (share sessions end with their connection)
        self.disconnect_listeners: list[Callable[[Session], None]] = []
        #: the fault layer's hook for this broker (broker/faults); inactive unless a test sets a fault
        self.faults: RequestInterceptor = _NoFaults()

    async def bind(self) -> None:
        """Open every listener's socket (not accepting yet); a port 0 gets a free port (see `bound_ports`)."""
        try:
            for listener in self.listeners:
                endpoint = listener.endpoint
                on_connected = functools.partial(self._on_connection, listener)
                try:
                    server = await asyncio.get_running_loop().create_server(
                        functools.partial(ClientConnection, on_connected, READER_LIMIT_BYTES),
                        endpoint.host or None, endpoint.port,
                        reuse_address=True, start_serving=False, ssl=listener.ssl_context,
                        ssl_handshake_timeout=SSL_HANDSHAKE_TIMEOUT_S if listener.ssl_context is not None else None,
                    )
                except OSError as error:
                    raise _listener_bind_error(endpoint, endpoint.port, error) from None
                if self.limits.receive_buffer_bytes is not None:  # before listen(): accepted sockets inherit it
                    for listening in server.sockets:
                        listening.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.limits.receive_buffer_bytes)
                self._servers[endpoint.listener_name] = server
                self.bound_ports[endpoint.listener_name] = server.sockets[0].getsockname()[1]
        except BaseException:
            for server in self._servers.values():
                server.close()
            raise

    async def start(self, dispatch: RequestDispatcher) -> None:
        """Serve every listener (binding first if `bind()` was not called), requests going to `dispatch`."""
        self._dispatch = dispatch
        if not self._servers:
            await self.bind()
        for listener in self.listeners:
            server = self._servers[listener.endpoint.listener_name]
            await server.start_serving()
            self._check_listening(listener.endpoint, server)
        self._idle_reaper = asyncio.create_task(self._close_idle_connections(), name="minikafka-idle-reaper")

    def _check_listening(self, endpoint: EndPoint, server: asyncio.Server) -> None:
        """uvloop's start_serving() swallows a failed listen() (EADDRINUSE: another socket began listening on the
        port since bind(), such as the admin port set to the same number) and closes the socket; fail start-up
        with the one-line bind error instead of serving nothing."""
        for sock in server.sockets:
            try:
                listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            except (OSError, ValueError):  # ValueError: uvloop closed it (fd -1)
                listening = 0
            if not listening:
                raise _listener_bind_error(endpoint, self.bound_ports[endpoint.listener_name],
                                           OSError(errno.EADDRINUSE, "Address already in use"))

    @property
    def port(self) -> int:
        """The first listener's bound port."""
        return self.bound_ports[self.listeners[0].endpoint.listener_name]

    @property
    def connection_count(self) -> int:
        return len(self._clients)

    def _set_send_buffer(self, conn: ClientConnection) -> None:
        """Kafka's configureAcceptedSocketChannel: SO_SNDBUF from socket.send.buffer.bytes (what the size costs a
        consumer: DESIGN.md, "Socket buffers")."""
        sock = conn.get_extra_info("socket")
        if self.limits.send_buffer_bytes is not None and sock is not None:
            with contextlib.suppress(OSError):  # the peer already left: the task finds out on its first read
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.send_buffer_bytes)

    async def _on_connection(self, listener: Listener, conn: ClientConnection) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = conn.get_extra_info("peername")
        ip = str(peer[0]) if peer else "?"
        refused = self.quotas.try_accept(ip)
        if refused is not None:
            log.info("closing connection from %s: %s", peer, refused)
            conn.close()
            return
        self._set_send_buffer(conn)
        client = self._clients[task] = _Client(ip, task, conn)
        _CURRENT_CLIENT.set(client)  # this task's context only
        session: Session | None = None
        try:
            session = Session(self._principal(listener, conn), ip, listener.endpoint.listener_name,
                              listener.endpoint.security_protocol,
                              connection_id=f"{ip}:{peer[1] if peer else 0}-{next(self._connection_ids)}")
            await self._serve(conn, client, listener, session)
        except ProtocolError as exc:
            log.info("closing connection from %s: %s", peer, exc)
        except CloseConnection as exc:
            log.debug("closing connection from %s: %s", peer, exc)
        except (ConnectionError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("unexpected error on connection from %s; closing it", peer)
        finally:
            del self._clients[task]
            client.conn = None
            self.quotas.release(ip)
            if session is not None:
                for on_disconnect in self.disconnect_listeners:
                    try:
                        on_disconnect(session)
                    except Exception:
                        log.exception("a disconnect listener failed for %s", peer)
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()

    @staticmethod
    def _principal(listener: Listener, conn: ClientConnection) -> KafkaPrincipal:
        """ANONYMOUS, or on an SSL listener the client certificate's mapped DN (SASL decides for SASL_SSL)."""
        if listener.endpoint.security_protocol != "SSL" or listener.principal_mapper is None:
            return ANONYMOUS
        ssl_object = conn.get_extra_info("ssl_object")
        certificate = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            return listener.principal_mapper.principal(certificate)
        except NoMatchingRule as exc:
            log.info("Failed authentication with %s on listener %s: %s", conn.get_extra_info("peername"),
                     listener.endpoint.listener_name, exc)
            raise CloseConnection(str(exc)) from None

    async def _serve(self, conn: ClientConnection, client: _Client, listener: Listener, session: Session) -> None:
        connection = conn.requests
        connection.max_request_bytes = self.limits.max_request_bytes
        authenticator: SaslAuthenticatorLike | None = None
        if listener.endpoint.uses_sasl:
            assert self._sasl_mechanisms is not None
            mechanisms, name = self._sasl_mechanisms, listener.endpoint.listener_name
            authenticator = mechanisms.authenticator(session, mechanisms.connections_max_reauth_ms(name))
            connection.max_request_bytes = mechanisms.max_receive_size_bytes(name)
        reserved_bytes = 0  # pool reservation of the frame being read
        try:
            while not self._stopping:
                if not reserved_bytes and self.memory_pool.bounded:
                    reserved_bytes = await self._reserve(conn)
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
                        if authenticator is None:
                            frame = await self._dispatch_request(event, session)
                        else:
                            frame = await self._sasl_request(event, authenticator, conn)
                        if frame is not None:
                            conn.write_frame(frame)
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
                    # both checked here first: each is a coroutine to create and await per request otherwise
                    if client.muted_until_s > time.monotonic():
                        await self._wait_unmuted(conn, client)
                    if self.memory_pool.bounded:
                        reserved_bytes = await self._reserve(conn)
                await conn.drain()
                client.last_io_s = time.monotonic()
                await conn.wait_for_data()
                client.last_io_s = time.monotonic()
        finally:
            self.memory_pool.release(reserved_bytes)

    async def _dispatch_request(self, event: RequestReceived, session: Session) -> ResponseFrame | None:
        assert self._dispatch is not None
        if self.faults.active:  # the fault layer's whole cost when no fault is set
            return await self.faults.intercept(event, session, self._dispatch)
        return await self._dispatch(event, session)

    async def _sasl_request(self, event: RequestReceived, authenticator: SaslAuthenticatorLike,
                            conn: ClientConnection) -> ResponseFrame | None:
        """One request on a SASL listener, routed by its authenticator (the contract in the module docstring)."""
        route = authenticator.route(event).value
        if route == "close":
            raise CloseConnection(f"{event.api_key.name} request before SASL authentication")
        if route == "sasl":
            reply = authenticator.handle(event)
            frame = ServerConnection.encode_response(event, reply.response)
            if reply.close_after:
                conn.write_frame(frame)
                await conn.drain()
                assert self._sasl_mechanisms is not None
                await asyncio.sleep(self._sasl_mechanisms.failed_authentication_delay_s())  # as Kafka, delay the close
                raise CloseConnection("SASL authentication failed")
            if authenticator.authenticated:
                conn.requests.max_request_bytes = self.limits.max_request_bytes
            return frame
        if authenticator.session_expired(time.monotonic()):
            raise CloseConnection("SASL session expired (connections.max.reauth.ms) without re-authentication")
        return await self._dispatch_request(event, authenticator.session)

    @staticmethod
    async def _wait_unmuted(conn: ClientConnection, client: _Client) -> None:
        """KIP-219: once a throttled connection's response is out, read nothing more from it (pipelined requests
        included) until its throttle time has passed; the idle reaper leaves it alone meanwhile."""
        if client.muted_until_s <= time.monotonic():
            return
        client.busy = True
        try:
            await conn.drain()
            await asyncio.sleep(max(client.muted_until_s - time.monotonic(), 0.0))
        finally:
            client.busy = False
            client.last_io_s = time.monotonic()

    async def _reserve(self, conn: ClientConnection) -> int:
        """Reserve the next frame's size if it is large, with the socket muted while the pool is short; returns
        the bytes reserved. A frame over the connection's limit is left to ServerConnection to refuse."""
        connection = conn.requests
        frame_bytes = connection.pending_frame_bytes()
        if (not self.memory_pool.bounded or frame_bytes is None
                or not SMALL_FRAME_BYTES < frame_bytes <= connection.max_request_bytes):
            return 0
        transport = conn.transport
        assert transport is not None
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
        for server in self._servers.values():
            server.close()
        if self._idle_reaper is not None:
            self._idle_reaper.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace_s)
        tasks = list(self._clients)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers.values():
            await server.wait_closed()

"""`bind_admin_port`: the metrics/admin HTTP port's listening sockets, bound before the Kafka listener.

The broker binds and listens on `minikafka.metrics.port` while it starts (a port in use still stops it with one
line) but imports and starts the HTTP server (aiohttp, the console) only once a client connects to that port
(`first_connection`): that client waits in the listen backlog meanwhile instead of being refused, and a broker
whose admin port nobody uses (most test fixtures) never pays for aiohttp. `bind_admin_port`: any thread (it only
creates sockets); `first_connection`: the event-loop thread.
"""

from __future__ import annotations

import asyncio
import socket

#: the listen backlog asyncio's create_server uses
BACKLOG = 100


def bind_admin_port(host: str, port: int) -> list[socket.socket]:
    """Listening, non-blocking sockets for every address `host` resolves to (as asyncio's create_server binds
    them; "" or 0.0.0.0 means every IPv4 address); raises OSError as a bind would."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _name, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


async def first_connection(sockets: list[socket.socket]) -> None:
    """Return once a client waits to be accepted on any of `sockets` (the connection itself stays in the backlog
    for the server that accepts it next)."""
    loop = asyncio.get_running_loop()
    connected: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not connected.done():
            connected.set_result(None)

    for sock in sockets:
        loop.add_reader(sock.fileno(), ready)
    try:
        await connected
    finally:
        for sock in sockets:
            loop.remove_reader(sock.fileno())

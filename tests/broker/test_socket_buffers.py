"""socket.send.buffer.bytes and socket.receive.buffer.bytes, as Kafka's SocketServer applies them: SO_RCVBUF on
each listening socket before it listens (so every accepted connection has it), SO_SNDBUF on each accepted
connection, plaintext and TLS alike; -1 leaves the operating system's default (on Linux, buffers that grow with
the connection). Read back from the sockets of a real SocketServer while it serves a request on loopback."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path

import pytest

from minikafka.broker import network
from minikafka.broker.config import KafkaConfig
from minikafka.broker.network import Listener, SocketServer
from minikafka.broker.security.ssl_factory import create_server_context
from minikafka.broker.session import Session
from minikafka.protocol.connection import RequestReceived
from tests.tls_material import CertificateAuthority

API_VERSIONS_V0 = b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x07\xff\xff"
ANSWER = b"\x00\x00\x00\x00"


def _tcp_default(name: str) -> int:
    """The initial buffer of a TCP socket: the middle value of net.ipv4.tcp_wmem / tcp_rmem."""
    return int(Path(f"/proc/sys/net/ipv4/{name}").read_text().split()[1])


async def _buffers_seen_while_serving(tmp_path: Path, overrides: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """Per listener: (the connection's SO_SNDBUF, its SO_RCVBUF, the listening socket's SO_RCVBUF)."""
    ca = CertificateAuthority()
    config = KafkaConfig({
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(ca.issue_server().write_pem_keystore(tmp_path / "s.pem")),
        **overrides,
    })
    listeners = [Listener(endpoint, create_server_context(config.ssl_configs[endpoint.listener_name]))
                 if endpoint.uses_tls else Listener(endpoint) for endpoint in config.listeners]
    seen: dict[str, tuple[int, int, int]] = {}
    server = SocketServer(listeners, config.network_limits)

    async def dispatch(event: RequestReceived, session: Session) -> bytes:
        client = network._CURRENT_CLIENT.get()  # the connection whose request this is
        assert client is not None and client.conn is not None
        accepted = client.conn.get_extra_info("socket")
        listening = server._servers[session.listener_name].sockets[0]
        seen[session.listener_name] = (accepted.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                                       accepted.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
                                       listening.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
        return ANSWER

    await server.start(dispatch)
    try:
        for name, port in server.bound_ports.items():
            context = ssl.create_default_context(cafile=str(ca.write_pem_truststore(tmp_path / "ca.pem")))
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=context if name == "SSL" else None,
                server_hostname="localhost" if name == "SSL" else None)
            writer.write(API_VERSIONS_V0)
            assert await asyncio.wait_for(reader.readexactly(4), 10) == ANSWER
            writer.close()
    finally:
        await server.stop(1.0)
    return seen


@pytest.mark.timeout(60)
async def test_kafkas_defaults_set_both_buffers_on_every_listener(tmp_path: Path) -> None:
    seen = await _buffers_seen_while_serving(tmp_path, {})
    # Linux doubles what setsockopt asks for (socket(7)); Kafka's default is 100 KiB for both
    assert seen == {"PLAINTEXT": (204_800, 204_800, 204_800), "SSL": (204_800, 204_800, 204_800)}


@pytest.mark.timeout(60)
async def test_configured_sizes_apply_and_minus_one_leaves_the_os_default(tmp_path: Path) -> None:
    seen = await _buffers_seen_while_serving(
        tmp_path, {"socket.send.buffer.bytes": "65536", "socket.receive.buffer.bytes": "32768"})
    assert seen["PLAINTEXT"] == seen["SSL"] == (131_072, 65_536, 65_536)

    seen = await _buffers_seen_while_serving(
        tmp_path, {"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1"})
    for send_bytes, receive_bytes, listening_receive_bytes in seen.values():
        assert send_bytes >= _tcp_default("tcp_wmem") and send_bytes != 204_800
        assert listening_receive_bytes == _tcp_default("tcp_rmem")
        assert receive_bytes >= _tcp_default("tcp_rmem")

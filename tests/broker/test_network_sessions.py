"""The Session each connection's requests carry, through a real SocketServer with PLAINTEXT, SSL and SASL
listeners on loopback: listener name, security protocol, and the principal (ANONYMOUS, the client certificate's
DN). On the SASL listener ApiVersions is served before authentication and anything else closes the connection;
authenticated SASL sessions are tested with real clients in tests/integration/test_sasl_listeners.py."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from minikafka.broker.config import KafkaConfig
from minikafka.broker.network import Listener, SocketServer
from minikafka.broker.security.sasl_authenticator import SaslMechanisms
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.security.ssl_factory import create_server_context
from minikafka.broker.session import ANONYMOUS, KafkaPrincipal, Session
from minikafka.protocol.connection import RequestReceived
from tests.tls_material import CertificateAuthority

API_VERSIONS_V0 = b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x07\xff\xff"
METADATA_V0 = b"\x00\x00\x00\x0e\x00\x03\x00\x00\x00\x00\x00\x08\xff\xff\x00\x00\x00\x00"
ANSWER = b"\x00\x00\x00\x00"


async def _exchange(port: int, frame: bytes, context: ssl.SSLContext | None = None) -> bytes:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost" if context else None)
    try:
        writer.write(frame)
        await writer.drain()
        try:
            return await asyncio.wait_for(reader.read(4), 10)
        except (ConnectionError, ssl.SSLError):
            return b""
    finally:
        writer.close()


@pytest.mark.timeout(60)
async def test_sessions_carry_listener_protocol_and_principal(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    server = ca.issue_server()
    client = ca.issue_client("client", "dev")
    config = KafkaConfig({
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(server.write_pem_keystore(tmp_path / "s.pem")),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.write_pem_truststore(tmp_path / "ca.pem")),
        "ssl.client.auth": "requested", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    })
    listeners = [Listener(endpoint, create_server_context(config.ssl_configs[endpoint.listener_name]),
                          config.ssl_configs[endpoint.listener_name].principal_mapper)
                 if endpoint.uses_tls else Listener(endpoint) for endpoint in config.listeners]
    sessions: list[Session] = []

    async def dispatch(event: RequestReceived, session: Session) -> bytes:
        sessions.append(session)
        return ANSWER

    socket_server = SocketServer(listeners, config.network_limits,
                                 sasl_mechanisms=SaslMechanisms(config.props, ScramCredentialStore()))
    await socket_server.start(dispatch)
    try:
        ports = socket_server.bound_ports
        assert await _exchange(ports["PLAINTEXT"], API_VERSIONS_V0) == ANSWER
        anonymous_tls = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        assert await _exchange(ports["SSL"], API_VERSIONS_V0, anonymous_tls) == ANSWER
        mutual_tls = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        mutual_tls.load_cert_chain(str(client.write_certificate(tmp_path / "c.crt")),
                                   str(client.write_key(tmp_path / "c.key")))
        assert await _exchange(ports["SSL"], API_VERSIONS_V0, mutual_tls) == ANSWER
        assert await _exchange(ports["SASL_PLAINTEXT"], API_VERSIONS_V0) == ANSWER
        # before authentication: closed, not answered
        assert await _exchange(ports["SASL_PLAINTEXT"], METADATA_V0) == b""
    finally:
        await socket_server.stop(1.0)
    assert [(s.principal, s.listener_name, s.security_protocol) for s in sessions] == [
        (ANONYMOUS, "PLAINTEXT", "PLAINTEXT"),
        (ANONYMOUS, "SSL", "SSL"),
        (KafkaPrincipal("User", "CN=client,OU=dev,O=acme"), "SSL", "SSL"),
        (ANONYMOUS, "SASL_PLAINTEXT", "SASL_PLAINTEXT"),  # ApiVersions is served before authentication
    ]
    assert {s.client_address for s in sessions} == {"127.0.0.1"}

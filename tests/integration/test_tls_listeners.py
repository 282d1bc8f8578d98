"""SSL listeners with real clients and certificates made here: confluent-kafka, kafka-python, aiokafka, kcat and
the Java client produce and consume over TLS; an untrusted server certificate, a missing client certificate
under ssl.client.auth=required and a DN no mapping rule accepts are refused; Metadata over each listener
advertises that listener. One broker for the module, four listeners:

    PLAINTEXT  readiness, Metadata comparison
    SSL        PEM key store file, no client auth
    MTLS       ssl.client.auth=required, ssl.principal.mapping.rules accepting CN=client,OU=dev only
    P12        PKCS12 key store through listener.name.p12.ssl.* overrides
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikafka.testing import MiniKafka
from tests.integration.secured_round_trips import (
    aiokafka_round_trip,
    confluent_round_trip,
    kafka_python_round_trip,
)
from tests.tls_material import PASSWORD, CertificateAuthority

KCAT = shutil.which("kcat")
COUNT = 50
pytestmark = pytest.mark.timeout(180)


class Tls:
    """The module's certificate files."""

    def __init__(self, root: Path) -> None:
        self.ca = CertificateAuthority()
        server = self.ca.issue_server()
        self.server_pem = server.write_pem_keystore(root / "server.pem", key_password="kp")
        self.server_p12 = server.write_pkcs12_keystore(root / "server.p12")
        self.ca_pem = self.ca.write_pem_truststore(root / "ca.pem")
        client = self.ca.issue_client("client", "dev")
        self.client_cert, self.client_key = client.write_certificate(root / "client.crt"), client.write_key(
            root / "client.key")
        intruder = self.ca.issue_client("intruder", "dev")
        self.intruder_cert, self.intruder_key = intruder.write_certificate(root / "intruder.crt"), intruder.write_key(
            root / "intruder.key")
        self.other_ca_pem = CertificateAuthority("another CA").write_pem_truststore(root / "other-ca.pem")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def kafka(tls: Tls) -> Iterator[MiniKafka]:
    config = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_pem),
        "ssl.key.password": "kp",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_pem),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=(client),OU=dev,O=acme$/$1/",
        "listener.name.p12.ssl.keystore.type": "PKCS12",
        "listener.name.p12.ssl.keystore.location": str(tls.server_p12),
        "listener.name.p12.ssl.keystore.password": PASSWORD,
        "num.partitions": 2,
        "offsets.topic.num.partitions": 1,
        "group.initial.rebalance.delay.ms": 0,
    }
    with MiniKafka(config, listeners={"SSL": "SSL", "MTLS": "SSL", "P12": "SSL"}) as broker:
        yield broker


def _topic() -> str:
    return f"tls-{uuid.uuid4().hex[:8]}"


def _confluent_ssl(tls: Tls, *, client_cert: bool = False, ca: Path | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"security.protocol": "ssl", "ssl.ca.location": str(ca or tls.ca_pem)}
    if client_cert:
        config |= {"ssl.certificate.location": str(tls.client_cert), "ssl.key.location": str(tls.client_key)}
    return config


def test_confluent_kafka_over_ssl_with_pem_and_pkcs12_keystores(kafka: MiniKafka, tls: Tls) -> None:
    for listener in ("SSL", "P12"):
        values = confluent_round_trip(kafka.bootstrap_servers_for(listener), _confluent_ssl(tls), COUNT)
        assert sorted(values) == sorted(f"v{i}".encode() for i in range(COUNT)), listener


def test_kafka_python_over_ssl(kafka: MiniKafka, tls: Tls) -> None:
    options = {"security_protocol": "SSL", "ssl_cafile": str(tls.ca_pem)}
    values = kafka_python_round_trip(kafka.bootstrap_servers_for("SSL"), options, COUNT)
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(COUNT))


def test_aiokafka_over_ssl_with_client_certificate(kafka: MiniKafka, tls: Tls) -> None:
    from aiokafka.helpers import create_ssl_context

    context = create_ssl_context(cafile=str(tls.ca_pem), certfile=str(tls.client_cert), keyfile=str(tls.client_key))
    values = aiokafka_round_trip(kafka.bootstrap_servers_for("MTLS"), {"security_protocol": "SSL",
                                                                        "ssl_context": context}, COUNT)
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(COUNT))


@pytest.mark.skipif(KCAT is None, reason="kcat is not on PATH (apt-get install kcat to run this test)")
def test_kcat_over_ssl(kafka: MiniKafka, tls: Tls) -> None:
    assert KCAT is not None
    topic = _topic()
    common = ["-b", kafka.bootstrap_servers_for("SSL"), "-X", "security.protocol=ssl",
              "-X", f"ssl.ca.location={tls.ca_pem}", "-t", topic]
    lines = [f"key{i}:value {i}" for i in range(COUNT)]
    produced = subprocess.run([KCAT, *common, "-P", "-K", ":"], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([KCAT, *common, "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n"],
                              capture_output=True, text=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.splitlines()) == sorted(lines)


def test_java_client_over_ssl(kafka: MiniKafka, tls: Tls) -> None:
    from tests.interop.java_client import ClientUnavailableError, ensure_built, run_java_client

    try:
        ensure_built()
    except ClientUnavailableError as exc:
        pytest.skip(f"Java interop client unavailable: {exc}")
    security = {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca_pem)}
    summary = run_java_client(kafka.bootstrap_servers_for("SSL"), _topic(), 200, partitions=2,
                              producer_config=security, consumer_config=security)
    assert summary["produced"] == 200 and summary["consumed"] == 200, summary
    assert summary["digest"] == summary["produced_digest"]


def _metadata_brokers(bootstrap: str, config: dict[str, Any]) -> list[tuple[str, int]]:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": bootstrap, **config}).list_topics(timeout=20)
    return [(broker.host, broker.port) for broker in metadata.brokers.values()]


def test_metadata_and_describe_cluster_advertise_the_listener_the_request_came_in_on(
        kafka: MiniKafka, tls: Tls) -> None:
    from confluent_kafka.admin import AdminClient

    for listener, config in (("PLAINTEXT", {}), ("SSL", _confluent_ssl(tls)), ("P12", _confluent_ssl(tls)),
                             ("MTLS", _confluent_ssl(tls, client_cert=True))):
        host, port = kafka.bootstrap_servers_for(listener).split(":")
        assert _metadata_brokers(kafka.bootstrap_servers_for(listener), config) == [(host, int(port))], listener
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers_for("SSL"), **_confluent_ssl(tls)})
    cluster = admin.describe_cluster(request_timeout=20).result(timeout=30)
    assert [(node.host, node.port) for node in cluster.nodes] == [
        ("127.0.0.1", int(kafka.bootstrap_servers_for("SSL").split(":")[1]))]


def _tls_handshake(port: int, ca: Path, cert: Path | None = None, key: Path | None = None) -> bytes:
    """Handshake, then send one ApiVersions v0 request and return the response frame (b"" when closed)."""
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as conn:
        conn.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x07\xff\xff")
        try:
            return conn.recv(4)
        except (ssl.SSLError, ConnectionError):
            return b""


def test_untrusted_server_certificate_fails_the_handshake(kafka: MiniKafka, tls: Tls) -> None:
    port = int(kafka.bootstrap_servers_for("SSL").split(":")[1])
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        _tls_handshake(port, tls.other_ca_pem)
    from confluent_kafka.admin import AdminClient

    errors: list[str] = []
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers_for("SSL"),
                         **_confluent_ssl(tls, ca=tls.other_ca_pem), "error_cb": lambda e: errors.append(str(e))})
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    admin.poll(1)  # serves the error callback
    assert any("certificate verify failed" in error for error in errors), errors


def test_client_auth_required_refuses_a_client_without_certificate(kafka: MiniKafka, tls: Tls) -> None:
    port = int(kafka.bootstrap_servers_for("MTLS").split(":")[1])
    # TLS 1.3: the server's refusal arrives after the client's handshake completes, on the first read
    try:
        answer = _tls_handshake(port, tls.ca_pem)
    except (ssl.SSLError, ConnectionError):
        answer = b""
    assert answer == b""
    assert len(_tls_handshake(port, tls.ca_pem, tls.client_cert, tls.client_key)) == 4


def test_principal_mapping_rules_refuse_a_dn_no_rule_accepts(kafka: MiniKafka, tls: Tls) -> None:
    port = int(kafka.bootstrap_servers_for("MTLS").split(":")[1])
    assert _tls_handshake(port, tls.ca_pem, tls.intruder_cert, tls.intruder_key) == b""
    assert len(_tls_handshake(port, tls.ca_pem, tls.client_cert, tls.client_key)) == 4
    assert "No rules apply to CN=intruder,OU=dev,O=acme" in kafka.read_log()

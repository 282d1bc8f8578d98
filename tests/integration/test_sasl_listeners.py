"""SASL listeners with real clients: confluent-kafka, kafka-python, aiokafka, the Java client and kcat produce and
consume over SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and over SASL_SSL (one mechanism per
client); a wrong password fails with each client's own authentication error. One broker for the module:

    PLAINTEXT       readiness; the SCRAM credentials are created through it (AlterUserScramCredentials)
    SASL_PLAINTEXT  PLAIN users from listener.name.sasl_plaintext.plain.sasl.jaas.config, SCRAM from the store
    SASL_SSL        the same over TLS (PEM key store, CA from tests/tls_material.py)

Each mechanism has its own password for `alice` (PLAIN alice-plain, SCRAM-SHA-256 alice-256, SCRAM-SHA-512
alice-512), so a client that authenticated proves the broker checked the right credential.
"""

from __future__ import annotations

import asyncio
import shutil
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
from tests.tls_material import CertificateAuthority

KCAT = shutil.which("kcat")
COUNT = 20
USER = "alice"
PASSWORDS = {"PLAIN": "alice-plain", "SCRAM-SHA-256": "alice-256", "SCRAM-SHA-512": "alice-512"}
MECHANISMS = tuple(PASSWORDS)
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-plain";')
pytestmark = pytest.mark.timeout(240)


def cases(ssl_mechanism: str) -> list[Any]:
    """The three mechanisms over SASL_PLAINTEXT, and `ssl_mechanism` over SASL_SSL."""
    return [pytest.param("SASL_PLAINTEXT", m, id=f"sasl_plaintext-{m}") for m in MECHANISMS] + [
        pytest.param("SASL_SSL", ssl_mechanism, id=f"sasl_ssl-{ssl_mechanism}")]


class Tls:
    def __init__(self, root: Path) -> None:
        ca = CertificateAuthority()
        self.server_pem = ca.issue_server().write_pem_keystore(root / "server.pem")
        self.ca_pem = ca.write_pem_truststore(root / "ca.pem")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("sasl-tls"))


def sasl_broker_config(tls: Tls) -> dict[str, Any]:
    return {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_pem),
        "num.partitions": 2,
        "offsets.topic.num.partitions": 1,
        "group.initial.rebalance.delay.ms": 0,
    }


def add_scram_credentials(bootstrap: str, user: str, passwords: dict[str, str]) -> None:
    """AlterUserScramCredentials through confluent-kafka's admin (one request per mechanism, as Kafka's
    controller takes one alteration per user and request)."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for mechanism, password in passwords.items():
        if mechanism.startswith("SCRAM"):
            info = ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], 4096)
            upsert = UserScramCredentialUpsertion(user, info, password.encode())
            for future in admin.alter_user_scram_credentials([upsert]).values():
                future.result(timeout=30)


@pytest.fixture(scope="module")
def kafka(tls: Tls) -> Iterator[MiniKafka]:
    with MiniKafka(sasl_broker_config(tls), listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT",
                                                       "SASL_SSL": "SASL_SSL"}) as broker:
        add_scram_credentials(broker.bootstrap_servers, USER, PASSWORDS)
        yield broker


def _topic() -> str:
    return f"sasl-{uuid.uuid4().hex[:8]}"


def _expected() -> list[bytes]:
    return sorted(f"v{i}".encode() for i in range(COUNT))


def confluent_config(tls: Tls, listener: str, mechanism: str, password: str | None = None) -> dict[str, Any]:
    config = {"security.protocol": listener.lower(), "sasl.mechanism": mechanism, "sasl.username": USER,
              "sasl.password": password or PASSWORDS[mechanism]}
    if listener == "SASL_SSL":
        config["ssl.ca.location"] = str(tls.ca_pem)
    return config


@pytest.mark.parametrize(("listener", "mechanism"), cases("SCRAM-SHA-512"))
def test_confluent_kafka(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str) -> None:
    config = confluent_config(tls, listener, mechanism)
    values = confluent_round_trip(kafka.bootstrap_servers_for(listener), config, COUNT)
    assert sorted(values) == _expected()


def kafka_python_options(tls: Tls, listener: str, mechanism: str, password: str | None = None) -> dict[str, Any]:
    options = {"security_protocol": listener, "sasl_mechanism": mechanism, "sasl_plain_username": USER,
               "sasl_plain_password": password or PASSWORDS[mechanism]}
    if listener == "SASL_SSL":
        options["ssl_cafile"] = str(tls.ca_pem)
    return options


@pytest.mark.parametrize(("listener", "mechanism"), cases("PLAIN"))
def test_kafka_python(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str) -> None:
    options = kafka_python_options(tls, listener, mechanism)
    values = kafka_python_round_trip(kafka.bootstrap_servers_for(listener), options, COUNT)
    assert sorted(values) == _expected()


def aiokafka_options(tls: Tls, listener: str, mechanism: str, password: str | None = None) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    options: dict[str, Any] = {"security_protocol": listener, "sasl_mechanism": mechanism,
                               "sasl_plain_username": USER, "sasl_plain_password": password or PASSWORDS[mechanism]}
    if listener == "SASL_SSL":
        options["ssl_context"] = create_ssl_context(cafile=str(tls.ca_pem))
    return options


@pytest.mark.parametrize(("listener", "mechanism"), cases("SCRAM-SHA-256"))
def test_aiokafka(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str) -> None:
    options = aiokafka_options(tls, listener, mechanism)
    assert sorted(aiokafka_round_trip(kafka.bootstrap_servers_for(listener), options, COUNT)) == _expected()


def java_config(tls: Tls, listener: str, mechanism: str, password: str | None = None) -> dict[str, str]:
    """Java client properties; the JAAS line has no comma (the interop client splits its options on commas)."""
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    config = {"security.protocol": listener, "sasl.mechanism": mechanism,
              "sasl.jaas.config": f'{module} required username="{USER}" '
                                  f'password="{password or PASSWORDS[mechanism]}";'}
    if listener == "SASL_SSL":
        config |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca_pem)}
    return config


def _java_client() -> Any:
    from tests.interop import java_client

    try:
        java_client.ensure_built()
    except java_client.ClientUnavailableError as exc:
        pytest.skip(f"Java interop client unavailable: {exc}")
    return java_client


@pytest.mark.parametrize(("listener", "mechanism"), cases("SCRAM-SHA-512"))
def test_java_client(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str) -> None:
    java_client = _java_client()
    config = java_config(tls, listener, mechanism)
    summary = java_client.run_java_client(kafka.bootstrap_servers_for(listener), _topic(), COUNT, partitions=2,
                                          producer_config=config, consumer_config=config)
    assert summary["produced"] == COUNT and summary["consumed"] == COUNT, summary
    assert summary["digest"] == summary["produced_digest"]


def kcat_options(tls: Tls, listener: str, mechanism: str, password: str | None = None) -> list[str]:
    options = ["-X", f"security.protocol={listener.lower()}", "-X", f"sasl.mechanisms={mechanism}",
               "-X", f"sasl.username={USER}", "-X", f"sasl.password={password or PASSWORDS[mechanism]}"]
    if listener == "SASL_SSL":
        options += ["-X", f"ssl.ca.location={tls.ca_pem}"]
    return options


@pytest.mark.skipif(KCAT is None, reason="kcat is not on PATH (apt-get install kcat to run this test)")
@pytest.mark.parametrize(("listener", "mechanism"), cases("PLAIN"))
def test_kcat(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str) -> None:
    assert KCAT is not None
    topic = _topic()
    common = ["-b", kafka.bootstrap_servers_for(listener), *kcat_options(tls, listener, mechanism), "-t", topic]
    lines = [f"key{i}:value {i}" for i in range(COUNT)]
    produced = subprocess.run([KCAT, *common, "-P", "-K", ":"], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([KCAT, *common, "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n"],
                              capture_output=True, text=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.splitlines()) == sorted(lines)


# ---------------------------------------------------------------------------------------------- wrong passwords

WRONG = "not-the-password"
#: What the broker answers (Kafka's texts): PlainSaslServer's, and SaslServerAuthenticator's for SCRAM.
REFUSAL = {"PLAIN": "Authentication failed: Invalid username or password",
           **{m: f"Authentication failed during authentication due to invalid credentials with SASL mechanism {m}"
              for m in MECHANISMS[1:]}}


@pytest.mark.parametrize(("listener", "mechanism"), [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256")])
def test_wrong_password_confluent_kafka(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[Any] = []
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers_for(listener),
                         **confluent_config(tls, listener, mechanism, WRONG), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(1)  # serves the error callback
    refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]  # then _ALL_BROKERS_DOWN
    assert refused, errors
    assert f"SASL authentication error: {REFUSAL[mechanism]}" in refused[0].str()


@pytest.mark.parametrize(("listener", "mechanism"), [("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN")])
def test_wrong_password_kafka_python(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str,
                                     caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):  # it retries until max_block_ms
        KafkaProducer(bootstrap_servers=kafka.bootstrap_servers_for(listener), bootstrap_timeout_ms=3000,
                      **kafka_python_options(tls, listener, mechanism, WRONG))
    assert f"SaslAuthenticationFailedError: {REFUSAL[mechanism]}" in caplog.text


@pytest.mark.parametrize(("listener", "mechanism"), [("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "PLAIN")])
def test_wrong_password_aiokafka(kafka: MiniKafka, tls: Tls, listener: str, mechanism: str,
                                 caplog: pytest.LogCaptureFixture) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def start() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers_for(listener), request_timeout_ms=5000,
                                    **aiokafka_options(tls, listener, mechanism, WRONG))
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
        asyncio.run(start())
    assert f"SaslAuthenticationFailed: {REFUSAL[mechanism]}" in caplog.text


def test_wrong_password_java_client(kafka: MiniKafka, tls: Tls) -> None:
    java_client = _java_client()
    config = java_config(tls, "SASL_SSL", "SCRAM-SHA-512", WRONG)
    with pytest.raises(AssertionError) as raised:
        java_client.run_java_client(kafka.bootstrap_servers_for("SASL_SSL"), _topic(), 1, partitions=1,
                                    timeout_ms=10_000, producer_config=config, consumer_config=config)
    assert "org.apache.kafka.common.errors.SaslAuthenticationException" in str(raised.value), str(raised.value)[-2000:]
    assert "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
           "SCRAM-SHA-512" in str(raised.value)


@pytest.mark.skipif(KCAT is None, reason="kcat is not on PATH (apt-get install kcat to run this test)")
def test_wrong_password_kcat(kafka: MiniKafka, tls: Tls) -> None:
    assert KCAT is not None
    listed = subprocess.run([KCAT, "-b", kafka.bootstrap_servers_for("SASL_PLAINTEXT"),
                             *kcat_options(tls, "SASL_PLAINTEXT", "SCRAM-SHA-256", WRONG), "-L", "-m", "3"],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode != 0
    assert "SASL authentication error" in listed.stderr, listed.stderr

"""SASL/PLAIN server against kafka-python's PLAIN client (`kafka.net.sasl.plain`) and the RFC 4616 message forms,
with Kafka's PlainSaslServer messages."""

from __future__ import annotations

import pytest
from kafka.net.sasl.plain import SaslMechanismPlain

from minikafka.broker.security.sasl_plain import PlainSaslServer, plain_users
from minikafka.broker.security.sasl_server import SaslAuthenticationError

USERS = plain_users({"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                     "user_alice": "alice-secret"})


def test_users_come_from_the_user_options_only() -> None:
    assert USERS == {"admin": "admin-secret", "alice": "alice-secret"}


def test_kafka_python_client_authenticates() -> None:
    client = SaslMechanismPlain(sasl_plain_username="alice", sasl_plain_password="alice-secret")
    server = PlainSaslServer(USERS)
    challenge = server.evaluate_response(client.auth_bytes())
    client.receive(challenge)
    assert client.is_authenticated() and server.is_complete and server.authorization_id == "alice"


@pytest.mark.parametrize(("message", "error"), [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"\0\0alice-secret", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"a\0alice\0alice-secret\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
])
def test_failures_carry_kafkas_messages(message: bytes, error: str) -> None:
    server = PlainSaslServer(USERS)
    with pytest.raises(SaslAuthenticationError) as raised:
        server.evaluate_response(message)
    assert str(raised.value) == error
    assert not server.is_complete


def test_authorization_id_equal_to_the_user_is_accepted() -> None:
    server = PlainSaslServer(USERS)
    assert server.evaluate_response(b"alice\0alice\0alice-secret") == b""
    assert server.authorization_id == "alice"

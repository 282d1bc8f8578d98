"""SCRAM-SHA-256/512 server against RFC 7677's test vector and kafka-python's SCRAM client (`kafka.net.sasl.scram`),
plus the failures Kafka's ScramSaslServer reports."""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient

from minikafka.broker.security.sasl_server import IllegalSaslStateError, SaslAuthenticationError, SaslError
from minikafka.broker.security.scram import (
    ScramCredential,
    ScramMechanism,
    generate_credential,
    sasl_name,
    username,
)
from minikafka.broker.security.scram_sasl_server import ScramSaslServer

ITERATIONS = 4096


def server_for(credentials: dict[tuple[str, ScramMechanism], ScramCredential], mechanism: ScramMechanism,
               nonce: str | None = None) -> ScramSaslServer:
    if nonce is None:
        return ScramSaslServer(mechanism, lambda user, mech: credentials.get((user, mech)))
    return ScramSaslServer(mechanism, lambda user, mech: credentials.get((user, mech)), server_nonce=lambda: nonce)


def test_rfc7677_test_vector() -> None:
    """RFC 7677 §3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations."""
    mechanism = ScramMechanism.SCRAM_SHA_256
    credential = generate_credential(mechanism, "pencil", 4096, salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    server = server_for({("user", mechanism): credential}, mechanism, nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server_first = server.evaluate_response(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert server_first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    server_final = server.evaluate_response(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.is_complete and server.authorization_id == "user"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_kafka_python_client_authenticates_and_verifies_the_server(mechanism: ScramMechanism) -> None:
    credential = generate_credential(mechanism, "alice-secret", ITERATIONS)
    server = server_for({("alice", mechanism): credential}, mechanism)
    client = ScramClient("alice", "alice-secret", mechanism.mechanism_name)
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    server_final = server.evaluate_response(client.final_message())
    client.process_server_final_message(server_final)  # raises when the server signature is wrong
    assert server.is_complete and server.authorization_id == "alice"
    assert server.mechanism_name == mechanism.mechanism_name


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_wrong_password_fails_on_the_proof(mechanism: ScramMechanism) -> None:
    server = server_for({("alice", mechanism): generate_credential(mechanism, "alice-secret", ITERATIONS)}, mechanism)
    client = ScramClient("alice", "wrong", mechanism.mechanism_name)
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    with pytest.raises(SaslError, match="Invalid client credentials"):
        server.evaluate_response(client.final_message())
    assert not server.is_complete
    with pytest.raises(IllegalSaslStateError):
        server.evaluate_response(client.final_message())


def test_credential_of_the_other_mechanism_does_not_authenticate() -> None:
    credential = generate_credential(ScramMechanism.SCRAM_SHA_512, "alice-secret", ITERATIONS)
    server = server_for({("alice", ScramMechanism.SCRAM_SHA_512): credential}, ScramMechanism.SCRAM_SHA_256)
    client = ScramClient("alice", "alice-secret", "SCRAM-SHA-256")
    with pytest.raises(SaslError, match="Invalid user credentials"):
        server.evaluate_response(client.first_message())


def test_unknown_user_fails_on_the_first_message() -> None:
    server = server_for({}, ScramMechanism.SCRAM_SHA_256)
    with pytest.raises(SaslError, match="Authentication failed: Invalid user credentials"):
        server.evaluate_response(ScramClient("nobody", "x", "SCRAM-SHA-256").first_message())


def test_authorization_id_other_than_the_user_is_refused_with_a_client_visible_message() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_256
    server = server_for({("alice", mechanism): generate_credential(mechanism, "s", ITERATIONS)}, mechanism)
    with pytest.raises(SaslAuthenticationError,
                       match="Client requested an authorization id that is different from username"):
        server.evaluate_response(b"n,a=bob,n=alice,r=abcdef")
    same = server_for({("alice", mechanism): generate_credential(mechanism, "s", ITERATIONS)}, mechanism)
    assert same.evaluate_response(b"n,a=alice,n=alice,r=abcdef").startswith(b"r=abcdef")


def test_channel_binding_and_token_auth_are_refused() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_256
    credentials = {("alice", mechanism): generate_credential(mechanism, "s", ITERATIONS)}
    for first in (b"y,,n=alice,r=abc", b"p=tls-unique,,n=alice,r=abc", b"n,,n=alice,r=abc,tokenauth=true",
                  b"garbage"):
        with pytest.raises(SaslError):
            server_for(credentials, mechanism).evaluate_response(first)
    # other extensions are ignored, as Kafka does
    assert server_for(credentials, mechanism).evaluate_response(b"n,,n=alice,r=abc,ext=1").startswith(b"r=abc")


def test_final_message_with_another_nonce_or_channel_binding_fails() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_256
    credentials = {("alice", mechanism): generate_credential(mechanism, "alice-secret", ITERATIONS)}
    client = ScramClient("alice", "alice-secret", "SCRAM-SHA-256")
    server = server_for(credentials, mechanism)
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    final = client.final_message().decode()
    with pytest.raises(SaslError, match="nonce"):
        server.evaluate_response(final.replace(",p=", "x,p=", 1).encode())  # Kafka: must end with the nonce
    client = ScramClient("alice", "alice-secret", "SCRAM-SHA-256")
    server = server_for(credentials, mechanism)
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    with pytest.raises(SaslError, match="channel binding"):
        server.evaluate_response(client.final_message().replace(b"c=biws", b"c=eSws"))


def test_stored_credential_below_the_minimum_iterations_is_refused() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_256
    weak = generate_credential(mechanism, "s", 4095)
    with pytest.raises(SaslError, match="Iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256"):
        server_for({("alice", mechanism): weak}, mechanism).evaluate_response(b"n,,n=alice,r=abc")


def test_sasl_names_escape_comma_and_equals() -> None:
    assert sasl_name("a=b,c") == "a=3Db=2Cc"
    assert username("a=3Db=2Cc") == "a=b,c"
    with pytest.raises(ValueError):
        username("a=41")
    mechanism = ScramMechanism.SCRAM_SHA_512
    server = server_for({("a=b,c", mechanism): generate_credential(mechanism, "pw", ITERATIONS)}, mechanism)
    client = ScramClient(sasl_name("a=b,c"), "pw", "SCRAM-SHA-512")
    client.process_server_first_message(server.evaluate_response(client.first_message()))
    client.process_server_final_message(server.evaluate_response(client.final_message()))
    assert server.authorization_id == "a=b,c"


def test_credential_repr_hides_the_keys() -> None:
    credential = generate_credential(ScramMechanism.SCRAM_SHA_256, "secret", ITERATIONS)
    assert "hidden" in repr(credential) and credential.stored_key.hex() not in repr(credential)

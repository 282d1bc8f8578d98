"""`SaslAuthenticator`'s state machine as the network layer drives it: every request is a real kafka-python request
object framed and decoded by `ServerConnection`, every answer is encoded and decoded back, and the tokens come
from kafka-python's own SASL mechanisms (`kafka.net.sasl`). Covers pre-authentication routing, the handshake,
PLAIN and SCRAM exchanges with Kafka's errors, and KIP-368 re-authentication and session expiry."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from kafka.net.sasl.plain import SaslMechanismPlain
from kafka.net.sasl.scram import SaslMechanismScram
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from minikafka.broker.security.sasl_authenticator import Route, SaslAuthenticator, SaslMechanisms
from minikafka.broker.security.scram import ScramMechanism, generate_credential
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.session import ANONYMOUS, KafkaPrincipal, Session
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.errors import ErrorCode, InvalidConfigError

LISTENER = "SASL_PLAINTEXT"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
PROPS = {
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
}
_correlation_ids = itertools.count(1)


class FakeMonotonic:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def received(request: Any) -> RequestReceived:
    request.with_header(correlation_id=next(_correlation_ids), client_id="sasl-test")
    connection = ServerConnection()
    connection.receive_data(bytes(request.encode(header=True, framed=True)))
    event = connection.next_event()
    assert isinstance(event, RequestReceived)
    return event


def answer(authenticator: SaslAuthenticator, request: Any) -> tuple[Any, bool]:
    """Route `request` (must be SASL), handle it, and decode the encoded response as a client would."""
    event = received(request)
    assert authenticator.route(event) is Route.SASL
    reply = authenticator.handle(event)
    frame = ServerConnection.encode_response(event, reply.response)
    return request.header.get_response_class().decode(frame[4:], header=True), reply.close_after


def mechanisms(props: dict[str, str] | None = None, clock: FakeMonotonic | None = None) -> SaslMechanisms:
    store = ScramCredentialStore()
    for mechanism in ScramMechanism:
        store.upsert("alice", mechanism, generate_credential(mechanism, "alice-secret", 4096))
        store.upsert("bob", mechanism, generate_credential(mechanism, "bob-secret", 4096))
    return SaslMechanisms(PROPS if props is None else props, store, clock or FakeMonotonic())


def new_authenticator(reauth_ms: int = 0, clock: FakeMonotonic | None = None,
                      props: dict[str, str] | None = None) -> SaslAuthenticator:
    session = Session(ANONYMOUS, "127.0.0.1", LISTENER, "SASL_PLAINTEXT")
    return mechanisms(props, clock).authenticator(session, reauth_ms)


def login(authenticator: SaslAuthenticator, mechanism: str, user: str, password: str,
          authenticate_version: int = 2) -> tuple[Any, bool]:
    """A whole client exchange; returns the last SaslAuthenticate response and its close_after."""
    handshake, close = answer(authenticator, SaslHandshakeRequest[1](mechanism=mechanism))
    assert (handshake.error_code, close) == (ErrorCode.NONE, False)
    config = {"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
    client = SaslMechanismPlain(**config) if mechanism == "PLAIN" else SaslMechanismScram(**config)
    while True:
        response, close = answer(authenticator,
                                 SaslAuthenticateRequest[authenticate_version](auth_bytes=client.auth_bytes()))
        if response.error_code != ErrorCode.NONE:
            return response, close
        client.receive(response.auth_bytes)
        if client.is_done():
            assert client.is_authenticated()
            return response, close


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_authenticates_and_sets_the_principal(mechanism: str) -> None:
    authenticator = new_authenticator()
    assert not authenticator.authenticated and authenticator.session.principal == ANONYMOUS
    response, close = login(authenticator, mechanism, "alice", "alice-secret")
    assert (response.error_code, response.error_message, response.session_lifetime_ms, close) == (
        ErrorCode.NONE, None, 0, False)
    assert authenticator.authenticated
    assert authenticator.session == Session(KafkaPrincipal("User", "alice"), "127.0.0.1", LISTENER, "SASL_PLAINTEXT")
    assert authenticator.route(received(MetadataRequest[12](topics=[], allow_auto_topic_creation=False,
                                                            include_topic_authorized_operations=False))) \
        is Route.DISPATCH
    assert not authenticator.session_expired(10**9)  # connections.max.reauth.ms=0: sessions never expire


@pytest.mark.parametrize(("mechanism", "message"), [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-512"),
])
def test_wrong_password_answers_kafkas_error_then_closes(mechanism: str, message: str) -> None:
    authenticator = new_authenticator()
    response, close = login(authenticator, mechanism, "alice", "wrong-secret")
    assert (response.error_code, response.error_message, close) == (ErrorCode.SASL_AUTHENTICATION_FAILED, message,
                                                                     True)
    assert not authenticator.authenticated and authenticator.session.principal == ANONYMOUS
    assert authenticator.route(received(SaslAuthenticateRequest[2](auth_bytes=b""))) is Route.CLOSE


def test_unknown_scram_user_fails_on_the_first_token_with_the_generic_message() -> None:
    response, close = login(new_authenticator(), "SCRAM-SHA-256", "mallory", "x", authenticate_version=0)
    assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and close
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in response.error_message


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes() -> None:
    response, close = answer(new_authenticator(), SaslHandshakeRequest[1](mechanism="GSSAPI"))
    assert (response.error_code, response.mechanisms, close) == (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], True)


def test_pre_authentication_routing() -> None:
    metadata = MetadataRequest[12](topics=[], allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)
    assert new_authenticator().route(received(metadata)) is Route.CLOSE
    assert new_authenticator().route(received(SaslAuthenticateRequest[2](auth_bytes=b"\0a\0b"))) is Route.CLOSE
    authenticator = new_authenticator()
    versions = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
    assert authenticator.route(received(versions)) is Route.DISPATCH
    assert authenticator.route(received(ApiVersionsRequest[3](client_software_name="t",
                                                              client_software_version="1"))) is Route.CLOSE
    assert authenticator.route(received(metadata)) is Route.CLOSE
    handshake, _ = answer(authenticator, SaslHandshakeRequest[1](mechanism="PLAIN"))
    assert handshake.error_code == ErrorCode.NONE
    assert authenticator.route(received(metadata)) is Route.CLOSE  # waiting for SaslAuthenticate
    second, close = answer(authenticator, SaslHandshakeRequest[1](mechanism="PLAIN"))
    assert (second.error_code, close) == (ErrorCode.ILLEGAL_SASL_STATE, True)


def test_after_authentication_sasl_requests_go_to_the_dispatcher_when_reauthentication_is_off() -> None:
    authenticator = new_authenticator(reauth_ms=0)
    login(authenticator, "PLAIN", "alice", "alice-secret")
    assert authenticator.route(received(SaslHandshakeRequest[1](mechanism="PLAIN"))) is Route.DISPATCH
    assert authenticator.route(received(SaslAuthenticateRequest[2](auth_bytes=b""))) is Route.DISPATCH


def test_handshake_v0_is_refused_and_closed() -> None:
    response, close = answer(new_authenticator(), SaslHandshakeRequest[0](mechanism="PLAIN"))
    assert (response.error_code, close) == (ErrorCode.UNSUPPORTED_VERSION, True)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_reauthentication_renews_the_session_and_expiry_closes(mechanism: str) -> None:
    clock = FakeMonotonic()
    authenticator = new_authenticator(reauth_ms=60_000, clock=clock)
    response, _ = login(authenticator, mechanism, "alice", "alice-secret")
    assert response.session_lifetime_ms == 60_000
    assert not authenticator.session_expired(clock.now_s + 59.9)
    assert authenticator.session_expired(clock.now_s + 60.1)
    clock.now_s += 50
    response, close = login(authenticator, mechanism, "alice", "alice-secret")  # KIP-368 re-authentication
    assert (response.error_code, response.session_lifetime_ms, close) == (ErrorCode.NONE, 60_000, False)
    assert authenticator.authenticated and authenticator.session.principal == KafkaPrincipal("User", "alice")
    assert not authenticator.session_expired(clock.now_s + 59.9)  # counted from the re-authentication
    assert authenticator.session_expired(clock.now_s + 60.1)


def test_reauthentication_more_than_once_a_second_is_left_to_the_dispatcher() -> None:
    clock = FakeMonotonic()
    authenticator = new_authenticator(reauth_ms=60_000, clock=clock)
    login(authenticator, "PLAIN", "alice", "alice-secret")
    login(authenticator, "PLAIN", "alice", "alice-secret")
    clock.now_s += 0.5
    assert authenticator.route(received(SaslHandshakeRequest[1](mechanism="PLAIN"))) is Route.DISPATCH
    clock.now_s += 0.6
    assert authenticator.route(received(SaslHandshakeRequest[1](mechanism="PLAIN"))) is Route.SASL


def test_reauthentication_may_not_change_the_principal() -> None:
    authenticator = new_authenticator(reauth_ms=60_000)
    login(authenticator, "SCRAM-SHA-256", "alice", "alice-secret")
    response, close = login(authenticator, "SCRAM-SHA-256", "bob", "bob-secret")
    assert (response.error_code, close) == (ErrorCode.SASL_AUTHENTICATION_FAILED, True)
    assert response.error_message == "Cannot change principals during re-authentication from User.alice: User.bob"


def test_reauthentication_failure_says_reauthentication() -> None:
    authenticator = new_authenticator(reauth_ms=60_000)
    login(authenticator, "SCRAM-SHA-256", "alice", "alice-secret")
    response, close = login(authenticator, "SCRAM-SHA-256", "alice", "wrong")
    assert close and response.error_message == ("Authentication failed during re-authentication due to invalid "
                                                 "credentials with SASL mechanism SCRAM-SHA-256")


def test_reauthentication_with_another_mechanism_closes_on_the_next_token() -> None:
    authenticator = new_authenticator(reauth_ms=60_000)
    login(authenticator, "PLAIN", "alice", "alice-secret")
    handshake, close = answer(authenticator, SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256"))
    assert (handshake.error_code, close) == (ErrorCode.NONE, False)  # Kafka answers the handshake...
    assert authenticator.route(received(SaslAuthenticateRequest[2](auth_bytes=b"n,,n=alice,r=x"))) is Route.CLOSE


def test_per_mechanism_reauthentication_override() -> None:
    props = dict(PROPS, **{"listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms": "5000"})
    authenticator = new_authenticator(reauth_ms=0, props=props)
    response, _ = login(authenticator, "SCRAM-SHA-256", "alice", "alice-secret")
    assert response.session_lifetime_ms == 5000
    other = new_authenticator(reauth_ms=0, props=props)
    assert login(other, "PLAIN", "alice", "alice-secret")[0].session_lifetime_ms == 0


def test_listener_configuration_errors() -> None:
    session = Session(ANONYMOUS, "127.0.0.1", LISTENER, "SASL_PLAINTEXT")
    for enabled in ("GSSAPI", "PLAIN,OAUTHBEARER"):
        props = dict(PROPS, **{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": enabled})
        with pytest.raises(InvalidConfigError, match="minikafka does not support SASL mechanism"):
            mechanisms(props).authenticator(session, 0)
    with pytest.raises(InvalidConfigError, match="minikafka does not support SASL mechanism GSSAPI"):
        mechanisms({}).authenticator(session, 0)  # Kafka's default sasl.enabled.mechanisms is GSSAPI
    with pytest.raises(InvalidConfigError, match=r"Could not find a 'KafkaServer' or 'sasl_plaintext\.KafkaServer'"):
        mechanisms({"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS}).authenticator(session, 0)
    scram_only = mechanisms({"sasl.enabled.mechanisms": "SCRAM-SHA-512"})
    assert scram_only.listener(LISTENER).enabled_mechanisms == ("SCRAM-SHA-512",)
    assert scram_only.max_receive_size_bytes(LISTENER) == 524_288
    assert scram_only.connections_max_reauth_ms(LISTENER) == 0

"""SASL authentication of one connection (`SaslAuthenticator`) and the broker-wide mechanism table
(`SaslMechanisms`), following Kafka's SaslServerAuthenticator and KIP-368 re-authentication.

The network layer asks `route(event)` for every request of a SASL_PLAINTEXT/SASL_SSL connection:
- before authentication: ApiVersions (only as the first request) -> DISPATCH; SaslHandshake -> SASL; after the
  handshake, SaslAuthenticate -> SASL; anything else -> CLOSE (Kafka closes: "Unexpected Kafka request of type
  ... during SASL handshake").
- after authentication: every request -> DISPATCH, except a SaslHandshake that starts a re-authentication
  (`connections.max.reauth.ms` > 0 and at least one second since the last one began, as Kafka's KafkaChannel)
  -> SASL. A SaslHandshake/SaslAuthenticate that is dispatched gets ILLEGAL_SASL_STATE from its handler.
- during re-authentication: SaslAuthenticate -> SASL, anything else -> CLOSE.

`handle(event)` answers SASL-routed requests; a failure answers with Kafka's error code and message and
`close_after`. The principal is `User:<authorization id>` (Kafka's DefaultKafkaPrincipalBuilder for PLAIN and
SCRAM) and may not change on re-authentication.

Deviations from Kafka, both forced by a network layer that always reads framed Kafka requests: SaslHandshake
v0 (after which Kafka reads raw, unframed SASL tokens) is answered UNSUPPORTED_VERSION and the connection closed;
and an unexpected non-SASL request while a SaslAuthenticate is awaited closes the connection without the
ILLEGAL_SASL_STATE response of that request's type that Kafka sends first.

`SaslMechanisms` is immutable after construction (thread-safe); a `SaslAuthenticator` belongs to one
connection and is used from the event-loop thread only.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.broker.security.sasl_config import (
    FAILED_AUTHENTICATION_DELAY_MS,
    SASL_CONFIG_DEF,
    SaslListenerConfig,
)
from minikafka.broker.security.sasl_plain import PLAIN_MECHANISM, PlainSaslServer
from minikafka.broker.security.sasl_server import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    SaslError,
    SaslServer,
)
from minikafka.broker.security.scram import ScramMechanism
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.security.scram_sasl_server import ScramSaslServer
from minikafka.broker.session import KafkaPrincipal, Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

log = logging.getLogger(__name__)

#: Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS.
MIN_REAUTH_INTERVAL_S = 1.0


class Route(enum.Enum):
    DISPATCH = "dispatch"  # give the request to the Dispatcher as usual (ApiVersions before auth; any API after)
    SASL = "sasl"  # SaslHandshake / SaslAuthenticate: call SaslAuthenticator.handle(event)
    CLOSE = "close"  # any other request before authentication: close the connection (Kafka does)


@dataclass(frozen=True)
class SaslReply:
    response: Any  # a kafka-python response object; encode with ServerConnection.encode_response(event, response)
    close_after: bool  # send the response, then close the connection (failed authentication)


class SaslMechanisms:
    """The enabled mechanisms of every SASL listener, PLAIN's users from JAAS and the SCRAM credential store.

    `props` are the broker's properties; a listener's configuration is resolved (and its errors raised, as
    InvalidConfigError) by `listener(name)`, which the network layer may call at startup for each SASL listener.
    """

    def __init__(
        self,
        props: Mapping[str, str],
        scram_credentials: ScramCredentialStore,
        monotonic_s: Callable[[], float] = time.monotonic,
    ) -> None:
        self._props = dict(props)
        self.scram_credentials = scram_credentials
        self.monotonic_s = monotonic_s
        self._listeners: dict[str, SaslListenerConfig] = {}
        delay_ms = int(SASL_CONFIG_DEF.parse(self._props)[FAILED_AUTHENTICATION_DELAY_MS])
        self._failed_authentication_delay_s = delay_ms / 1000

    def listener(self, listener_name: str) -> SaslListenerConfig:
        config = self._listeners.get(listener_name)
        if config is None:
            config = SaslListenerConfig.from_props(self._props, listener_name)
            self._listeners[listener_name] = config
        return config

    def max_receive_size_bytes(self, listener_name: str) -> int:
        """`sasl.server.max.receive.size`: the largest frame read before the connection has authenticated."""
        return self.listener(listener_name).max_receive_size_bytes

    def failed_authentication_delay_s(self) -> float:
        """`connection.failed.authentication.delay.ms`, in seconds."""
        return self._failed_authentication_delay_s

    def connections_max_reauth_ms(self, listener_name: str) -> int:
        """`connections.max.reauth.ms` of a listener (its `listener.name.<l>.` override first)."""
        return self.listener(listener_name).connections_max_reauth_ms

    def authenticator(self, session: Session, connections_max_reauth_ms: int) -> SaslAuthenticator:
        """A new connection's authenticator; `connections_max_reauth_ms` applies to mechanisms without their
        own `listener.name.<l>.<mechanism>.connections.max.reauth.ms`."""
        return SaslAuthenticator(self, self.listener(session.listener_name), session, connections_max_reauth_ms)

    def create_server(self, mechanism: str, listener: SaslListenerConfig) -> SaslServer:
        if mechanism == PLAIN_MECHANISM:
            return PlainSaslServer(listener.plain_users)
        scram = ScramMechanism.for_mechanism_name(mechanism)
        if scram is None:
            raise ValueError(f"no SASL server for mechanism {mechanism}")
        return ScramSaslServer(scram, self.scram_credentials.get)


class _State(enum.Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = 1  # may be ApiVersions or SaslHandshake
    HANDSHAKE_REQUEST = 2  # after ApiVersions the next request must be SaslHandshake
    AUTHENTICATE = 3  # SaslAuthenticate tokens of the chosen mechanism
    COMPLETE = 4
    FAILED = 5
    REAUTH_BAD_MECHANISM = 6  # re-authentication asked for another mechanism: the next token fails


class SaslAuthenticator:
    """The SASL state of one connection; event-loop thread only."""

    def __init__(self, mechanisms: SaslMechanisms, listener: SaslListenerConfig, session: Session,
                 connections_max_reauth_ms: int) -> None:
        self._mechanisms = mechanisms
        self._listener = listener
        self._session = session
        self._default_reauth_ms = connections_max_reauth_ms
        self._state = _State.HANDSHAKE_OR_VERSIONS_REQUEST
        self._server: SaslServer | None = None
        self._mechanism: str | None = None
        self._reauthenticating = False
        self._previous_mechanism: str | None = None
        self._session_expiration_s: float | None = None
        self._last_reauth_start_s: float | None = None

    @property
    def authenticated(self) -> bool:
        """True once authenticated, False again while a re-authentication is in progress."""
        return self._state is _State.COMPLETE

    @property
    def session(self) -> Session:
        return self._session

    @property
    def mechanism(self) -> str | None:
        """The mechanism of the current (or last) authentication."""
        return self._previous_mechanism if self._reauthenticating else self._mechanism

    def session_expired(self, now_monotonic_s: float) -> bool:
        """KIP-368: the session's lifetime (`connections.max.reauth.ms`) is over and no re-authentication
        renewed it; the network layer then closes the connection instead of dispatching."""
        return self._session_expiration_s is not None and now_monotonic_s > self._session_expiration_s

    def route(self, event: RequestReceived) -> Route:
        key, state = event.api_key, self._state
        if state is _State.COMPLETE:
            if key is ApiKey.SASL_HANDSHAKE and self._may_begin_reauthentication():
                return Route.SASL
            return Route.DISPATCH
        if state is _State.HANDSHAKE_OR_VERSIONS_REQUEST:
            if key is ApiKey.API_VERSIONS:
                if not event.unsupported_version:  # Kafka answers that one and still waits for ApiVersions
                    self._state = _State.HANDSHAKE_REQUEST
                return Route.DISPATCH
            return Route.SASL if key is ApiKey.SASL_HANDSHAKE else Route.CLOSE
        if state is _State.HANDSHAKE_REQUEST:
            return Route.SASL if key is ApiKey.SASL_HANDSHAKE else Route.CLOSE
        if state is _State.AUTHENTICATE:
            return Route.SASL if key in (ApiKey.SASL_AUTHENTICATE, ApiKey.SASL_HANDSHAKE) else Route.CLOSE
        return Route.CLOSE  # FAILED; REAUTH_BAD_MECHANISM: Kafka closes without a response

    def handle(self, event: RequestReceived) -> SaslReply:
        if event.api_key is ApiKey.SASL_HANDSHAKE:
            return self._handshake(event)
        if event.api_key is ApiKey.SASL_AUTHENTICATE and self._state is _State.AUTHENTICATE:
            return self._authenticate(event)
        raise ValueError(f"{event.api_key.name} is not routed to the authenticator in state {self._state.name}")

    def _may_begin_reauthentication(self) -> bool:
        if self._session_expiration_s is None:
            return False  # re-authentication is off: the dispatcher answers ILLEGAL_SASL_STATE
        now = self._mechanisms.monotonic_s()
        if self._last_reauth_start_s is not None and now - self._last_reauth_start_s < MIN_REAUTH_INTERVAL_S:
            return False
        self._last_reauth_start_s = now
        self._reauthenticating = True
        self._previous_mechanism = self._mechanism
        self._state = _State.HANDSHAKE_REQUEST
        return True

    def _handshake(self, event: RequestReceived) -> SaslReply:
        cls = response_class(ApiKey.SASL_HANDSHAKE, event.api_version)
        enabled = list(self._listener.enabled_mechanisms)
        if self._state is _State.AUTHENTICATE:
            self._state = _State.FAILED
            return SaslReply(cls(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[]), close_after=True)
        if event.api_version < 1:
            self._state = _State.FAILED
            log.info("SaslHandshake v0 from %s refused: minikafka does not read unframed SASL tokens",
                     self._session.client_address)
            return SaslReply(cls(error_code=ErrorCode.UNSUPPORTED_VERSION, mechanisms=enabled), close_after=True)
        mechanism = event.request.mechanism
        if mechanism not in enabled:
            log.debug("SASL mechanism '%s' requested by client is not supported", mechanism)
            self._state = _State.FAILED
            return SaslReply(cls(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled),
                             close_after=True)
        if self._reauthenticating and mechanism != self._previous_mechanism:
            log.debug("SASL mechanism '%s' requested by client is not supported for re-authentication of "
                      "mechanism '%s'", mechanism, self._previous_mechanism)
            self._state = _State.REAUTH_BAD_MECHANISM
        else:
            self._mechanism = mechanism
            self._server = self._mechanisms.create_server(mechanism, self._listener)
            self._state = _State.AUTHENTICATE
        return SaslReply(cls(error_code=ErrorCode.NONE, mechanisms=enabled), close_after=False)

    def _authenticate(self, event: RequestReceived) -> SaslReply:
        cls = response_class(ApiKey.SASL_AUTHENTICATE, event.api_version)
        server = self._server
        assert server is not None and self._mechanism is not None
        text = "re-authentication" if self._reauthenticating else "authentication"
        try:
            challenge = server.evaluate_response(bytes(event.request.auth_bytes))
            lifetime_ms = 0
            if server.is_complete:
                principal = KafkaPrincipal("User", server.authorization_id)
                previous = self._session.principal
                if self._reauthenticating and principal != previous:
                    raise SaslAuthenticationError(
                        f"Cannot change principals during re-authentication from {previous.principal_type}."
                        f"{previous.name}: {principal.principal_type}.{principal.name}")
                lifetime_ms = self._complete(principal)
        except SaslAuthenticationError as error:
            return self._failed(cls, event, str(error))
        except (SaslError, IllegalSaslStateError) as error:
            log.debug("SASL %s with %s failed for %s: %s", text, self._mechanism, self._session.client_address,
                      error)
            return self._failed(cls, event, f"Authentication failed during {text} due to invalid credentials with "
                                            f"SASL mechanism {self._mechanism}")
        fields: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": challenge}
        if event.api_version >= 1:
            fields["session_lifetime_ms"] = lifetime_ms
        return SaslReply(cls(**fields), close_after=False)

    def _complete(self, principal: KafkaPrincipal) -> int:
        """Authenticated: the new session, its expiry and the lifetime sent to the client (KIP-368)."""
        assert self._mechanism is not None
        reauth_ms = self._listener.mechanism_connections_max_reauth_ms.get(self._mechanism, self._default_reauth_ms)
        now = self._mechanisms.monotonic_s()
        self._session_expiration_s = now + reauth_ms / 1000 if reauth_ms > 0 else None
        self._session = dataclasses.replace(self._session, principal=principal)
        self._state = _State.COMPLETE
        self._reauthenticating = False
        self._previous_mechanism = None
        return max(0, reauth_ms)

    def _failed(self, cls: Any, event: RequestReceived, message: str) -> SaslReply:
        self._state = _State.FAILED
        fields: dict[str, Any] = {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": message,
                                  "auth_bytes": b""}
        if event.api_version >= 1:
            fields["session_lifetime_ms"] = 0
        return SaslReply(cls(**fields), close_after=True)

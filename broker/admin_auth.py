"""`AdminAuthenticator`: who may use `/admin/*` on the metrics/admin HTTP port once security is configured.

Security is configured when any listener is SASL_PLAINTEXT/SASL_SSL or `authorizer.class.name` is set
(`for_broker` returns None otherwise, and the admin port keeps taking requests from anyone on its loopback
address). Then every `/admin/*` request needs HTTP Basic credentials (RFC 7617, UTF-8) of a broker user:

- a SCRAM user of the broker's credential store (the one AlterUserScramCredentials and `serve --add-scram`
  write): the password is salted with the stored salt and iterations and its StoredKey compared with the stored
  one, for each of the user's mechanisms — the check a SCRAM exchange makes, without the exchange;
- or a PLAIN user (`user_<name>` of a SASL listener's PlainLoginModule JAAS config with PLAIN enabled).

The principal is `User:<name>`, as Kafka's DefaultKafkaPrincipalBuilder makes it for SASL. It must be in
`super.users`, or, with an authorizer, be allowed ALTER on the CLUSTER resource for POST (and any method but
GET/HEAD) and DESCRIBE on CLUSTER for GET/HEAD (ALTER implies DESCRIBE, as in Kafka's ACLs). Answers: 401 with
`WWW-Authenticate: Basic realm="minikafka"` without credentials or with wrong ones, 403 when authenticated but
not allowed. Password and key comparisons are constant-time (`hmac.compare_digest` on equal-length digests);
a user without a SCRAM credential costs one key derivation at the minimum iteration count, like a known one (a
credential with more iterations still takes longer). Credentials are never logged (nor the user name of a
failed attempt, which may be a mistyped password).

`/metrics` is not guarded: Prometheus scrapes it without credentials, as Kafka's JMX exporter serves it.

Past that gate each request has an `AdminAccess` (`request_access()`, a context variable `check` sets for the
request's task): what the console asks before showing a resource, with the same principal and the authorizer's
rules as a Kafka request (topic DESCRIBE to list a topic, READ for a key's records and values, group DESCRIBE for a
group and its members). Without security every request has `OPEN_ACCESS`.

Its one mutable state is a short cache of verified credentials (VERIFIED_CACHE_S; locked), so a console page's
dozen requests cost one key derivation, not twelve; `check` runs on the event loop and derives keys in the admin
port's threads (broker/admin_workers.py). The SCRAM store
(locked) and the authorizer (copy-on-write ACL index) it shares with the handlers are thread-safe, so credential
and ACL changes apply at once; `super.users` and the PLAIN users are read at startup, as the listeners read them.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import hashlib
import hmac
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.broker.admin_guard import AdminDenial, is_loopback
from minikafka.broker.admin_workers import admin_thread
from minikafka.broker.config import KafkaConfig
from minikafka.broker.security.acls import CLUSTER_NAME, AclOperation, Action, ResourceType
from minikafka.broker.security.authorizer import StandardAuthorizer
from minikafka.broker.security.authorizer_config import AuthorizerConfig
from minikafka.broker.security.sasl_config import SaslListenerConfig
from minikafka.broker.security.scram import ScramMechanism, client_key, hash_digest, salted_password
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.session import KafkaPrincipal, Session

log = logging.getLogger(__name__)

REALM = "minikafka"
WWW_AUTHENTICATE = f'Basic realm="{REALM}"'
#: the listener name and protocol the authorizer sees for admin HTTP requests (ACLs match principal and host)
ADMIN_HTTP_LISTENER = "MINIKAFKA_ADMIN_HTTP"
_READ_METHODS = frozenset({"GET", "HEAD"})
_DUMMY_SALT = b"minikafka-admin-http-unknown-user"
#: how long a verified (user, password) pair is trusted without another key derivation, and how many are kept
VERIFIED_CACHE_S = 60.0
VERIFIED_CACHE_ENTRIES = 256


UNAUTHORIZED = AdminDenial(401, b"authentication required\n", {"WWW-Authenticate": WWW_AUTHENTICATE})
FORBIDDEN = AdminDenial(403, b"not allowed: needs super.users or an ACL on the CLUSTER resource\n", {})


@dataclass(frozen=True)
class AdminAccess:
    """The principal of one admin request and what it may see: `allows` answers as the broker's authorizer answers
    a Kafka request of that principal from that host (super users: everything). `authenticator` None: security is
    not configured and everything is allowed. Immutable; any thread."""

    principal: KafkaPrincipal | None
    client_address: str
    authenticator: AdminAuthenticator | None

    def allows(self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> list[bool]:
        """One answer per name."""
        names = list(names)
        if self.authenticator is None or self.principal is None:
            return [True] * len(names)
        return self.authenticator.authorize_all(
            self.principal, [Action(operation, resource_type, name) for name in names], self.client_address)

    def allowed(self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> set[str]:
        """The names `allows` lets through."""
        names = list(names)
        return {name for name, ok in zip(names, self.allows(operation, resource_type, names), strict=True) if ok}


OPEN_ACCESS = AdminAccess(None, "", None)
_REQUEST_ACCESS: contextvars.ContextVar[AdminAccess] = contextvars.ContextVar("minikafka_admin_access",
                                                                             default=OPEN_ACCESS)


def request_access() -> AdminAccess:
    """The access of the admin request this task is serving (OPEN_ACCESS when security is not configured)."""
    return _REQUEST_ACCESS.get()


def security_configured(config: KafkaConfig) -> bool:
    """Kafka-wise "security is on": a SASL listener or an authorizer."""
    return (any(endpoint.uses_sasl for endpoint in config.listeners)
            or AuthorizerConfig.from_props(config.props).enabled)


def parse_basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    """(user, password) from an `Authorization: Basic base64(user:password)` value (RFC 7617, UTF-8); None
    when absent or malformed."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    user, separator, password = decoded.partition(":")
    if not separator or not user:
        return None
    return user, password


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class AdminAuthenticator:
    """Checks `/admin/*` requests against the SCRAM store, PLAIN's JAAS users, `super.users` and the authorizer."""

    def __init__(self, scram_credentials: ScramCredentialStore, plain_users: Mapping[str, str],
                 super_users: frozenset[str], authorizer: StandardAuthorizer | None) -> None:
        self._scram_credentials = scram_credentials
        self._plain_users = {user: _digest(password) for user, password in plain_users.items()}
        self._super_users = super_users
        self._authorizer = authorizer
        # (user, password) pairs verified lately, keyed by an HMAC under a per-process secret (no password kept)
        self._cache_secret = os.urandom(32)
        self._cache_lock = threading.Lock()
        self._verified: dict[bytes, tuple[float, tuple[object, ...]]] = {}

    @classmethod
    def for_broker(cls, config: KafkaConfig, scram_credentials: ScramCredentialStore,
                   authorizer: StandardAuthorizer | None) -> AdminAuthenticator | None:
        """The broker's guard, or None when security is not configured (the admin port stays open)."""
        if not security_configured(config):
            return None
        host = str(config["minikafka.metrics.host"])
        if not is_loopback(host):
            log.warning("minikafka.metrics.host=%s: the admin port is plain HTTP, so Basic credentials for /admin/* "
                        "cross the network in clear text; keep it on loopback (the default) or behind a TLS proxy",
                        host or "(all interfaces)")
        plain_users: dict[str, str] = {}
        for endpoint in config.listeners:
            if endpoint.uses_sasl:
                plain_users.update(SaslListenerConfig.from_props(config.props, endpoint.listener_name).plain_users)
        return cls(scram_credentials, plain_users, AuthorizerConfig.from_props(config.props).super_users, authorizer)

    async def check(self, method: str, authorization: str | None, client_address: str) -> AdminDenial | None:
        """None when the request may proceed, else the answer to send instead."""
        _REQUEST_ACCESS.set(AdminAccess(KafkaPrincipal("User", "ANONYMOUS"), client_address, self))  # until verified
        credentials = parse_basic_credentials(authorization)
        if credentials is None:
            log.info("admin HTTP %s from %s: no valid Basic credentials", method, client_address)
            return UNAUTHORIZED
        user, password = credentials
        if not await admin_thread(self.verify_password, user, password):
            log.info("admin HTTP %s from %s: authentication failed (invalid username or password)", method,
                     client_address)
            return UNAUTHORIZED
        principal = KafkaPrincipal("User", user)
        operation = AclOperation.DESCRIBE if method in _READ_METHODS else AclOperation.ALTER
        if not self.authorize(principal, operation, client_address):
            log.info("admin HTTP %s from %s: principal %s is not allowed %s on CLUSTER", method, client_address,
                     principal, operation.name)
            return FORBIDDEN
        _REQUEST_ACCESS.set(AdminAccess(principal, client_address, self))
        return None

    def verify_password(self, user: str, password: str) -> bool:
        """True when `password` is the user's SCRAM password (any of its mechanisms) or PLAIN password. A pair
        verified in the last VERIFIED_CACHE_S is answered from the cache while the user's credentials are the ones
        it was verified against (a changed or deleted SCRAM credential is checked again at once); anything else
        derives keys (PBKDF2, thousands of iterations), failures every time: call it off the event loop.
        Thread-safe."""
        token = hmac.new(self._cache_secret, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        fingerprint = self._credential_fingerprint(user)
        now = time.monotonic()
        with self._cache_lock:
            cached = self._verified.get(token)
            if cached is not None and cached[0] > now and cached[1] == fingerprint:
                return True
        if not self._derive_and_verify(user, password):
            return False
        with self._cache_lock:
            if len(self._verified) >= VERIFIED_CACHE_ENTRIES:
                self._verified = {t: entry for t, entry in self._verified.items() if entry[0] > now}
                if len(self._verified) >= VERIFIED_CACHE_ENTRIES:
                    self._verified.pop(next(iter(self._verified)))
            self._verified[token] = (now + VERIFIED_CACHE_S, fingerprint)
        return True

    def _credential_fingerprint(self, user: str) -> tuple[object, ...]:
        """What a cached verification of `user` depends on: the stored keys of each SCRAM mechanism."""
        credentials = (self._scram_credentials.get(user, mechanism) for mechanism in ScramMechanism)
        return tuple(None if c is None else (c.salt, c.iterations, c.stored_key) for c in credentials)

    def _derive_and_verify(self, user: str, password: str) -> bool:
        verified = False
        derived = False
        for mechanism in ScramMechanism:
            credential = self._scram_credentials.get(user, mechanism)
            if credential is None:
                continue
            salted = salted_password(mechanism, password, credential.salt, credential.iterations)
            derived = True
            stored_key = hash_digest(mechanism, client_key(mechanism, salted))
            verified = hmac.compare_digest(stored_key, credential.stored_key) or verified
        if not derived:  # an unknown SCRAM user costs the same derivation as a known one
            salted_password(ScramMechanism.SCRAM_SHA_256, password, _DUMMY_SALT,
                            ScramMechanism.SCRAM_SHA_256.min_iterations)
        expected = self._plain_users.get(user)
        if expected is not None:
            verified = hmac.compare_digest(expected, _digest(password)) or verified
        return verified

    def authorize(self, principal: KafkaPrincipal, operation: AclOperation, client_address: str) -> bool:
        """A super user, or (with an authorizer) an ACL allowing `operation` on the CLUSTER resource."""
        return self.authorize_all(principal, [Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)],
                                  client_address)[0]

    def authorize_all(self, principal: KafkaPrincipal, actions: list[Action], client_address: str) -> list[bool]:
        """Per action: a super user, or (with an authorizer) an ACL allowing it. Thread-safe."""
        if str(principal) in self._super_users:
            return [True] * len(actions)
        if self._authorizer is None or not actions:
            return [False] * len(actions)
        session = Session(principal, client_address, ADMIN_HTTP_LISTENER, "PLAINTEXT")
        return self._authorizer.authorize(session, actions)

"""`PlainSaslServer`: SASL/PLAIN (RFC 4616) against the `user_<name>="<password>"` options of the listener's
JAAS config, as Kafka's PlainSaslServer + PlainServerCallbackHandler check it, messages included.

The client's single message is `authzid NUL authcid NUL passwd`; the authzid must be empty or the user name.
Not thread-safe (one instance per exchange); the user table is an immutable mapping shared by all exchanges.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from minikafka.broker.security.sasl_server import IllegalSaslStateError, SaslAuthenticationError

PLAIN_MECHANISM = "PLAIN"
JAAS_USER_PREFIX = "user_"


def plain_users(jaas_options: Mapping[str, str]) -> dict[str, str]:
    """{user: password} from a PlainLoginModule's options (`user_alice="alice-secret"`)."""
    return {key[len(JAAS_USER_PREFIX):]: value for key, value in jaas_options.items()
            if key.startswith(JAAS_USER_PREFIX)}


class PlainSaslServer:
    """One PLAIN exchange: one client message, an empty challenge back on success."""

    mechanism_name = PLAIN_MECHANISM

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._authorization_id: str | None = None

    @property
    def is_complete(self) -> bool:
        return self._authorization_id is not None

    @property
    def authorization_id(self) -> str:
        if self._authorization_id is None:
            raise IllegalSaslStateError("Authentication exchange has not completed")
        return self._authorization_id

    def evaluate_response(self, response: bytes) -> bytes:
        if self.is_complete:
            raise IllegalSaslStateError("Authentication exchange has already completed")
        tokens = _extract_tokens(response.decode("utf-8", errors="replace"))
        authorization_id_from_client, user, password = tokens
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(user)
        # compare_digest on equal-length digests keeps the time independent of where the passwords differ
        if expected is None or not hmac.compare_digest(expected.encode("utf-8"), password.encode("utf-8")):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authorization_id_from_client and authorization_id_from_client != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self._authorization_id = user
        return b""


def _extract_tokens(message: str) -> list[str]:
    """Up to four NUL-separated tokens, as Kafka splits them; exactly three are valid."""
    tokens: list[str] = []
    start = 0
    for _ in range(4):
        end = message.find("\0", start)
        if end == -1:
            tokens.append(message[start:])
            break
        tokens.append(message[start:end])
        start = end + 1
    if len(tokens) != 3:
        raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens

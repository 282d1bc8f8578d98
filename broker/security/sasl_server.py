"""The server side of one SASL mechanism exchange (`SaslServer`) and its two failures, as in Java's SASL API
that Kafka's mechanisms implement.

`SaslAuthenticationError` carries a message meant for the client (Kafka's SaslAuthenticationException: PLAIN's
"Authentication failed: Invalid username or password"); `SaslError` is any other failure, which the client sees
only as Kafka's generic "Authentication failed during authentication due to invalid credentials with SASL
mechanism ..." so that nothing about the user or the stored credential leaks.
"""

from __future__ import annotations

from typing import Protocol


class SaslError(Exception):
    """A failed exchange whose details stay on the server (Java's SaslException)."""


class SaslAuthenticationError(Exception):
    """A failed exchange whose message is sent to the client (Kafka's SaslAuthenticationException)."""


class IllegalSaslStateError(Exception):
    """A token arrived when the exchange cannot take one (Kafka's IllegalSaslStateException)."""


class SaslServer(Protocol):
    """One exchange of one mechanism; not thread-safe (a connection's event-loop task drives it)."""

    @property
    def mechanism_name(self) -> str: ...

    def evaluate_response(self, response: bytes) -> bytes:
        """The challenge for the client's next token; raises SaslError / SaslAuthenticationError."""
        ...

    @property
    def is_complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str:
        """The authenticated user name; only once the exchange is complete."""
        ...

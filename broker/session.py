"""`Session`: who sent a request and how it arrived, as handlers and the authorizer see it.

`KafkaPrincipal` is Kafka's `type:name` identity (`User:alice`, `User:CN=client,O=acme`); connections that
have not authenticated (PLAINTEXT, SSL without a client certificate) are `User:ANONYMOUS`, as in Kafka.
A connection's session changes only when it (re-)authenticates; the network layer then hands the new one
with every later request. Immutable; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`User:alice` -> KafkaPrincipal("User", "alice"); the name may itself contain colons."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"expected a principal as type:name, got {text!r}")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


@dataclass(frozen=True)
class Session:
    principal: KafkaPrincipal
    client_address: str
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    #: unique per client connection (Kafka's connectionId: what a share session is bound to); "" off the socket
    connection_id: str = ""


#: The session of requests that did not come over a socket (tests that call a handler directly).
LOCAL_SESSION = Session(ANONYMOUS, "127.0.0.1")

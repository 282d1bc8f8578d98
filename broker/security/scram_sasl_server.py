"""`ScramSaslServer`: the server side of SCRAM-SHA-256/512 (RFC 5802, RFC 7677), following Kafka's
ScramSaslServer and ScramMessages: message grammar, the checks and their order, and which failures the client
may read (`SaslAuthenticationError`) versus the generic failure (`SaslError`).

Channel binding: only `n` (the client does not support it), as Kafka. Kafka's delegation-token extension
`tokenauth=true` is refused (minikafka has no delegation tokens); other extensions are ignored. Unlike Kafka's
server, the AuthMessage is built from the bytes the client sent (RFC 5802 §3) rather than from re-serialised
parts, and the channel-binding attribute must repeat the GS2 header; real clients satisfy both.
Not thread-safe: one instance per exchange.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Callable

from minikafka.broker.security.sasl_server import IllegalSaslStateError, SaslAuthenticationError, SaslError
from minikafka.broker.security.scram import (
    ScramCredential,
    ScramMechanism,
    hash_digest,
    hmac_digest,
    secure_random_string,
    username,
)

# Kafka's ScramMessages grammar (Java's `[\x01-\x7F&&[^=,]]` and friends spelled as plain classes).
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_BASE64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"

_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)"
    rf"(?P<bare>{_RESERVED}n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_BASE64})"
)

TOKEN_AUTH_EXTENSION = "tokenauth"


class ScramSaslServer:
    """One SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        credentials: Callable[[str, ScramMechanism], ScramCredential | None],
        server_nonce: Callable[[], str] = secure_random_string,
    ) -> None:
        self.mechanism = mechanism
        self._credentials = credentials
        self._server_nonce = server_nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._authorization_id: str | None = None

    @property
    def mechanism_name(self) -> str:
        return self.mechanism.mechanism_name

    @property
    def is_complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def authorization_id(self) -> str:
        if not self.is_complete or self._authorization_id is None:
            raise IllegalSaslStateError("Authentication exchange has not completed")
        return self._authorization_id

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                challenge = self._client_first(response)
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
                return challenge
            if self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                challenge = self._client_final(response)
                self._clear()
                self._state = "COMPLETE"
                return challenge
            raise IllegalSaslStateError(f"Unexpected challenge in Sasl server state {self._state}")
        except (SaslError, SaslAuthenticationError, IllegalSaslStateError):
            self._clear()
            self._state = "FAILED"
            raise

    def _client_first(self, response: bytes) -> bytes:
        message = response.decode("utf-8", errors="replace")
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise SaslError(f"Invalid SCRAM client first message format: {message}")
        extensions = dict(item.split("=", 1) for item in match["extensions"][1:].split(",") if item)
        try:
            user = username(match["saslname"])
        except ValueError as error:
            raise SaslError("Authentication failed: Credentials could not be obtained") from error
        if extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true":
            raise SaslError(f"Token Authentication failed: Invalid tokenId : {user}")
        credential = self._credentials(user, self.mechanism)
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        authorization_id_from_client = match["authzid"] or ""
        if authorization_id_from_client and authorization_id_from_client != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslError(f"Iterations {credential.iterations} is less than the minimum "
                            f"{self.mechanism.min_iterations} for {self.mechanism.mechanism_name}")
        self._credential = credential
        self._authorization_id = user
        self._gs2_header = match["gs2"]
        self._client_first_bare = match["bare"]
        self._nonce = match["nonce"] + self._server_nonce()
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def _client_final(self, response: bytes) -> bytes:
        message = response.decode("utf-8", errors="replace")
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise SaslError(f"Invalid SCRAM client final message format: {message}")
        # Kafka checks endsWith, not equality: librdkafka 2.0.x repeats the client nonce in front of the combined one
        if not match["nonce"].endswith(self._nonce):
            raise SaslError("Invalid client nonce in the final client message.")
        if _b64decode(match["channel"]) != self._gs2_header.encode("utf-8"):
            raise SaslError("Invalid channel binding in the final client message.")
        credential = self._credential
        assert credential is not None
        auth_message = ",".join((self._client_first_bare, self._server_first, match["without_proof"])).encode("utf-8")
        client_signature = hmac_digest(self.mechanism, credential.stored_key, auth_message)
        proof = _b64decode(match["proof"])
        if len(proof) != len(client_signature):
            raise SaslError("Invalid client credentials")
        recovered_client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hash_digest(self.mechanism, recovered_client_key), credential.stored_key):
            raise SaslError("Invalid client credentials")
        server_signature = hmac_digest(self.mechanism, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)

    def _clear(self) -> None:
        self._credential = None
        self._client_first_bare = self._server_first = ""


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise SaslError("Invalid base64 in SCRAM message") from error

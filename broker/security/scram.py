"""SCRAM's mechanisms and salted credentials (RFC 5802 / RFC 7677), as Kafka's `ScramMechanism`,
`ScramFormatter` and `ScramCredential` define them.

A `ScramCredential` is what a server keeps: salt, StoredKey = H(HMAC(SaltedPassword, "Client Key")),
ServerKey = HMAC(SaltedPassword, "Server Key") and the iteration count; the password and the salted password
are never kept. Pure functions and immutable values; thread-safe.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
from dataclasses import dataclass


class ScramMechanism(enum.Enum):
    """Kafka's SCRAM mechanisms: wire type byte (AlterUserScramCredentials), hash, iteration bounds."""

    SCRAM_SHA_256 = (1, "sha256")
    SCRAM_SHA_512 = (2, "sha512")

    def __init__(self, type_code: int, hash_name: str) -> None:
        self.type_code = type_code
        self.hash_name = hash_name

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def min_iterations(self) -> int:
        return 4096

    @property
    def max_iterations(self) -> int:
        return 16384

    @classmethod
    def for_mechanism_name(cls, name: str) -> ScramMechanism | None:
        """`SCRAM-SHA-256` -> SCRAM_SHA_256; None for any other name (Kafka's forMechanismName)."""
        for mechanism in cls:
            if mechanism.mechanism_name == name:
                return mechanism
        return None

    @classmethod
    def for_type(cls, type_code: int) -> ScramMechanism | None:
        """The mechanism of a wire type byte; None for UNKNOWN (0) and anything else."""
        for mechanism in cls:
            if mechanism.type_code == type_code:
                return mechanism
        return None


@dataclass(frozen=True)
class ScramCredential:
    """A user's server-side SCRAM credential for one mechanism. `repr` hides the keys, as Kafka does."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(salt=[hidden], stored_key=[hidden], server_key=[hidden], iterations={self.iterations})"


def hmac_digest(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def hash_digest(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(Normalize(password), salt, i): PBKDF2 with the mechanism's HMAC. Like Kafka, normalisation is the
    UTF-8 encoding only (no SASLprep)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return hmac_digest(mechanism, salted, b"Client Key")


def server_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return hmac_digest(mechanism, salted, b"Server Key")


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials stores from an upsertion's salted password (Kafka's finishUpsertion)."""
    return ScramCredential(
        salt=salt,
        stored_key=hash_digest(mechanism, client_key(mechanism, salted)),
        server_key=server_key(mechanism, salted),
        iterations=iterations,
    )


def generate_credential(
    mechanism: ScramMechanism, password: str, iterations: int, salt: bytes | None = None
) -> ScramCredential:
    """A fresh credential for `password` with a random salt unless one is given (Kafka's generateCredential)."""
    salt = secure_random_string().encode("ascii") if salt is None else salt
    return credential_from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                           iterations)


def secure_random_string() -> str:
    """130 random bits in base 36, as Kafka's ScramFormatter.secureRandomString (nonces, default salts)."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        value, remainder = divmod(value, 36)
        text = digits[remainder] + text
        if not value:
            return text


def sasl_name(username: str) -> str:
    """RFC 5802's saslname: `=` -> `=3D`, `,` -> `=2C`."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username(name: str) -> str:
    """The inverse of `sasl_name`; ValueError for any other `=` escape (Kafka's ScramFormatter.username)."""
    decoded = name.replace("=2C", ",")
    if "=" in decoded.replace("=3D", ""):
        raise ValueError(f"Invalid username: {name}")
    return decoded.replace("=3D", "=")

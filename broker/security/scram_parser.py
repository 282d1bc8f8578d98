"""`parse_add_scram`: the `--add-scram` argument of `kafka-storage format`, same syntax, rules and messages as
Kafka's ScramParser: `SCRAM-SHA-256=[name=admin,password=admin-secret]`, optionally `iterations=8192`,
`salt=<base64>`, or `saltedpassword=<base64>` (with `salt`) instead of `password`; values may be quoted.
Pure functions; thread-safe. Errors are ValueError with Kafka's text.
"""

from __future__ import annotations

import base64
import binascii

from minikafka.broker.security.scram import (
    ScramCredential,
    ScramMechanism,
    credential_from_salted_password,
    salted_password,
    secure_random_string,
)

DEFAULT_ITERATIONS = 4096


def parse_add_scram(argument: str) -> tuple[str, ScramMechanism, ScramCredential]:
    """(user, mechanism, credential) of one `--add-scram` argument."""
    text = argument.strip()
    equals = text.find("=")
    if equals < 0:
        raise ValueError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism_name, config = text[:equals], text[equals + 1:]
    mechanism = ScramMechanism.for_mechanism_name(mechanism_name)
    if mechanism is None:
        raise ValueError(f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise ValueError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise ValueError("Expected configuration string to end with ]")
    components = dict(_component(part) for part in config[1:-1].split(","))
    name = components.pop("name", None)
    if name is None:
        raise ValueError("You must supply 'name' to add-scram")
    salt_text = components.pop("salt", None)
    salt = None if salt_text is None else _decode(salt_text, "Failed to decode given salt: ")
    iterations_text = components.pop("iterations", None)
    try:
        iterations = DEFAULT_ITERATIONS if iterations_text is None else int(iterations_text)
    except ValueError:
        raise ValueError(f"Failed to parse iterations count: {iterations_text}") from None
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    if password is None:
        if salted_text is None:
            raise ValueError("You must supply one of 'password' or 'saltedpassword' to add-scram")
        if salt is None:
            raise ValueError("You must supply 'salt' with 'saltedpassword' to add-scram")
    if components:
        raise ValueError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < mechanism.min_iterations:
        raise ValueError(f"The 'iterations' value must be >= {mechanism.min_iterations} for add-scram using "
                         f"{mechanism.name}")
    if iterations > mechanism.max_iterations:
        raise ValueError(f"The 'iterations' value must be <= {mechanism.max_iterations} for add-scram using "
                         f"{mechanism.name}")
    salt = secure_random_string().encode("ascii") if salt is None else salt
    if password is not None:
        salted = salted_password(mechanism, password, salt, iterations)
    else:
        salted = _decode(str(salted_text), "Failed to decode given saltedPassword: ")
    return name, mechanism, credential_from_salted_password(mechanism, salt, salted, iterations)


def _component(text: str) -> tuple[str, str]:
    equals = text.find("=")
    if equals < 0:
        raise ValueError(f"No equals sign found in SCRAM component: {text}")
    value = text[equals + 1:]
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        value = value[1:-1]
    return text[:equals], value


def _decode(text: str, message: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(message + text) from None

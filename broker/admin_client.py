"""What a client of the metrics/admin HTTP port sends to `/admin/*`: `AdminCredentials` from `--admin-user` /
`--admin-password`, or from `MINIKAFKA_ADMIN_USER` / `MINIKAFKA_ADMIN_PASSWORD` when an option is not given, as
an HTTP Basic `Authorization` header (RFC 7617, UTF-8), and `admin_json_request` to send one. Used by
`minikafka compact`, `erase` and `faults`, `MiniKafka.faults` and the pipeline's `audit` and `compact --exact`.
Stdlib only, so clients import nothing of the broker's. Immutable values; thread-safe.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ADMIN_USER_ENV = "MINIKAFKA_ADMIN_USER"
ADMIN_PASSWORD_ENV = "MINIKAFKA_ADMIN_PASSWORD"


@dataclass(frozen=True)
class AdminCredentials:
    """A broker user (SCRAM or PLAIN) for the admin port; `repr` hides the password."""

    user: str
    password: str = field(repr=False)

    def headers(self) -> dict[str, str]:
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}


def admin_credentials(user: str | None, password: str | None,
                      environ: Mapping[str, str] | None = None) -> AdminCredentials | None:
    """The credentials from the options, each falling back to its environment variable; None when no user is
    given (the broker without security needs none). ValueError for a user without a password or `:` in a name."""
    env = os.environ if environ is None else environ
    user = user if user is not None else env.get(ADMIN_USER_ENV) or None
    password = password if password is not None else env.get(ADMIN_PASSWORD_ENV)
    if user is None:
        return None
    if ":" in user:
        raise ValueError("an admin user name cannot contain ':' (HTTP Basic authentication)")
    if password is None:
        raise ValueError(f"--admin-user {user} needs --admin-password or {ADMIN_PASSWORD_ENV}")
    return AdminCredentials(user, password)


def credentials_from_args(args: argparse.Namespace) -> AdminCredentials | None:
    """`admin_credentials` of the options `add_admin_credential_options` added (absent options count as unset)."""
    return admin_credentials(getattr(args, "admin_user", None), getattr(args, "admin_password", None))


def add_admin_credential_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--admin-user", default=None,
                        help=f"a SCRAM or PLAIN user allowed on the admin port, needed once the broker has SASL or an "
                             f"authorizer (default: ${ADMIN_USER_ENV})")
    parser.add_argument("--admin-password", default=None,
                        help=f"that user's password (default: ${ADMIN_PASSWORD_ENV}; prefer the variable, since "
                             "options show in the process list)")


def with_credentials(headers: Mapping[str, str], credentials: AdminCredentials | None) -> dict[str, str]:
    """`headers` plus the Authorization header when there are credentials."""
    return {**headers, **(credentials.headers() if credentials is not None else {})}


def admin_json_request(url: str, headers: Mapping[str, str], timeout_s: float,
                       method: str = "POST") -> tuple[int, dict[str, Any]]:
    """Send one request to an `/admin/*` endpoint and return its status and JSON reply (a reply that is not JSON
    comes back as `{"error": its text}`); OSError when the port cannot be reached."""
    import urllib.error  # here: `minikafka serve` imports this module for its parsers only (start-up time)
    import urllib.request

    request = urllib.request.Request(url, data=b"" if method == "POST" else None, method=method,
                                     headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    try:
        reply = json.loads(body)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        reply = {"error": body.decode(errors="replace").strip()}
    return status, reply

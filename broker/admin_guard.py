"""`BrowserGuard`: what keeps a web page in a developer's browser, and a neighbour on the network, from using the
admin HTTP port (DESIGN.md "The admin port"; docs/security.md "The admin HTTP port").

Checked by `AdminHttpServer` for every request before routing and before credentials, so every route, those
registered later included, gets the same rules:

- **Host** (against DNS rebinding, as Jupyter does it): the `Host` header's name must be a loopback name
  (`localhost`, `*.localhost`), an IP literal, `minikafka.metrics.host` itself, or one of
  `minikafka.metrics.allowed.hosts` (the names a proxy or a container network reaches the port by; `*` allows any).
  A page whose name an attacker re-points at 127.0.0.1 sends its own name, and is answered 403. A request without
  a Host (HTTP/1.0) is no browser's and passes.
- **Cross-site state changes** (against CSRF, as Grafana checks Origin): a request with any method but GET/HEAD/
  OPTIONS is refused when the browser says it comes from another site: `Sec-Fetch-Site` other than `same-origin` or
  `none` (typed in, a bookmark), an `Origin` (`null` included) whose host and port are not the request's `Host`, or
  without an Origin a `Referer` from another origin. Browsers send Origin and Sec-Fetch-Site on every cross-site
  POST, a form's or a `no-cors` fetch's, and a page cannot forge them; curl, urllib and the `minikafka` tools send
  none and pass.
- **Beyond loopback without credentials**: bound to a non-loopback address with no `AdminAuthenticator` (security
  not configured), everything but `GET /metrics` answers only peers on loopback; the others get 403 saying how to
  configure credentials.

Answers are `AdminDenial`s (403, a one-line reason). Stdlib only (the admin server imports it before any broker
module). Immutable after construction; any thread.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Sec-Fetch-Site values of a request the user made on this origin or directly (address bar, bookmark)
_SAME_SITE_FETCHES = frozenset({"same-origin", "none"})
ANY_HOST = "*"


@dataclass(frozen=True)
class AdminDenial:
    """Why a request is refused: the HTTP status, a short body and the extra headers (the 401 challenge)."""

    status: int
    body: bytes
    headers: Mapping[str, str]


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback IP literal."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None  # ::ffff:127.0.0.1
    return (mapped or address).is_loopback


def _denial(reason: str) -> AdminDenial:
    return AdminDenial(403, reason.encode() + b"\n", {})


FOREIGN_HOST = _denial("Host not allowed: the admin port answers to loopback names, IP addresses, "
                       "minikafka.metrics.host and minikafka.metrics.allowed.hosts")
CROSS_SITE = _denial("cross-site request refused: a state-changing request must come from the admin port's own "
                     "origin or from a client that is not a browser")
NEEDS_CREDENTIALS = _denial(
    "the admin port listens beyond loopback without credentials: only GET /metrics answers other hosts; configure "
    "a SASL listener or authorizer.class.name with super.users (KAFKA_SUPER_USERS, KAFKA_AUTHORIZER_CLASS_NAME in "
    "the container) or set minikafka.metrics.host=127.0.0.1")


def host_name(authority: str) -> str:
    """The lower-case name of a `Host`/URL authority, without the port or an IPv6 literal's brackets."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class BrowserGuard:
    """The Host, cross-site and beyond-loopback rules of the module docstring for one admin port."""

    def __init__(self, bind_host: str, allowed_hosts: frozenset[str], credentials_configured: bool) -> None:
        self._names = frozenset({*allowed_hosts, host_name(bind_host)} - {""})
        self._loopback_only = not credentials_configured and not is_loopback(bind_host)

    @classmethod
    def from_config(cls, bind_host: str, allowed_hosts: Iterable[str], credentials_configured: bool) -> BrowserGuard:
        """A guard from `minikafka.metrics.host` and `minikafka.metrics.allowed.hosts`."""
        names = frozenset(host_name(name) for name in allowed_hosts if name.strip())
        guard = cls(bind_host, names, credentials_configured)
        if guard._loopback_only:
            log.warning("minikafka.metrics.host=%s without credentials configured: /admin/* and the console answer "
                        "loopback peers only (GET /metrics answers everyone)", bind_host or "(all interfaces)")
        return guard

    def host_allowed(self, host: str | None) -> bool:
        if host is None:
            return True
        name = host_name(host)
        return (ANY_HOST in self._names or name in self._names or name == "localhost" or name.endswith(".localhost")
                or _is_ip_literal(name))

    def check(self, method: str, path: str, headers: Mapping[str, str], peer_address: str,
              exempt_path: str) -> AdminDenial | None:
        """None when the request may go on (to credentials and routing), else the 403 to send."""
        host = headers.get("Host")
        if not self.host_allowed(host):
            log.info("admin HTTP %s %s from %s refused: Host %r not allowed", method, path, peer_address, host)
            return FOREIGN_HOST
        if method not in SAFE_METHODS and self._cross_site(headers, host):
            log.info("admin HTTP %s %s from %s refused: cross-site (Origin %r, Sec-Fetch-Site %r)", method, path,
                     peer_address, headers.get("Origin"), headers.get("Sec-Fetch-Site"))
            return CROSS_SITE
        if self._loopback_only and path != exempt_path and not is_loopback(peer_address):
            return NEEDS_CREDENTIALS
        return None

    @staticmethod
    def _cross_site(headers: Mapping[str, str], host: str | None) -> bool:
        fetch_site = headers.get("Sec-Fetch-Site")
        if fetch_site is not None and fetch_site.strip().lower() not in _SAME_SITE_FETCHES:
            return True
        origin = headers.get("Origin")
        if origin is None:
            referer = headers.get("Referer")
            if referer is None:
                return False  # not a browser (or one that sent neither, which no current browser does on a POST)
            origin = referer
        parts = urlsplit(origin.strip())
        return not parts.netloc or host is None or parts.netloc.lower() != host.strip().lower()

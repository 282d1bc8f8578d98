"""`ConnectionQuotas`: Kafka's `max.connections`, `max.connections.per.ip` and `max.connections.per.ip.overrides`.

A connection over a limit is closed as soon as it is accepted, with a log line naming the limit. Kafka closes a
connection over its IP's limit the same way; at `max.connections` Kafka's acceptor instead stops accepting until
a connection closes, so its clients wait in the listen backlog where ours are closed and reconnect.

Event-loop thread only (not thread-safe).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from minikafka.protocol.errors import InvalidConfigError


def parse_ip_overrides(value: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: `host:count` pairs, comma-separated (Kafka's format)."""
    overrides: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        host, separator, count = item.rpartition(":")
        if not separator or not host or not count.strip().isdigit():
            raise InvalidConfigError(f"Invalid value {value} for configuration max.connections.per.ip.overrides: "
                                     f"expected host:count pairs separated by commas, got {item!r}")
        overrides[host.strip()] = int(count)
    return overrides


@dataclass
class ConnectionQuotas:
    """Live connections in total and per client IP."""

    max_connections: int
    max_connections_per_ip: int
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    total: int = 0
    per_ip: Counter[str] = field(default_factory=Counter)

    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_connections_per_ip)

    def try_accept(self, ip: str) -> str | None:
        """Count the new connection and return None, or return why it must be closed (not counted)."""
        if self.per_ip[ip] >= self.limit_for(ip):
            return f"{ip} already has {self.per_ip[ip]} connections (max.connections.per.ip {self.limit_for(ip)})"
        if self.total >= self.max_connections:
            return f"the broker has {self.total} connections (max.connections {self.max_connections})"
        self.total += 1
        self.per_ip[ip] += 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        self.per_ip[ip] -= 1
        if not self.per_ip[ip]:
            del self.per_ip[ip]

"""Listeners, the config side: `listeners`, `listener.security.protocol.map` and `advertised.listeners`, parsed
and validated with Kafka's rules and messages, and the `listener.name.<name>.` prefix that overrides a broker
setting for one listener.

A listener is `NAME://host:port`; the name is free-form (upper-cased, as Kafka normalises it) and maps to a
security protocol through `listener.security.protocol.map`. A request is answered with the advertised endpoint
of the listener it arrived on. Immutable values; thread-safe.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from minikafka.protocol.errors import InvalidConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_SECURITY_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
#: Kafka's SocketServerConfigs URI_PARSE_REGEXP: NAME://host:port, the host possibly in [] (IPv6) or empty.
_URI_PARSE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
#: Hosts that bind every interface; a client cannot connect to them, so they are advertised as loopback.
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class EndPoint:
    """One listener: its (upper-case) name, security protocol, host ("" = every interface) and port."""

    listener_name: str
    security_protocol: str
    host: str
    port: int

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    def with_port(self, port: int) -> EndPoint:
        return replace(self, port=port)


def parse_security_protocol_map(value: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` -> {NAME: PROTOCOL}; names upper-cased, protocols checked."""
    result: dict[str, str] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        name, separator, protocol = entry.partition(":")
        if not separator or not name.strip() or not protocol.strip():
            raise _invalid("listener.security.protocol.map", value,
                           f"Error parsing configuration property 'listener.security.protocol.map': "
                           f"expected NAME:PROTOCOL, got '{entry}'")
        protocol = protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise _invalid("listener.security.protocol.map", value,
                           f"Invalid security protocol `{protocol.strip()}` defined in listener.security.protocol.map "
                           f"(one of {', '.join(SECURITY_PROTOCOLS)})")
        listener_name = name.strip().upper()
        if listener_name in result:
            raise _invalid("listener.security.protocol.map", value, f"Duplicate listener name {listener_name}")
        result[listener_name] = protocol
    return result


def parse_endpoints(config_name: str, entries: Sequence[str], protocol_map: Mapping[str, str]) -> list[EndPoint]:
    """Kafka's listenerListToEndPoints: each entry parsed, its name mapped to a protocol."""
    endpoints = []
    joined = ",".join(entries)
    for entry in entries:
        match = _URI_PARSE.match(entry)
        if match is None:
            raise _invalid(config_name, joined, f"Unable to parse {entry} to a broker endpoint")
        listener_name = match.group(1).upper()
        protocol = protocol_map.get(listener_name)
        if protocol is None:
            raise _invalid(config_name, joined, f"No security protocol defined for listener {listener_name} "
                                                f"(listener.security.protocol.map)")
        port = int(match.group(3))
        if not 0 <= port <= 65535:
            raise _invalid(config_name, joined, f"Port {port} of listener {listener_name} is not in [0, 65535]")
        endpoints.append(EndPoint(listener_name, protocol, match.group(2), port))
    return endpoints


def parse_listeners(
    listeners: Sequence[str], protocol_map_value: str, advertised: Sequence[str] | None
) -> tuple[tuple[EndPoint, ...], dict[str, EndPoint]]:
    """The listeners to bind and each one's advertised endpoint, by listener name.

    A listener missing from `advertised.listeners` (or all, when it is not set) advertises its own host and port,
    127.0.0.1 for a wildcard host. A port 0 is replaced by the bound port once the broker has bound it."""
    if not listeners:
        raise _invalid("listeners", "", "at least one listener is required")
    protocol_map = parse_security_protocol_map(protocol_map_value)
    endpoints = parse_endpoints("listeners", listeners, protocol_map)
    _check_distinct_names("listeners", listeners, endpoints)
    _check_distinct_ports(listeners, endpoints)
    advertised_by_name = {
        endpoint.listener_name: replace(endpoint, host=LOOPBACK if endpoint.host in WILDCARD_HOSTS else endpoint.host)
        for endpoint in endpoints
    }
    if advertised:
        advertised_endpoints = parse_endpoints("advertised.listeners", advertised, protocol_map)
        _check_distinct_names("advertised.listeners", advertised, advertised_endpoints)
        for endpoint in advertised_endpoints:
            if endpoint.listener_name not in advertised_by_name:
                raise _invalid(
                    "advertised.listeners", ",".join(advertised),
                    f"advertised.listeners listener names must be equal to or a subset of the ones defined in "
                    f"listeners. Found {endpoint.listener_name}. The valid options based on currently configured "
                    f"listeners are {','.join(advertised_by_name)}")
            if endpoint.host == "0.0.0.0":
                raise _invalid("advertised.listeners", ",".join(advertised),
                               "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                               "Use a routable IP address.")
            if endpoint.host == "":
                endpoint = replace(endpoint, host=LOOPBACK)
            advertised_by_name[endpoint.listener_name] = endpoint
    return tuple(endpoints), advertised_by_name


def _check_distinct_names(config_name: str, entries: Sequence[str], endpoints: Sequence[EndPoint]) -> None:
    names = [endpoint.listener_name for endpoint in endpoints]
    if len(set(names)) != len(names):
        raise _invalid(config_name, ",".join(entries),
                       f"Each listener must have a different name, listeners: {','.join(entries)}")


def _check_distinct_ports(entries: Sequence[str], endpoints: Sequence[EndPoint]) -> None:
    """Kafka's rule: distinct ports (0 excepted), unless exactly two share one and one is IPv4, the other IPv6."""
    by_port: dict[int, list[EndPoint]] = {}
    for endpoint in endpoints:
        if endpoint.port != 0:
            by_port.setdefault(endpoint.port, []).append(endpoint)
    for port, sharing in by_port.items():
        if len(sharing) == 1:
            continue
        versions = sorted(_ip_version(endpoint.host) for endpoint in sharing)
        if versions != [4, 6]:
            raise _invalid("listeners", ",".join(entries),
                           f"Each listener must have a different port unless exactly one listener has an IPv4 "
                           f"address and the other IPv6 address, listeners: {','.join(entries)}, port: {port}")


def _ip_version(host: str) -> int:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return 0  # a host name or the wildcard: never shares a port


def config_prefix(listener_name: str) -> str:
    """Kafka's ListenerName.configPrefix: `listener.name.<lower-case name>.`."""
    return f"listener.name.{listener_name.lower()}."


def listener_props(props: Mapping[str, str], listener_name: str) -> dict[str, str]:
    """The broker props as one listener sees them: `listener.name.<name>.<key>` wins over `<key>` (Kafka's
    valuesWithPrefixOverride)."""
    prefix = config_prefix(listener_name)
    merged = {name: value for name, value in props.items() if not name.startswith("listener.name.")}
    for name, value in props.items():
        if name.startswith(prefix):
            merged[name[len(prefix):]] = value
    return merged


def _invalid(name: str, value: str, rule: str) -> InvalidConfigError:
    return InvalidConfigError(f"Invalid value {value} for configuration {name}: {rule}")

"""`KafkaConfig`: the broker-level settings, by Apache Kafka's property names.

Sources, lowest precedence first: built-in defaults, `config/server.properties` (or `--config FILE`), then
`--override key=value`. `log.*` topic-default synonyms are validated by `storage.log_config.LogConfig`,
`log.cleaner.*` by `cleaner.config.CleanerConfig`; everything else is declared here. Unknown keys are
logged and ignored (as Kafka does); a bad value stops the broker with the key, the value and the rule.
Project-only keys use the `minikafka.` prefix. Immutable after construction; thread-safe.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minikafka.broker.connection_quotas import parse_ip_overrides
from minikafka.broker.groups.config import GROUP_CONFIG_DEF, GroupConfig
from minikafka.broker.groups.consumer_group_config import CONSUMER_GROUP_CONFIG_DEF
from minikafka.broker.listeners import DEFAULT_SECURITY_PROTOCOL_MAP, EndPoint, parse_listeners
from minikafka.broker.network import NetworkLimits
from minikafka.broker.quotas.quota_managers import QUOTA_CONFIG_DEF
from minikafka.broker.security.authorizer_config import AUTHORIZER_CONFIG_DEF, AuthorizerConfig
from minikafka.broker.security.sasl_config import SASL_CONFIG_DEF
from minikafka.broker.security.ssl_factory import SSL_CONFIG_DEF, SslConfig
from minikafka.broker.share.share_group_configs import SHARE_GROUP_BROKER_CONFIG_DEF, ShareGroupBrokerConfig
from minikafka.broker.transactions.config import TRANSACTION_CONFIG_DEF, TransactionConfig
from minikafka.cleaner.config import CLEANER_CONFIG_DEF, CleanerConfig
from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import (
    LONG_MAX,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValueError,
    at_least,
    between,
)
from minikafka.storage.free_space import LOG_DIR_CONFIG_DEF
from minikafka.storage.log_config import TOPIC_TO_BROKER_SYNONYM, LogConfig

log = logging.getLogger(__name__)


def os_default_or_at_least_one(value: Any) -> None:
    """Kafka's socket buffer sizes: -1 leaves the OS default (Kafka's Selectable.USE_DEFAULT_BUFFER_SIZE)."""
    if value is None or (value != -1 and value < 1):
        raise ConfigValueError("Value must be -1 (the OS default) or at least 1")


BROKER_CONFIG_DEF = ConfigDef(
    [
        ConfigKey("node.id", ConfigType.INT, 1, at_least(0), "The node id of this broker."),
        ConfigKey(
            "listeners", ConfigType.LIST, ("PLAINTEXT://127.0.0.1:9092",), None,
            "Listeners to bind, NAME://host:port; the name maps to a protocol in listener.security.protocol.map.",
        ),
        ConfigKey(
            "advertised.listeners", ConfigType.LIST, None, None,
            "Per listener name, the host:port given to clients in Metadata (default: the listener's own).",
        ),
        ConfigKey(
            "listener.security.protocol.map", ConfigType.STRING, DEFAULT_SECURITY_PROTOCOL_MAP, None,
            "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).",
        ),
        ConfigKey("log.dirs", ConfigType.LIST, None, None, "The directory the log data is kept in (one)."),
        ConfigKey("log.dir", ConfigType.STRING, "/tmp/kafka-logs", None, "Used when log.dirs is not set."),
        ConfigKey("num.partitions", ConfigType.INT, 1, at_least(1), "Default partitions for new topics."),
        ConfigKey("default.replication.factor", ConfigType.INT, 1, at_least(1),
                  "Replicas of an auto-created topic (at most minikafka.brokers)."),
        ConfigKey("minikafka.brokers", ConfigType.INT, 1, between(1, 64),
                  "Brokers this process runs (ids node.id, node.id+1, ...; broker k listens on each listener's "
                  "port + k - 1); one copy of the data, followers simulated as caught up (docs/testing-failures.md)."),
        ConfigKey("auto.leader.rebalance.enable", ConfigType.BOOLEAN, True, None,
                  "Move each partition's leadership back to its preferred (first) replica every "
                  "leader.imbalance.check.interval.seconds (with minikafka.brokers > 1)."),
        ConfigKey("leader.imbalance.check.interval.seconds", ConfigType.LONG, 300, at_least(1),
                  "How often the preferred leaders are re-elected (auto.leader.rebalance.enable)."),
        ConfigKey("leader.imbalance.per.broker.percentage", ConfigType.INT, 10, at_least(0),
                  "Accepted for Kafka's sake; Kafka's KRaft controller, like minikafka, does not use it."),
        ConfigKey("replica.lag.time.max.ms", ConfigType.LONG, 30_000, at_least(1),
                  "A follower paused (pause_follower) behind the log end for this long leaves the ISR."),
        ConfigKey("auto.create.topics.enable", ConfigType.BOOLEAN, True, None, "Create topics on Metadata."),
        ConfigKey("delete.topic.enable", ConfigType.BOOLEAN, True, None, "Allow DeleteTopics."),
        ConfigKey("socket.request.max.bytes", ConfigType.INT, 104_857_600, at_least(1), "Largest request."),
        ConfigKey("socket.send.buffer.bytes", ConfigType.INT, 102_400, os_default_or_at_least_one,
                  "SO_SNDBUF of every accepted connection (-1: the OS default, which grows with the connection)."),
        ConfigKey("socket.receive.buffer.bytes", ConfigType.INT, 102_400, os_default_or_at_least_one,
                  "SO_RCVBUF of the listening sockets, so of every accepted connection (-1: the OS default)."),
        ConfigKey(
            "queued.max.request.bytes", ConfigType.LONG, -1, None,
            "Request bytes the broker holds at once across connections (-1: unbounded), at least "
            "socket.request.max.bytes.",
        ),
        ConfigKey("max.connections", ConfigType.INT, 2_147_483_647, at_least(0), "Connections the broker accepts."),
        ConfigKey("max.connections.per.ip", ConfigType.INT, 2_147_483_647, at_least(0), "Connections per client IP."),
        ConfigKey(
            "max.connections.per.ip.overrides", ConfigType.STRING, "", None,
            "Per-IP or hostname limits overriding max.connections.per.ip: host:count,host:count.",
        ),
        ConfigKey(
            "connections.max.idle.ms", ConfigType.LONG, 600_000, at_least(1),
            "Close connections without I/O for this long.",
        ),
        ConfigKey(
            "log.retention.check.interval.ms", ConfigType.LONG, 300_000, at_least(1),
            "How often retention is enforced.",
        ),
        ConfigKey(
            "log.flush.scheduler.interval.ms", ConfigType.LONG, LONG_MAX, at_least(0),
            "How often logs are checked for flush.ms.",
        ),
        ConfigKey(
            "log.flush.offset.checkpoint.interval.ms", ConfigType.INT, 60_000, at_least(0),
            "How often the recovery point is checkpointed.",
        ),
        ConfigKey(
            "log.flush.start.offset.checkpoint.interval.ms", ConfigType.INT, 60_000, at_least(0),
            "How often log start offsets are checkpointed.",
        ),
        ConfigKey(
            "max.incremental.fetch.session.cache.slots", ConfigType.INT, 1000, at_least(0),
            "The maximum number of incremental fetch sessions that we will maintain.",
        ),
        ConfigKey(
            "minikafka.incremental.fetch.session.eviction.ms", ConfigType.LONG, 120_000, at_least(0),
            "How long a fetch session must be unused before any new session may evict it, and how old before a "
            "bigger one may (Kafka's fixed 120000).",
        ),
        ConfigKey(
            "minikafka.metrics.host", ConfigType.STRING, "127.0.0.1", None,
            "Address of the Prometheus/admin HTTP endpoint.",
        ),
        ConfigKey(
            "minikafka.metrics.allowed.hosts", ConfigType.LIST, (), None,
            "Host names the admin HTTP port answers to besides loopback names, IP addresses and "
            "minikafka.metrics.host (a proxy's or a container network's name; * for any). Any other Host header "
            "is refused (DNS rebinding).",
        ),
        ConfigKey(
            "minikafka.metrics.port", ConfigType.INT, 9404, between(-1, 65535),
            "Port of the Prometheus/admin HTTP endpoint (0 = any free port, -1 = disabled).",
        ),
        ConfigKey(
            "minikafka.log.roll.check.interval.ms", ConfigType.LONG, 1_000, at_least(1),
            "How often idle active segments are checked for a time-based roll.",
        ),
        ConfigKey(
            "minikafka.shutdown.grace.ms", ConfigType.LONG, 10_000, at_least(0),
            "How long SIGTERM waits for in-flight requests.",
        ),
    ]
)

#: Tables whose keys the broker knows (others are warned about); the SASL and ACL tables join here.
_CONFIG_TABLES: tuple[ConfigDef, ...] = (
    BROKER_CONFIG_DEF, GROUP_CONFIG_DEF, TRANSACTION_CONFIG_DEF, CLEANER_CONFIG_DEF, SSL_CONFIG_DEF, SASL_CONFIG_DEF,
    AUTHORIZER_CONFIG_DEF, LOG_DIR_CONFIG_DEF, QUOTA_CONFIG_DEF, CONSUMER_GROUP_CONFIG_DEF,
    SHARE_GROUP_BROKER_CONFIG_DEF)

_LOG_SYNONYMS = frozenset(TOPIC_TO_BROKER_SYNONYM.values()) | {
    "log.retention.minutes",
    "log.retention.hours",
    "log.roll.hours",
    "log.roll.jitter.hours",
    "message.max.bytes",
}


def declared_broker_key(name: str) -> ConfigKey | None:
    """`name`'s key in the broker's config tables, a `log.*` synonym (log.retention.hours) as a STRING; None when
    the broker does not know the name."""
    for table in _CONFIG_TABLES:
        if name in table:
            return table.keys[name]
    return ConfigKey(name, ConfigType.STRING, None, None, "") if name in _LOG_SYNONYMS else None


class KafkaConfig:
    """The validated broker configuration; `props` keeps the raw strings for the layers below."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)
        values = BROKER_CONFIG_DEF.parse(self.props)
        self.values: dict[str, Any] = values
        self.cleaner = CleanerConfig.from_props(self.props)
        self.groups = GroupConfig.from_props(self.props)
        self.transactions = TransactionConfig.from_props(self.props)
        self.log_defaults = LogConfig.from_props({}, self.props)  # validates every log.* synonym
        self.authorizer = AuthorizerConfig.from_props(self.props)
        SASL_CONFIG_DEF.parse(self.props)  # per-listener SASL settings are checked when the listeners start
        LOG_DIR_CONFIG_DEF.parse(self.props)
        QUOTA_CONFIG_DEF.parse(self.props)
        ShareGroupBrokerConfig.from_props(self.props)  # group.share.* / share.coordinator.*, with Kafka's cross-checks
        # A topic config by its topic name (cleanup.policy) is no broker key, as in Kafka, but a bad value is refused
        # as its log.* synonym's would be rather than passing unseen.
        topic_named = {name: value for name, value in self.props.items() if name not in _LOG_SYNONYMS
                       and TOPIC_TO_BROKER_SYNONYM.get(name, name) != name}
        LogConfig.from_props(topic_named, {})
        for name in self.props:
            known = any(name in table for table in _CONFIG_TABLES)
            # listener.name.<listener>.<key> overrides a key for one listener (its SASL keys carry a mechanism too)
            if name in topic_named:
                log.warning("Unknown broker configuration %s ignored: it is a topic config; set %s for the default "
                            "of every topic", name, TOPIC_TO_BROKER_SYNONYM[name])
            elif not (known or name in _LOG_SYNONYMS or name.startswith("listener.name.")):
                log.warning("Unknown broker configuration %s ignored", name)
        self.listeners, self.advertised_listeners = parse_listeners(
            values["listeners"], values["listener.security.protocol.map"], values["advertised.listeners"])
        #: TLS settings of every SSL and SASL_SSL listener, by listener name (the contexts are built at startup)
        self.ssl_configs: dict[str, SslConfig] = {
            endpoint.listener_name: SslConfig.for_listener(self.props, endpoint.listener_name)
            for endpoint in self.listeners if endpoint.uses_tls
        }
        log_dirs = values["log.dirs"] or (values["log.dir"],)
        if len(log_dirs) != 1:
            raise InvalidConfigError(
                f"Invalid value {','.join(log_dirs)} for configuration log.dirs: exactly one directory"
            )
        self.log_dir = Path(log_dirs[0])
        self.network_limits = _network_limits(values)
        self._node_id = int(values["node.id"])
        last_port = max((endpoint.port for endpoint in [*self.listeners, *self.advertised_listeners.values()]),
                        default=0) + self.broker_count - 1
        if last_port > 65535:
            raise InvalidConfigError(f"Invalid value {self.broker_count} for configuration minikafka.brokers: broker "
                                     f"{self.broker_count} would listen on port {last_port}, above 65535")

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    @property
    def listener(self) -> EndPoint:
        """The first listener (the only one of a default configuration)."""
        return self.listeners[0]

    @property
    def advertised(self) -> EndPoint:
        """The first listener's advertised endpoint."""
        return self.advertised_listeners[self.listeners[0].listener_name]

    def advertised_endpoint(self, listener_name: str) -> EndPoint:
        """What a request that arrived on `listener_name` is told to connect to (Kafka answers per listener)."""
        return self.advertised_listeners.get(listener_name) or self.advertised

    def with_bound_ports(self, bound_ports: Mapping[str, int]) -> KafkaConfig:
        """This config with each advertised port 0 replaced by the port its listener got (as Kafka advertises)."""
        bound = copy.copy(self)
        bound.advertised_listeners = {
            name: endpoint.with_port(bound_ports.get(name, 0)) if endpoint.port == 0 else endpoint
            for name, endpoint in self.advertised_listeners.items()
        }
        return bound

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def broker_count(self) -> int:
        """`minikafka.brokers`: how many brokers this process runs."""
        return int(self.values["minikafka.brokers"])

    @property
    def broker_ids(self) -> list[int]:
        """The ids of this process's brokers: node.id, node.id + 1, ..."""
        first = int(self.values["node.id"])
        return list(range(first, first + self.broker_count))

    def for_broker(self, broker_id: int) -> KafkaConfig:
        """This config as broker `broker_id` of this process sees it: its node id, every listener and advertised
        listener on its port + (broker_id - node.id) (a port 0 stays 0: each broker gets a free one)."""
        shift = broker_id - int(self.values["node.id"])
        broker = copy.copy(self)
        broker._node_id = broker_id
        if shift:
            broker.listeners = tuple(endpoint.with_port(endpoint.port + shift) if endpoint.port else endpoint
                                     for endpoint in self.listeners)
            broker.advertised_listeners = {
                name: endpoint.with_port(endpoint.port + shift) if endpoint.port else endpoint
                for name, endpoint in self.advertised_listeners.items()}
        return broker


def _network_limits(values: Mapping[str, Any]) -> NetworkLimits:
    """The listeners' limits; Kafka's rule that the request pool holds at least the largest request."""
    queued = int(values["queued.max.request.bytes"])
    max_request = int(values["socket.request.max.bytes"])
    if queued == 0 or queued < -1 or 0 < queued < max_request:
        raise InvalidConfigError(
            f"Invalid value {queued} for configuration queued.max.request.bytes: must be -1 (unbounded) or at "
            f"least socket.request.max.bytes ({max_request})")
    return NetworkLimits(
        max_request_bytes=max_request,
        max_connections=int(values["max.connections"]),
        max_connections_per_ip=int(values["max.connections.per.ip"]),
        per_ip_overrides=tuple(parse_ip_overrides(values["max.connections.per.ip.overrides"]).items()),
        connections_max_idle_ms=int(values["connections.max.idle.ms"]),
        queued_max_request_bytes=None if queued == -1 else queued,
        send_buffer_bytes=_os_default_or_size(values["socket.send.buffer.bytes"]),
        receive_buffer_bytes=_os_default_or_size(values["socket.receive.buffer.bytes"]),
    )


def _os_default_or_size(value: Any) -> int | None:
    return None if int(value) == -1 else int(value)


def load_properties(path: Path) -> dict[str, str]:
    """Read a Java .properties file (key=value or key: value; # and ! comments). OSError when the file cannot be
    read; InvalidConfigError naming the file and the line number for a line that is not key=value."""
    props: dict[str, str] = {}
    for line_number, raw_line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        separator = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        key = line[:separator].strip()
        if separator < 0 or not key:
            raise InvalidConfigError(
                f"{path}, line {line_number}: {line!r} is " + ("not key=value" if separator < 0 else "without a key")
                + "; write one key=value per line (# starts a comment)")
        props[key] = line[separator + 1 :].strip()
    return props

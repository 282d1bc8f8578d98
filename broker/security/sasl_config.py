"""The broker's SASL settings, with Kafka's names and defaults (`SASL_CONFIG_DEF`), and `SaslListenerConfig`,
one SASL listener's view of them resolved the way Kafka's channel builder resolves them:

- `listener.name.<listener>.<key>` overrides `<key>` (Kafka's valuesWithPrefixOverride), and for
  `connections.max.reauth.ms` also `listener.name.<listener>.<mechanism>.connections.max.reauth.ms`;
- a mechanism's JAAS login module comes only from `listener.name.<listener>.<mechanism>.sasl.jaas.config`
  (Kafka's JaasContext.loadServerContext). A broker-wide or listener-wide `sasl.jaas.config` without the
  mechanism is ignored with Kafka's warning; Kafka then falls back to a static JAAS file
  (`-Djava.security.auth.login.config`), which minikafka does not read.
- PLAIN needs its `PlainLoginModule` config (the `user_<name>` options are its users); the SCRAM mechanisms
  need none here, since their users come from the SCRAM credential store; GSSAPI and OAUTHBEARER are refused.

Immutable; thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.broker.security.jaas import single_login_module
from minikafka.broker.security.sasl_plain import PLAIN_MECHANISM, plain_users
from minikafka.broker.security.scram import ScramMechanism
from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least, parse_value

log = logging.getLogger(__name__)

SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
SASL_JAAS_CONFIG = "sasl.jaas.config"
CONNECTIONS_MAX_REAUTH_MS = "connections.max.reauth.ms"
SASL_SERVER_MAX_RECEIVE_SIZE = "sasl.server.max.receive.size"
FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
UNSUPPORTED_MECHANISMS = ("GSSAPI", "OAUTHBEARER")

SASL_CONFIG_DEF = ConfigDef([
    ConfigKey(SASL_ENABLED_MECHANISMS, ConfigType.LIST, ("GSSAPI",), None,
              "The list of SASL mechanisms enabled in the Kafka server (minikafka: PLAIN, SCRAM-SHA-256, "
              "SCRAM-SHA-512)."),
    ConfigKey(SASL_JAAS_CONFIG, ConfigType.PASSWORD, None, None,
              "JAAS login context parameters; on a broker it must be prefixed with the listener and the "
              "mechanism (listener.name.<listener>.<mechanism>.sasl.jaas.config)."),
    ConfigKey(CONNECTIONS_MAX_REAUTH_MS, ConfigType.LONG, 0, None,
              "When positive, the longest a SASL session lives before the client must re-authenticate "
              "(KIP-368); 0 disables re-authentication."),
    ConfigKey(SASL_SERVER_MAX_RECEIVE_SIZE, ConfigType.INT, 524_288, at_least(1),
              "The largest request the broker accepts before and during SASL authentication."),
    ConfigKey(FAILED_AUTHENTICATION_DELAY_MS, ConfigType.INT, 100, at_least(0),
              "How long the broker waits after answering a failed authentication before it closes the connection "
              "(Kafka's default 100 ms): the client reads the error instead of a reset connection."),
    ConfigKey("sasl.mechanism.inter.broker.protocol", ConfigType.STRING, "GSSAPI", None,
              "Accepted for compatibility; a single node has no inter-broker connections."),
])


def listener_prefix(listener_name: str) -> str:
    """Kafka's ListenerName.configPrefix: `listener.name.sasl_plaintext.`."""
    return f"listener.name.{listener_name.lower()}."


def is_sasl_listener_key(name: str) -> bool:
    """True for `listener.name.<l>.<key>` and `listener.name.<l>.<mechanism>.<key>` of a SASL_CONFIG_DEF key."""
    if not name.startswith("listener.name."):
        return False
    _listener, _, rest = name[len("listener.name."):].partition(".")
    if rest in SASL_CONFIG_DEF:
        return True
    _mechanism, _, key = rest.partition(".")
    return key in SASL_CONFIG_DEF


def _value(props: Mapping[str, str], listener_name: str, key: str) -> Any:
    """`key` parsed, the listener's override first, else the broker-wide value, else the default."""
    config_key = SASL_CONFIG_DEF.keys[key]
    for name in (listener_prefix(listener_name) + key, key):
        if name in props:
            value = parse_value(config_key, props[name])
            SASL_CONFIG_DEF._check(config_key, value, props[name], name)
            return value
    return config_key.default


@dataclass(frozen=True)
class SaslListenerConfig:
    """One SASL listener: its enabled mechanisms (in configured order), PLAIN's users, the listener's
    re-authentication limit (0 = none) and the mechanisms' own overrides of it, and the pre-authentication
    request size limit."""

    listener_name: str
    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str]
    connections_max_reauth_ms: int
    mechanism_connections_max_reauth_ms: Mapping[str, int]
    max_receive_size_bytes: int

    @classmethod
    def from_props(cls, props: Mapping[str, str], listener_name: str) -> SaslListenerConfig:
        prefix = listener_prefix(listener_name)
        enabled = tuple(dict.fromkeys(_value(props, listener_name, SASL_ENABLED_MECHANISMS)))
        if not enabled:
            raise InvalidConfigError(f"No SASL mechanisms are enabled for listener {listener_name}")
        for mechanism in enabled:
            if mechanism in UNSUPPORTED_MECHANISMS:
                raise InvalidConfigError(
                    f"Invalid value {','.join(enabled)} for configuration {SASL_ENABLED_MECHANISMS} of listener "
                    f"{listener_name}: minikafka does not support SASL mechanism {mechanism} (supported: PLAIN, "
                    "SCRAM-SHA-256, SCRAM-SHA-512)")
            if mechanism != PLAIN_MECHANISM and ScramMechanism.for_mechanism_name(mechanism) is None:
                raise InvalidConfigError(
                    f"Invalid value {','.join(enabled)} for configuration {SASL_ENABLED_MECHANISMS} of listener "
                    f"{listener_name}: unknown SASL mechanism {mechanism}")
        for name in (prefix + SASL_JAAS_CONFIG, SASL_JAAS_CONFIG):
            if name in props:
                log.warning("Server config %s should be prefixed with SASL mechanism name, ignoring config", name)
        users: dict[str, str] = {}
        if PLAIN_MECHANISM in enabled:
            users = _plain_users(props, listener_name)
        mechanism_reauth_ms: dict[str, int] = {}
        for mechanism in enabled:
            raw = props.get(f"{prefix}{mechanism.lower()}.{CONNECTIONS_MAX_REAUTH_MS}")
            if raw is not None:
                mechanism_reauth_ms[mechanism] = int(parse_value(SASL_CONFIG_DEF.keys[CONNECTIONS_MAX_REAUTH_MS], raw))
        return cls(listener_name, enabled, users, int(_value(props, listener_name, CONNECTIONS_MAX_REAUTH_MS)),
                   mechanism_reauth_ms, int(_value(props, listener_name, SASL_SERVER_MAX_RECEIVE_SIZE)))


def _plain_users(props: Mapping[str, str], listener_name: str) -> dict[str, str]:
    name = f"{listener_prefix(listener_name)}{PLAIN_MECHANISM.lower()}.{SASL_JAAS_CONFIG}"
    text = props.get(name)
    if text is None:
        raise InvalidConfigError(
            f"Could not find a 'KafkaServer' or '{listener_name.lower()}.KafkaServer' entry in the JAAS "
            f"configuration. System property 'java.security.auth.login.config' is not set (minikafka reads "
            f"PLAIN users from {name})")
    try:
        entry = single_login_module(text)
    except ValueError as error:
        raise InvalidConfigError(f"Invalid value [hidden] for configuration {name}: {error}") from None
    if entry.login_module_name != PLAIN_LOGIN_MODULE:
        # Kafka's PlainServerCallbackHandler reads user_* options of PlainLoginModule entries only
        log.warning("%s names login module %s, not %s: no PLAIN user can authenticate",
                    name, entry.login_module_name, PLAIN_LOGIN_MODULE)
        return {}
    return plain_users(entry.options)

"""listeners / listener.security.protocol.map / advertised.listeners and the ssl.* keys: Kafka's rules and
messages, per-listener overrides, and SSL contexts built from PEM, PKCS12 and inline stores made in the test."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from minikafka.broker.config import KafkaConfig
from minikafka.broker.listeners import EndPoint
from minikafka.broker.network import Listener, SocketServer
from minikafka.broker.security.ssl_factory import SslConfig, create_server_context
from minikafka.protocol.errors import InvalidConfigError
from tests.tls_material import PASSWORD, CertificateAuthority, Identity


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


@pytest.fixture(scope="module")
def server(ca: CertificateAuthority) -> Identity:
    return ca.issue_server()


def _pem_ssl(tmp_path: Path, server: Identity, prefix: str = "") -> dict[str, str]:
    return {f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.location": str(server.write_pem_keystore(tmp_path / f"{prefix}server.pem"))}


def test_default_is_one_plaintext_listener() -> None:
    config = KafkaConfig({})
    assert config.listeners == (EndPoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092),)
    assert config.advertised_endpoint("PLAINTEXT") == EndPoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)
    assert config.ssl_configs == {}


def test_several_listeners_with_free_form_names(tmp_path: Path, server: Identity) -> None:
    config = KafkaConfig({
        "listeners": "PLAINTEXT://0.0.0.0:9092,internal://127.0.0.1:9093,EXTERNAL://:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,EXTERNAL:SSL",
        "advertised.listeners": "EXTERNAL://broker.example.com:19094",
        **_pem_ssl(tmp_path, server),
    })
    assert [(e.listener_name, e.security_protocol, e.host, e.port) for e in config.listeners] == [
        ("PLAINTEXT", "PLAINTEXT", "0.0.0.0", 9092), ("INTERNAL", "SSL", "127.0.0.1", 9093),
        ("EXTERNAL", "SSL", "", 9094)]
    # the wildcard host is advertised as loopback, an explicit advertised listener wins for its name only
    assert config.advertised_endpoint("PLAINTEXT").host == "127.0.0.1"
    assert (config.advertised_endpoint("INTERNAL").host, config.advertised_endpoint("INTERNAL").port) == (
        "127.0.0.1", 9093)
    assert (config.advertised_endpoint("EXTERNAL").host, config.advertised_endpoint("EXTERNAL").port) == (
        "broker.example.com", 19094)
    assert set(config.ssl_configs) == {"INTERNAL", "EXTERNAL"}


def test_port_zero_advertises_the_bound_port() -> None:
    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    bound = config.with_bound_ports({"PLAINTEXT": 41234})
    assert bound.advertised_endpoint("PLAINTEXT").port == 41234
    assert config.advertised_endpoint("PLAINTEXT").port == 0


@pytest.mark.parametrize(("props", "key", "rule"), [
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"}, "listeners",
     "Each listener must have a different name"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9092"}, "listeners",
     "Each listener must have a different port"),
    ({"listeners": "TRACE://127.0.0.1:9092"}, "listeners", "No security protocol defined for listener TRACE"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:TLS"}, "listener.security.protocol.map",
     "Invalid security protocol `TLS`"),
    ({"listener.security.protocol.map": "PLAINTEXT"}, "listener.security.protocol.map", "expected NAME:PROTOCOL"),
    ({"advertised.listeners": "SSL://127.0.0.1:9093"}, "advertised.listeners",
     "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners",
     "cannot use the nonroutable meta-address 0.0.0.0"),
    ({"advertised.listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "advertised.listeners",
     "Each listener must have a different name"),
    ({"listeners": "PLAINTEXT://127.0.0.1:70000"}, "listeners", "not in [0, 65535]"),
    ({"listeners": "SSL://127.0.0.1:9093"}, "ssl.keystore.location", "listener SSL needs a key store"),
])
def test_bad_listener_values_name_key_value_and_rule(props: dict[str, str], key: str, rule: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        KafkaConfig(props)
    assert f"for configuration {key}: " in info.value.message and rule in info.value.message
    assert "Invalid value " in info.value.message


def test_ipv4_and_ipv6_listeners_may_share_a_port() -> None:
    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092",
                          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,V6:PLAINTEXT"})
    assert [e.host for e in config.listeners] == ["127.0.0.1", "::1"]


@pytest.mark.parametrize(("props", "key", "rule"), [
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/x.p12"}, "ssl.keystore.password",
     "SSL key store is specified, but key store password is not specified."),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.keystore.password": "p"},
     "ssl.keystore.password", "SSL key store password cannot be specified with PEM format"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.key": "k", "ssl.keystore.certificate.chain": "c"},
     "ssl.keystore.key", "SSL private key can be specified only for PEM, but key store type is PKCS12."),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "k"}, "ssl.keystore.key",
     "SSL private key is specified, but certificate chain is not specified."),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.truststore.type": "PEM",
      "ssl.truststore.location": "/ca.pem", "ssl.truststore.password": "p"}, "ssl.truststore.password",
     "SSL trust store password cannot be specified for PEM format."),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.client.auth": "maybe"},
     "ssl.client.auth", "String must be one of: required, requested, none"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.enabled.protocols": "TLSv1.2,SSLv3"},
     "ssl.enabled.protocols", "Unsupported protocol SSLv3"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.protocol": "TLSv9"},
     "ssl.protocol", "TLSv9 SSLContext not available"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.cipher.suites": "TLS_NOT_A_SUITE"},
     "ssl.cipher.suites", "Unsupported CipherSuite: TLS_NOT_A_SUITE"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/x.pem", "ssl.principal.mapping.rules": "RULE:x"},
     "ssl.principal.mapping.rules", "Invalid rule"),
    ({"ssl.keystore.type": "JKSX", "ssl.keystore.location": "/x"}, "ssl.keystore.type", "must be PEM, PKCS12"),
])
def test_bad_ssl_values_name_key_and_rule(props: dict[str, str], key: str, rule: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        KafkaConfig({"listeners": "SSL://127.0.0.1:9093", **props})
    assert f"for configuration {key}: " in info.value.message and rule in info.value.message


def test_listener_name_override_takes_precedence(tmp_path: Path, server: Identity) -> None:
    config = KafkaConfig({
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,MTLS://127.0.0.1:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        **_pem_ssl(tmp_path, server),
        "ssl.client.auth": "none",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/",
    })
    assert config.ssl_configs["SSL"].client_auth == "none"
    assert config.ssl_configs["MTLS"].client_auth == "required"
    assert config.ssl_configs["MTLS"].principal_mapper.name("CN=app,O=acme") == "app"
    assert config.ssl_configs["SSL"].principal_mapper.name("CN=app,O=acme") == "CN=app,O=acme"
    assert create_server_context(config.ssl_configs["MTLS"]).verify_mode == ssl.CERT_REQUIRED
    assert create_server_context(config.ssl_configs["SSL"]).verify_mode == ssl.CERT_NONE


def _ssl_config(props: dict[str, str]) -> SslConfig:
    return SslConfig.for_listener(props, "SSL")


def test_keystores_pem_file_encrypted_pem_inline_pem_and_pkcs12(
        tmp_path: Path, ca: CertificateAuthority, server: Identity) -> None:
    stores = {
        "pem": {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(server.write_pem_keystore(tmp_path / "a"))},
        "encrypted pem": {"ssl.keystore.type": "PEM", "ssl.key.password": "kp",
                          "ssl.keystore.location": str(server.write_pem_keystore(tmp_path / "b", "kp"))},
        "inline pem": {"ssl.keystore.type": "PEM", "ssl.keystore.key": server.key_pem().decode(),
                       "ssl.keystore.certificate.chain": server.chain_pem().decode()},
        "pkcs12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.password": PASSWORD,
                   "ssl.keystore.location": str(server.write_pkcs12_keystore(tmp_path / "c.p12"))},
    }
    truststores = {
        "pem": {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.write_pem_truststore(tmp_path / "t"))},
        "inline pem": {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca.certificate_pem().decode()},
        "pkcs12": {"ssl.truststore.type": "PKCS12", "ssl.truststore.password": PASSWORD,
                   "ssl.truststore.location": str(ca.write_pkcs12_truststore(tmp_path / "t.p12"))},
    }
    for (store, key_props), (trust, trust_props) in zip(stores.items(), [*truststores.items(), (None, {})]):
        context = create_server_context(_ssl_config({**key_props, **trust_props, "ssl.client.auth": "requested"}))
        assert context.verify_mode == ssl.CERT_OPTIONAL, store
        if trust is not None:
            assert [c["subject"] for c in context.get_ca_certs()] == [
                ((("organizationName", "acme"),), (("commonName", "minikafka test CA"),))], (store, trust)


def test_no_key_material_left_on_disk(tmp_path: Path, server: Identity, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    create_server_context(_ssl_config({"ssl.keystore.type": "PEM", "ssl.keystore.key": server.key_pem().decode(),
                                       "ssl.keystore.certificate.chain": server.chain_pem().decode()}))
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize(("props", "key", "rule"), [
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.password": "wrong"}, "ssl.keystore.location",
     "Failed to load SSL keystore"),
    ({"ssl.keystore.type": "PEM", "ssl.key.password": "wrong"}, "ssl.keystore.location",
     "Invalid PEM keystore configs"),
])
def test_unreadable_keystore_is_a_config_error(tmp_path: Path, server: Identity, props: dict[str, str], key: str,
                                                rule: str) -> None:
    location = (server.write_pkcs12_keystore(tmp_path / "k.p12") if props["ssl.keystore.type"] == "PKCS12"
                else server.write_pem_keystore(tmp_path / "k.pem", "right"))
    with pytest.raises(InvalidConfigError) as info:
        create_server_context(_ssl_config({**props, "ssl.keystore.location": str(location)}))
    assert f"for configuration {key}: " in info.value.message and rule in info.value.message


def test_cipher_suites_map_java_names_to_openssl(tmp_path: Path, server: Identity) -> None:
    base = _pem_ssl(tmp_path, server)
    context = create_server_context(_ssl_config({**base, "ssl.cipher.suites":
                                                 "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256"}))
    names = {cipher["name"] for cipher in context.get_ciphers()}
    assert "ECDHE-RSA-AES256-GCM-SHA384" in names and "ECDHE-RSA-AES128-GCM-SHA256" not in names
    only_tls12 = create_server_context(
        _ssl_config({**base, "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}))
    assert only_tls12.maximum_version == ssl.TLSVersion.TLSv1_2
    only_tls13 = create_server_context(_ssl_config({**base, "ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"}))
    assert only_tls13.minimum_version == ssl.TLSVersion.TLSv1_3


async def test_sasl_listener_without_mechanisms_refuses_to_start() -> None:
    endpoint = KafkaConfig({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}).listeners[0]
    with pytest.raises(InvalidConfigError, match="listener SASL_PLAINTEXT uses SASL_PLAINTEXT but no SASL mechanism"):
        SocketServer([Listener(endpoint)])

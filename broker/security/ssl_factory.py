"""`SslConfig` and `create_server_context`: the TLS side of SSL and SASL_SSL listeners, by Kafka's `ssl.*` keys.

`SslConfig.for_listener` reads a listener's settings (`listener.name.<name>.ssl.*` over `ssl.*`, Kafka's rule)
and checks them as Kafka's DefaultSslEngineFactory does, with its messages; `create_server_context` loads the
stores and builds the `ssl.SSLContext`. Key stores: PEM (a file holding the private key and its certificate chain,
or inline `ssl.keystore.key` + `ssl.keystore.certificate.chain`) and PKCS12 (also read for the default type JKS,
as Java reads a PKCS12 file under JKS; a real JKS file is refused). Trust stores: PEM (file or inline
`ssl.truststore.certificates`) and PKCS12.

Python's ssl module loads a private key only from a file. The key is never written in clear: it is re-encrypted
with a random one-time password and handed to OpenSSL through an anonymous in-memory file (`memfd_create`, never
on a file system); where that does not exist, through a temporary file removed at once, still encrypted.

Java/IANA cipher suite names (`TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`) map to OpenSSL's; an unknown one is a
config error. Python cannot choose among TLS 1.3 suites (OpenSSL's TLS 1.3 defaults stay on when any TLS 1.3
suite is listed); a list without TLS 1.3 suites turns TLS 1.3 off, one with only TLS 1.3 suites turns TLS 1.2
off, as Java's engine then negotiates. `ssl.protocol` is checked but, as for Java's server engines, only
`ssl.enabled.protocols` decides. Immutable values; building a context is synchronous file I/O (startup only).
cryptography is imported by the functions that read stores: a broker without SSL listeners never loads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.broker.listeners import listener_props
from minikafka.broker.security.principal_mapping import SslPrincipalMapper, parse_mapping_rules
from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, in_set

if TYPE_CHECKING:
    from cryptography import x509

log = logging.getLogger(__name__)

PEM = "PEM"
PKCS12 = "PKCS12"
JKS = "JKS"

SSL_CONFIG_DEF = ConfigDef(
    [
        ConfigKey("ssl.keystore.type", ConfigType.STRING, JKS, None, "Key store format: PEM or PKCS12."),
        ConfigKey("ssl.keystore.location", ConfigType.STRING, None, None, "Key store file."),
        ConfigKey("ssl.keystore.password", ConfigType.PASSWORD, None, None, "Key store password (PKCS12)."),
        ConfigKey("ssl.key.password", ConfigType.PASSWORD, None, None, "Password of the private key."),
        ConfigKey("ssl.keystore.key", ConfigType.PASSWORD, None, None, "Private key, PEM (PKCS#8), inline."),
        ConfigKey("ssl.keystore.certificate.chain", ConfigType.PASSWORD, None, None, "Certificate chain, PEM."),
        ConfigKey("ssl.truststore.type", ConfigType.STRING, JKS, None, "Trust store format: PEM or PKCS12."),
        ConfigKey("ssl.truststore.location", ConfigType.STRING, None, None, "Trust store file."),
        ConfigKey("ssl.truststore.password", ConfigType.PASSWORD, None, None, "Trust store password."),
        ConfigKey("ssl.truststore.certificates", ConfigType.PASSWORD, None, None, "Trusted certificates, PEM."),
        ConfigKey("ssl.client.auth", ConfigType.STRING, "none", in_set("required", "requested", "none"),
                  "Whether clients must (required), may (requested) or do not (none) present a certificate."),
        ConfigKey("ssl.enabled.protocols", ConfigType.LIST, ("TLSv1.2", "TLSv1.3"), None, "TLS versions accepted."),
        ConfigKey("ssl.protocol", ConfigType.STRING, "TLSv1.3", None, "The SSLContext protocol."),
        ConfigKey("ssl.cipher.suites", ConfigType.LIST, (), None, "Cipher suites (Java/IANA names); empty: all."),
        ConfigKey("ssl.principal.mapping.rules", ConfigType.STRING, "DEFAULT", None,
                  "Rules mapping a client certificate's DN to a principal name."),
        ConfigKey("ssl.endpoint.identification.algorithm", ConfigType.STRING, "https", None,
                  "Client-side host name check; unused by a broker's listeners."),
        ConfigKey("ssl.keymanager.algorithm", ConfigType.STRING, "SunX509", None, "Accepted; OpenSSL has one."),
        ConfigKey("ssl.trustmanager.algorithm", ConfigType.STRING, "PKIX", None, "Accepted; OpenSSL has one."),
    ]
)

_TLS_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_SSL_CONTEXT_PROTOCOLS = ("TLS", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3", "SSL", "SSLv3")
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}

#: TLS 1.3 suites OpenSSL enables by default (Python cannot change that set).
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")
#: Java/IANA name -> OpenSSL name of the TLS 1.2 and older suites OpenSSL implements.
TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
}
_PRIVATE_KEY_PEM = re.compile(rb"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----", re.DOTALL)
_CERTIFICATE_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.DOTALL)


@dataclass(frozen=True)
class SslConfig:
    """One listener's TLS settings, checked; passwords and inline PEM kept as given."""

    listener_name: str
    keystore_type: str
    keystore_location: str | None
    keystore_password: str | None
    key_password: str | None
    keystore_key: str | None
    keystore_certificate_chain: str | None
    truststore_type: str
    truststore_location: str | None
    truststore_password: str | None
    truststore_certificates: str | None
    client_auth: str
    enabled_protocols: tuple[str, ...]
    protocol: str
    cipher_suites: tuple[str, ...]
    principal_mapper: SslPrincipalMapper

    @classmethod
    def for_listener(cls, props: Mapping[str, str], listener_name: str) -> SslConfig:
        """The listener's settings (`listener.name.<name>.ssl.*` first); raises InvalidConfigError as Kafka would."""
        values = SSL_CONFIG_DEF.parse(listener_props(props, listener_name))
        config = cls(
            listener_name=listener_name,
            keystore_type=str(values["ssl.keystore.type"]).upper(),
            keystore_location=values["ssl.keystore.location"] or None,
            keystore_password=values["ssl.keystore.password"],
            key_password=values["ssl.key.password"],
            keystore_key=values["ssl.keystore.key"] or None,
            keystore_certificate_chain=values["ssl.keystore.certificate.chain"] or None,
            truststore_type=str(values["ssl.truststore.type"]).upper(),
            truststore_location=values["ssl.truststore.location"] or None,
            truststore_password=values["ssl.truststore.password"],
            truststore_certificates=values["ssl.truststore.certificates"] or None,
            client_auth=values["ssl.client.auth"],
            enabled_protocols=tuple(values["ssl.enabled.protocols"]),
            protocol=values["ssl.protocol"],
            cipher_suites=tuple(values["ssl.cipher.suites"]),
            principal_mapper=parse_mapping_rules(values["ssl.principal.mapping.rules"]),
        )
        config._check()
        return config

    def _check(self) -> None:
        """Kafka's createKeystore / createTruststore rules, plus what a listener needs (a key store)."""
        for key, store_type in (("ssl.keystore.type", self.keystore_type),
                                ("ssl.truststore.type", self.truststore_type)):
            if store_type not in (PEM, PKCS12, JKS):
                raise _invalid(key, store_type, "key/trust store type must be PEM, PKCS12 or JKS (read as PKCS12)")
        if self.keystore_key is not None:
            if self.keystore_type != PEM:
                raise _invalid("ssl.keystore.key", "[hidden]", "SSL private key can be specified only for PEM, but "
                               f"key store type is {self.keystore_type}.")
            if self.keystore_certificate_chain is None:
                raise _invalid("ssl.keystore.key", "[hidden]",
                               "SSL private key is specified, but certificate chain is not specified.")
            if self.keystore_location is not None:
                raise _invalid("ssl.keystore.location", self.keystore_location,
                               "Both SSL key store location and separate private key are specified.")
            if self.keystore_password is not None:
                raise _invalid("ssl.keystore.password", "[hidden]", "SSL key store password cannot be specified "
                               "with PEM format, only key password may be specified.")
        elif self.keystore_certificate_chain is not None:
            raise _invalid("ssl.keystore.certificate.chain", "[hidden]",
                           "SSL certificate chain is specified, but private key is not specified")
        elif self.keystore_location is None:
            raise _invalid("ssl.keystore.location", "null",
                           f"listener {self.listener_name} needs a key store: ssl.keystore.location, or "
                           "ssl.keystore.key with ssl.keystore.certificate.chain")
        elif self.keystore_type == PEM and self.keystore_password is not None:
            raise _invalid("ssl.keystore.password", "[hidden]", "SSL key store password cannot be specified with "
                           "PEM format, only key password may be specified")
        elif self.keystore_type != PEM and self.keystore_password is None:
            raise _invalid("ssl.keystore.password", "null",
                           "SSL key store is specified, but key store password is not specified.")
        if self.truststore_certificates is not None:
            if self.truststore_type != PEM:
                raise _invalid("ssl.truststore.certificates", "[hidden]", "SSL trust store certs can be specified "
                               f"only for PEM, but trust store type is {self.truststore_type}.")
            if self.truststore_location is not None:
                raise _invalid("ssl.truststore.location", self.truststore_location,
                               "Both SSL trust store location and separate trust certificates are specified.")
        if self.truststore_type == PEM and self.truststore_password is not None:
            raise _invalid("ssl.truststore.password", "[hidden]",
                           "SSL trust store password cannot be specified for PEM format.")
        if self.truststore_location is None and self.truststore_password is not None:
            raise _invalid("ssl.truststore.password", "[hidden]",
                           "SSL trust store is not specified, but trust store password is specified.")
        if self.protocol not in _SSL_CONTEXT_PROTOCOLS:
            raise _invalid("ssl.protocol", self.protocol,
                           f"{self.protocol} SSLContext not available (one of {', '.join(_SSL_CONTEXT_PROTOCOLS)})")
        if not self.enabled_protocols:
            raise _invalid("ssl.enabled.protocols", "", "at least one protocol is required")
        for version in self.enabled_protocols:
            if version not in _TLS_VERSIONS:
                raise _invalid("ssl.enabled.protocols", ",".join(self.enabled_protocols),
                               f"Unsupported protocol {version} (one of {', '.join(_TLS_VERSIONS)})")
        for suite in self.cipher_suites:
            if suite not in TLS12_SUITES and suite not in TLS13_SUITES:
                raise _invalid("ssl.cipher.suites", ",".join(self.cipher_suites), f"Unsupported CipherSuite: {suite}")


def create_server_context(config: SslConfig) -> ssl.SSLContext:
    """The listener's SSLContext: key store, trust store, client auth, versions, cipher suites."""
    from cryptography.hazmat.primitives import serialization

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_TLS_VERSIONS[name] for name in config.enabled_protocols)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    _apply_cipher_suites(context, config)
    private_key, chain = _load_keystore(config)
    _load_cert_chain(context, private_key, chain)
    context.verify_mode = _CLIENT_AUTH[config.client_auth]
    trusted = _load_truststore(config)
    if trusted:
        context.load_verify_locations(cadata="".join(
            cert.public_bytes(serialization.Encoding.PEM).decode("ascii") for cert in trusted))
    elif context.verify_mode != ssl.CERT_NONE:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # Java's default trust store, as Kafka falls back to
    return context


def _apply_cipher_suites(context: ssl.SSLContext, config: SslConfig) -> None:
    if not config.cipher_suites:
        return
    tls12 = [TLS12_SUITES[suite] for suite in config.cipher_suites if suite in TLS12_SUITES]
    has_tls13 = any(suite in TLS13_SUITES for suite in config.cipher_suites)
    if tls12:
        context.set_ciphers(":".join(tls12))
        enabled = {cipher["name"] for cipher in context.get_ciphers()}
        missing = [suite for suite in config.cipher_suites if TLS12_SUITES.get(suite, "") not in enabled
                   and suite in TLS12_SUITES]
        if missing:
            raise _invalid("ssl.cipher.suites", ",".join(config.cipher_suites),
                           f"Unsupported CipherSuite: {missing[0]} (not available in {ssl.OPENSSL_VERSION})")
    elif ssl.TLSVersion.TLSv1_3 not in (context.minimum_version, context.maximum_version):
        raise _invalid("ssl.cipher.suites", ",".join(config.cipher_suites),
                       "only TLS 1.3 suites are listed but TLSv1.3 is not in ssl.enabled.protocols")
    else:
        context.minimum_version = ssl.TLSVersion.TLSv1_3
    if not has_tls13:
        if context.minimum_version == ssl.TLSVersion.TLSv1_3:
            raise _invalid("ssl.cipher.suites", ",".join(config.cipher_suites),
                           "no TLS 1.3 suite is listed but only TLSv1.3 is enabled")
        context.maximum_version = min(context.maximum_version, ssl.TLSVersion.TLSv1_2)
    elif set(TLS13_SUITES) - set(config.cipher_suites):
        log.warning("listener %s: ssl.cipher.suites lists only some TLS 1.3 suites; all of %s stay enabled (Python's "
                    "ssl module cannot choose TLS 1.3 suites)", config.listener_name, ", ".join(TLS13_SUITES))


PrivateKey = Any  # cryptography's PrivateKeyTypes


def _load_keystore(config: SslConfig) -> tuple[PrivateKey, list[x509.Certificate]]:
    from cryptography.hazmat.primitives.serialization import pkcs12

    if config.keystore_key is not None:
        assert config.keystore_certificate_chain is not None
        return _pem_key_and_chain("ssl.keystore.key", config.keystore_key.encode(),
                                  config.keystore_certificate_chain.encode(), config.key_password)
    assert config.keystore_location is not None
    data = _read("ssl.keystore.location", config.keystore_location)
    if config.keystore_type == PEM:
        return _pem_key_and_chain("ssl.keystore.location", data, data, config.key_password)
    assert config.keystore_password is not None
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, config.keystore_password.encode())
    except ValueError as error:
        hint = " (JKS files are not supported: convert with keytool -importkeystore -deststoretype PKCS12)" \
            if config.keystore_type == JKS else ""
        raise _invalid("ssl.keystore.location", config.keystore_location,
                       f"Failed to load SSL keystore {config.keystore_location} of type {config.keystore_type}: "
                       f"{error}{hint}") from None
    if key is None or cert is None:
        raise _invalid("ssl.keystore.location", config.keystore_location,
                       "the key store holds no private key with its certificate")
    return key, [cert, *extra]


def _pem_key_and_chain(key: str, key_pem: bytes, chain_pem: bytes,
                       key_password: str | None) -> tuple[PrivateKey, list[x509.Certificate]]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    keys = [match.group(0) for match in _PRIVATE_KEY_PEM.finditer(key_pem)]
    if len(keys) != 1:
        raise _invalid(key, "[hidden]", "Private key not provided" if not keys
                       else f"Expected one private key, but found {len(keys)}")
    certificates = [x509.load_pem_x509_certificate(match.group(0)) for match in _CERTIFICATE_PEM.finditer(chain_pem)]
    if not certificates:
        raise _invalid(key, "[hidden]", "At least one certificate expected, but none found")
    try:
        private_key = serialization.load_pem_private_key(
            keys[0], key_password.encode() if key_password is not None else None)
    except (ValueError, TypeError) as error:
        raise _invalid(key, "[hidden]", f"Invalid PEM keystore configs: {error}") from None
    return private_key, certificates


def _load_cert_chain(context: ssl.SSLContext, private_key: PrivateKey, chain: list[x509.Certificate]) -> None:
    """Hand key and chain to OpenSSL, the key encrypted with a one-time password (see the module docstring)."""
    from cryptography.hazmat.primitives import serialization

    one_time_password = secrets.token_bytes(32).hex().encode()
    pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time_password),
    ) + b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in chain)
    with _unnamed_file(pem) as path:
        try:
            context.load_cert_chain(path, password=one_time_password)
        except ssl.SSLError as error:
            raise InvalidConfigError(f"Invalid key store: the private key does not match its certificate "
                                     f"or the certificate cannot be used ({error})") from None


@contextlib.contextmanager
def _unnamed_file(data: bytes) -> Iterator[str]:
    """A path OpenSSL can read `data` from: an anonymous memory file, else a temporary file removed on exit."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("minikafka-ssl-keystore", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.NamedTemporaryFile(prefix="minikafka-ssl-", suffix=".pem") as handle:
        handle.write(data)
        handle.flush()
        yield handle.name


def _load_truststore(config: SslConfig) -> list[x509.Certificate]:
    from cryptography.hazmat.primitives.serialization import pkcs12

    if config.truststore_certificates is not None:
        return _pem_certificates("ssl.truststore.certificates", "[hidden]", config.truststore_certificates.encode())
    if config.truststore_location is None:
        return []
    data = _read("ssl.truststore.location", config.truststore_location)
    if config.truststore_type == PEM:
        return _pem_certificates("ssl.truststore.location", config.truststore_location, data)
    password = config.truststore_password.encode() if config.truststore_password is not None else None
    try:
        store = pkcs12.load_pkcs12(data, password)
    except ValueError as error:
        raise _invalid("ssl.truststore.location", config.truststore_location,
                       f"Failed to load SSL keystore {config.truststore_location} of type "
                       f"{config.truststore_type}: {error}") from None
    certificates = [entry.certificate for entry in store.additional_certs]
    if store.cert is not None:
        certificates.append(store.cert.certificate)
    return certificates


def _pem_certificates(key: str, shown_value: str, data: bytes) -> list[x509.Certificate]:
    from cryptography import x509

    certificates = [x509.load_pem_x509_certificate(match.group(0)) for match in _CERTIFICATE_PEM.finditer(data)]
    if not certificates:
        raise _invalid(key, shown_value, "No matching CERTIFICATE entries in PEM file")
    return certificates


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as error:
        raise _invalid(key, location, f"cannot read {location}: {error.strerror}") from None


def _invalid(name: str, value: str, rule: str) -> InvalidConfigError:
    return InvalidConfigError(f"Invalid value {value} for configuration {name}: {rule}")

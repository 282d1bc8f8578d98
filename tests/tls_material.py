"""Certificates made for a test: a CA, a server certificate for 127.0.0.1/localhost, client certificates, and
the key and trust stores a broker or client reads (PEM, PKCS12). Nothing is checked in; everything lands under
the test's tmp directory."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PASSWORD = "test-secret"


@dataclass(frozen=True)
class Identity:
    """A private key with its certificate (and the CA that signed it)."""

    key: rsa.RSAPrivateKey
    certificate: x509.Certificate
    chain: tuple[x509.Certificate, ...] = ()

    def key_pem(self, password: str | None = None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)

    def chain_pem(self) -> bytes:
        return b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in (self.certificate, *self.chain))

    def write_pem_keystore(self, path: Path, key_password: str | None = None) -> Path:
        """Kafka's PEM key store file: the private key then the certificate chain."""
        path.write_bytes(self.key_pem(key_password) + self.chain_pem())
        return path

    def write_pkcs12_keystore(self, path: Path, password: str = PASSWORD) -> Path:
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            b"kafka", self.key, self.certificate, list(self.chain),
            serialization.BestAvailableEncryption(password.encode())))
        return path

    def write_key(self, path: Path) -> Path:
        path.write_bytes(self.key_pem())
        return path

    def write_certificate(self, path: Path) -> Path:
        path.write_bytes(self.chain_pem())
        return path


def _name(common_name: str, *units: str) -> x509.Name:
    # Built O, OU..., CN so that the RFC 2253 form (most specific first) reads CN=...,OU=...,O=acme
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acme")]
    attributes += [x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit) for unit in units]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: rsa.RSAPublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2)))


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class CertificateAuthority:
    """A self-signed CA issuing server and client certificates."""

    def __init__(self, common_name: str = "minikafka test CA") -> None:
        self.key = _key()
        name = _name(common_name)
        self.certificate = (
            _builder(name, name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    def _authority_key_identifier(self) -> x509.AuthorityKeyIdentifier:
        """Python 3.13's default contexts verify with VERIFY_X509_STRICT, which wants it in every issued certificate."""
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key())

    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def write_pem_truststore(self, path: Path) -> Path:
        path.write_bytes(self.certificate_pem())
        return path

    def write_pkcs12_truststore(self, path: Path, password: str = PASSWORD) -> Path:
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            None, None, None, [self.certificate], serialization.BestAvailableEncryption(password.encode())))
        return path

    def issue_server(self, common_name: str = "localhost") -> Identity:
        key = _key()
        certificate = (
            _builder(_name(common_name, "broker"), self.certificate.subject, key.public_key())
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(self._authority_key_identifier(), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        return Identity(key, certificate, (self.certificate,))

    def issue_client(self, common_name: str, *units: str) -> Identity:
        """A client certificate whose subject prints (RFC 2253) as CN=<common_name>,OU=<units...>,O=acme."""
        key = _key()
        certificate = (
            _builder(_name(common_name, *reversed(units)), self.certificate.subject, key.public_key())
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(self._authority_key_identifier(), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        return Identity(key, certificate, (self.certificate,))

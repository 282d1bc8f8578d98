"""ssl.principal.mapping.rules against Kafka's own SslPrincipalMapperTest cases, and certificate DNs as Java's
X500Principal.getName() prints them."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from minikafka.broker.security.principal_mapping import (
    NoMatchingRule,
    SslPrincipalMapper,
    certificate_subject,
    parse_mapping_rules,
)
from minikafka.broker.session import ANONYMOUS, KafkaPrincipal
from minikafka.protocol.errors import InvalidConfigError
from tests.tls_material import CertificateAuthority


@pytest.mark.parametrize("rules", [
    "DEFAULT",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
    "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
    "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
])
def test_valid_rules(rules: str) -> None:
    SslPrincipalMapper(rules)


@pytest.mark.parametrize("rules", [
    "default",
    "DEFAUL",
    "DEFAULT/L",
    "DEFAULT/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
])
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper(rules)
    with pytest.raises(InvalidConfigError, match=r"for configuration ssl\.principal\.mapping\.rules: Invalid rule"):
        parse_mapping_rules(rules)


def test_kafka_documented_mapping() -> None:
    mapper = SslPrincipalMapper(", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ]))
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


@pytest.mark.parametrize(("expected", "rules"), [
    ("[]", ""),
    ("[DEFAULT]", "DEFAULT"),
    ("[RULE:/]", "RULE://"),
    ("[RULE:/.*]", "RULE:/.*/"),
    ("[RULE:/.*/L]", "RULE:/.*/L"),
    ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
    ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
    ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
    ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
    ("[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
    ("[]", ",   , , ,      , , ,   "),
    ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
    ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
    ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
    ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
    ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
    ("[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
     "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT"),
])
def test_rules_splitting(expected: str, rules: str) -> None:
    assert repr(SslPrincipalMapper(rules)) == f"SslPrincipalMapper(rules = {expected})"


def test_comma_with_whitespace() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_back_reference_beyond_the_groups_stays_literal() -> None:
    assert SslPrincipalMapper("RULE:^CN=(.*?),.*$/$1-$2/").name("CN=app,O=acme") == "app-$2"
    assert SslPrincipalMapper("RULE:^CN=(.*?),.*$/$12/").name("CN=app,O=acme") == "app2"


def test_no_matching_rule() -> None:
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=x"):
        SslPrincipalMapper("RULE:^CN=admin$/root/").name("CN=x")


def test_certificate_subject_is_printed_most_specific_first() -> None:
    ca = CertificateAuthority()
    client = ca.issue_client("client", "dev")
    der = client.certificate.public_bytes(serialization.Encoding.DER)
    assert certificate_subject(der) == "CN=client,OU=dev,O=acme"
    mapper = SslPrincipalMapper("RULE:^CN=([^,]+),OU=dev,.*$/$1/U,DEFAULT")
    assert mapper.principal(der) == KafkaPrincipal("User", "CLIENT")
    assert mapper.principal(None) == ANONYMOUS
    assert SslPrincipalMapper().principal(der) == KafkaPrincipal("User", "CN=client,OU=dev,O=acme")


def test_special_characters_and_other_attributes_print_as_java_does() -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    ca = CertificateAuthority()
    name = x509.Name([
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.c"),
        x509.NameAttribute(NameOID.COMMON_NAME, "Tkac, Adam+1"),
    ])
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(ca.certificate.subject)
                   .public_key(ca.key.public_key()).serial_number(1)
                   .not_valid_before(ca.certificate.not_valid_before_utc)
                   .not_valid_after(ca.certificate.not_valid_after_utc).sign(ca.key, hashes.SHA256()))
    der = certificate.public_bytes(serialization.Encoding.DER)
    # Java: keywords only for CN, C, L, ST, O, OU, DC, STREET, UID; others as OID=#<DER hex> (IA5String 0x16)
    assert certificate_subject(der) == "CN=Tkac\\, Adam\\+1,1.2.840.113549.1.9.1=#16056140622e63,C=US"

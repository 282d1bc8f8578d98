"""mTLS principals: a client certificate's subject as Kafka prints it, and `ssl.principal.mapping.rules`.

Kafka names an SSL client `User:<DN>`, the DN being Java's `X500Principal.getName()` (RFC 2253: the most
specific RDN first, `CN=client,OU=dev,O=acme`), passed through `SslPrincipalMapper`: a comma-separated list of
`RULE:pattern/replacement/[LU]` and `DEFAULT`, the first rule whose pattern matches the whole DN giving the name.
Java regular expressions are read by Python's `re`, which agrees on the syntax such rules use; `$1` in a
replacement is a group reference, a `$n` beyond the pattern's groups stays literal (as Kafka does). Immutable;
thread-safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minikafka.broker.session import ANONYMOUS, KafkaPrincipal
from minikafka.protocol.errors import InvalidConfigError

if TYPE_CHECKING:
    from cryptography import x509

DEFAULT_SSL_PRINCIPAL_MAPPING_RULES = "DEFAULT"

# Kafka's SslPrincipalMapper.RULE_PATTERN, RULE_SPLITTER and RULE_PARSER (Java regex syntax read by Python's re).
_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$(\d+)")

#: The attribute keywords Java's RFC 2253 output uses, by dotted OID (cryptography's NameOID: COMMON_NAME, ...; the
#: strings keep cryptography off the start path of a broker without SSL listeners); any other attribute is printed
#: as OID=#<DER hex>.
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.25": "DC",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.1": "UID",
}
#: ASN.1 string tags and how their bytes are encoded (for the #hex form of other attributes).
_STRING_ENCODINGS = {12: "utf-8", 19: "ascii", 20: "latin-1", 22: "ascii", 26: "ascii", 28: "utf-32-be",
                     30: "utf-16-be"}


class NoMatchingRule(Exception):
    """No rule of ssl.principal.mapping.rules applies to a DN (Kafka fails the connection's authentication)."""


@dataclass(frozen=True)
class _Rule:
    is_default: bool
    pattern: str = ""
    replacement: str = ""
    to_lower_case: bool = False
    to_upper_case: bool = False

    def apply(self, distinguished_name: str) -> str | None:
        if self.is_default:
            return distinguished_name
        compiled = re.compile(self.pattern)
        if compiled.fullmatch(distinguished_name) is None:
            return None
        result = compiled.sub(_python_replacement(self.replacement, compiled.groups), distinguished_name)
        if self.to_lower_case:
            return result.lower()
        if self.to_upper_case:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        text = f"RULE:{self.pattern}/{self.replacement}"
        if self.to_lower_case:
            text += "/L"
        elif self.to_upper_case:
            text += "/U"
        return text


class SslPrincipalMapper:
    """The parsed `ssl.principal.mapping.rules` of one listener."""

    def __init__(self, rules: str | None = DEFAULT_SSL_PRINCIPAL_MAPPING_RULES) -> None:
        text = DEFAULT_SSL_PRINCIPAL_MAPPING_RULES if rules is None else rules  # "" is no rule at all
        parsed = (_parse_rule(rule) for rule in _split_rules(text))
        self.rules: tuple[_Rule, ...] = tuple(rule for rule in parsed if rule is not None)

    def name(self, distinguished_name: str) -> str:
        """The principal name for `distinguished_name`; raises NoMatchingRule when no rule applies."""
        for rule in self.rules:
            principal_name = rule.apply(distinguished_name)
            if principal_name is not None:
                return principal_name
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self._rules_text()}")

    def principal(self, peer_certificate_der: bytes | None) -> KafkaPrincipal:
        """`User:<mapped DN>` for a client certificate, `User:ANONYMOUS` without one."""
        if peer_certificate_der is None:
            return ANONYMOUS
        return KafkaPrincipal("User", self.name(certificate_subject(peer_certificate_der)))

    def _rules_text(self) -> str:
        return "[" + ", ".join(str(rule) for rule in self.rules) + "]"

    def __repr__(self) -> str:
        return f"SslPrincipalMapper(rules = {self._rules_text()})"


def parse_mapping_rules(value: str) -> SslPrincipalMapper:
    """Validate `ssl.principal.mapping.rules` with Kafka's message for a bad rule."""
    try:
        return SslPrincipalMapper(value)
    except ValueError as error:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration ssl.principal.mapping.rules: {error}") from None


def _split_rules(rules: str) -> list[str]:
    return [match.group(1) for match in _RULE_SPLITTER.finditer(rules.strip()) if match.group(1) is not None]


def _parse_rule(rule: str) -> _Rule | None:
    match = _RULE_PARSER.match(rule)  # Java's lookingAt(): anchored at the start only
    if match is None:
        raise ValueError(f"Invalid rule: {rule}")
    if match.end() != len(rule):
        raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[match.end():]}`")
    if match.group(1) is not None:
        return _Rule(is_default=True)
    if match.group(2) is not None:
        return _Rule(False, match.group(2), match.group(4), match.group(6) == "L", match.group(6) == "U")
    return None  # an empty rule is ignored


def _python_replacement(replacement: str, group_count: int) -> str:
    """A Java replacement string (`$1`, `\\$` for a literal dollar) as an re.sub one. A reference beyond the
    pattern's groups loses trailing digits until it fits ($12 -> $1 then '2'), else stays literal (Kafka's
    escapeLiteralBackReferences)."""
    out: list[str] = []
    position = 0
    while position < len(replacement):
        char = replacement[position]
        if char == "\\" and position + 1 < len(replacement):
            out.append(replacement[position + 1].replace("\\", "\\\\"))
            position += 2
            continue
        match = _BACK_REFERENCE.match(replacement, position)
        if match is not None:
            digits = match.group(1)
            # Java reads the longest number that is still a valid group; below that, the rest are literal digits.
            used = len(digits)
            while used > 1 and int(digits[:used]) > group_count:
                used -= 1
            number = int(digits[:used])
            if number <= group_count and not (group_count == 0 and number > 0):
                out.append(f"\\g<{number}>" + digits[used:])
            else:
                out.append("$" + digits)
            position = match.end()
            continue
        out.append("\\\\" if char == "\\" else char)
        position += 1
    return "".join(out)


def certificate_subject(certificate_der: bytes) -> str:
    """The certificate's subject as Java's X500Principal.getName() prints it (RFC 2253)."""
    from cryptography import x509  # on the first mTLS handshake: not on the start path

    subject = x509.load_der_x509_certificate(certificate_der).subject
    return ",".join(
        "+".join(_attribute_text(attribute) for attribute in rdn) for rdn in reversed(subject.rdns)
    )


def _attribute_text(attribute: x509.NameAttribute[str | bytes]) -> str:
    keyword = _RFC2253_KEYWORDS.get(attribute.oid.dotted_string)
    value = attribute.value
    if keyword is not None and isinstance(value, str):
        return f"{keyword}={_escape(value)}"
    tag = int(attribute._type.value)  # the attribute's ASN.1 string type
    raw = value if isinstance(value, bytes) else value.encode(_STRING_ENCODINGS.get(tag, "utf-8"))
    return f"{attribute.oid.dotted_string}=#{_der_tlv(tag, raw).hex()}"


def _escape(value: str) -> str:
    """RFC 2253 escaping as Java does it: , + " \\ < > ; always, a leading # or space and a trailing space."""
    out = []
    for index, char in enumerate(value):
        if char in ',+"\\<>;' or (index == 0 and char in "# ") or (index == len(value) - 1 and char == " "):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _der_tlv(tag: int, content: bytes) -> bytes:
    length = len(content)
    if length < 0x80:
        return bytes([tag, length]) + content
    length_bytes = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length_bytes)]) + length_bytes + content

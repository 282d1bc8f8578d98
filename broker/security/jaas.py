"""The `sasl.jaas.config` value parser, with the tokenising rules of Kafka's JaasConfig (a java.io.StreamTokenizer
with `//` and `/* */` comments and `-`, `_`, `$` as word characters):

    <loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;

Values are words or quoted strings (`"..."` or `'...'`, with Java's backslash escapes); a value that starts
with a digit or `.` is a number to StreamTokenizer and therefore rejected, as Kafka rejects it. Errors are
ValueError with Kafka's messages. Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")

_WORD = "WORD"
_NUMBER = "NUMBER"
_QUOTED = "QUOTED"
_ORDINARY = "ORDINARY"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


@dataclass(frozen=True)
class AppConfigurationEntry:
    """One login module line: its class name, control flag and options."""

    login_module_name: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str | None  # sval (None for numbers and ordinary characters, as StreamTokenizer)
    char: str = ""


def _is_word_start(char: str) -> bool:
    return (char.isascii() and (char.isalpha() or char in "_$")) or ord(char) >= 160


def _is_word_part(char: str) -> bool:
    return _is_word_start(char) or (char.isascii() and (char.isdigit() or char in ".-"))


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, length = 0, len(text)
    while i < length:
        char = text[i]
        if char <= " ":
            i += 1
        elif text.startswith("//", i) or (char == "/" and not text.startswith("/*", i)):
            newline = text.find("\n", i)
            i = length if newline < 0 else newline + 1  # `/` is StreamTokenizer's default comment character
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = length if end < 0 else end + 2
        elif char in "\"'":
            value, i = _quoted(text, i + 1, char)
            tokens.append(_Token(_QUOTED, value, char))
        elif char.isdigit() or char == "." or (char == "-" and i + 1 < length and (text[i + 1].isdigit()
                                                                                    or text[i + 1] == ".")):
            i += 1
            while i < length and (text[i].isdigit() or text[i] == "."):
                i += 1
            tokens.append(_Token(_NUMBER, None))
        elif _is_word_start(char):
            start = i
            while i < length and _is_word_part(text[i]):
                i += 1
            tokens.append(_Token(_WORD, text[start:i]))
        else:
            tokens.append(_Token(_ORDINARY, None, char))
            i += 1
    return tokens


def _quoted(text: str, i: int, quote: str) -> tuple[str, int]:
    """A quoted string from after its opening quote to the closing one or the end of the line."""
    out: list[str] = []
    while i < len(text) and text[i] != quote and text[i] not in "\n\r":
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            i += 1
            escaped = text[i]
            if escaped in "01234567":
                digits = escaped
                limit = 3 if escaped <= "3" else 2
                while len(digits) < limit and i + 1 < len(text) and text[i + 1] in "01234567":
                    i += 1
                    digits += text[i]
                out.append(chr(int(digits, 8)))
            else:
                out.append(_ESCAPES.get(escaped, escaped))
        else:
            out.append(char)
        i += 1
    if i < len(text) and text[i] == quote:
        i += 1
    return "".join(out), i


def parse_jaas_config(text: str) -> list[AppConfigurationEntry]:
    """All login module entries of a `sasl.jaas.config` value."""
    tokens = _tokens(text)
    entries: list[AppConfigurationEntry] = []
    position = 0
    while position < len(tokens):
        entry, position = _entry(tokens, position)
        entries.append(entry)
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    return entries


def _entry(tokens: list[_Token], position: int) -> tuple[AppConfigurationEntry, int]:
    login_module = tokens[position].text
    position += 1
    if position >= len(tokens):
        raise ValueError("Login module control flag not specified in JAAS config")
    flag = tokens[position].text
    if flag is None:
        raise ValueError("Login module control flag is not available in the JAAS config")
    if flag.upper() not in CONTROL_FLAGS:
        raise ValueError(f"Invalid login module control flag '{flag}' in JAAS config")
    position += 1
    options: dict[str, str] = {}
    while position < len(tokens) and not (tokens[position].kind == _ORDINARY and tokens[position].char == ";"):
        key = tokens[position].text
        is_equals = position + 1 < len(tokens) and tokens[position + 1].char == "="
        value = tokens[position + 2] if position + 2 < len(tokens) else None
        if not is_equals or value is None or value.text is None:
            raise ValueError(f"Value not specified for key '{key}' in JAAS config")
        options[str(key)] = value.text
        position += 3
    if position >= len(tokens):
        raise ValueError("JAAS config entry not terminated by semi-colon")
    return AppConfigurationEntry(str(login_module), flag.upper(), options), position + 1


def single_login_module(text: str) -> AppConfigurationEntry:
    """The one entry a listener's `<mechanism>.sasl.jaas.config` may hold (Kafka's JaasContext.load)."""
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]

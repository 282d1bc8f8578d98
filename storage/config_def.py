"""Declarative config tables with Kafka's parsing rules and error messages.

A `ConfigDef` is one table of `ConfigKey`s (name, type, default, validator, doc). `parse()` turns the string
properties of a topic, the broker or the cleaner into typed Python values, applying defaults, and raises
`InvalidConfigError` whose message names the key, the value and the rule, exactly as Kafka's ConfigException
does: "Invalid value -5 for configuration segment.bytes: Value must be at least 14".
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.protocol.errors import InvalidConfigError

LONG_MAX = 9_223_372_036_854_775_807
LONG_MIN = -9_223_372_036_854_775_808
INT_MAX = 2_147_483_647
INT_MIN = -2_147_483_648


class ConfigType(enum.Enum):
    """Kafka's ConfigDef.Type; `.describe_code` is the DescribeConfigs config_type code."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @property
    def describe_code(self) -> int:
        return self.value


class ConfigValueError(ValueError):
    """Raised by a validator; the text is the rule ("Value must be at least 14"). `bad_value` is the value to report
    when it is not the whole value (the one bad item of a list)."""

    def __init__(self, rule: str, bad_value: str | None = None) -> None:
        super().__init__(rule)
        self.bad_value = bad_value


class ConfigListError(ValueError):
    """Raised by `ValidList` for a message of its own form; `{name}` in the text is the config's name."""


Validator = Callable[[Any], None]


def at_least(minimum: float) -> Validator:
    def check(value: Any) -> None:
        if value is None or value < minimum:
            raise ConfigValueError(f"Value must be at least {minimum}")

    return check


def between(minimum: float, maximum: float) -> Validator:
    def check(value: Any) -> None:
        if value is None or value < minimum:
            raise ConfigValueError(f"Value must be at least {minimum}")
        if value > maximum:
            raise ConfigValueError(f"Value must be no more than {maximum}")

    return check


def in_set(*allowed: str) -> Validator:
    def check(value: Any) -> None:
        if value not in allowed:
            raise ConfigValueError(f"String must be one of: {', '.join(allowed)}")

    return check


class ValidList:
    """Kafka 4.3's ConfigDef.ValidList: every item of a LIST value non-empty and one of `allowed`; an empty list
    only where `empty_allowed`. Kafka removes duplicate items before validating (`distinct_items`)."""

    def __init__(self, allowed: Sequence[str], *, empty_allowed: bool = True) -> None:
        self.allowed = tuple(allowed)
        self.empty_allowed = empty_allowed

    def __call__(self, value: Any) -> None:
        items = value or ()
        if not items and not self.empty_allowed:
            raise ConfigListError(f"Configuration '{{name}}' must not be empty. Valid values include: "
                                  f"{', '.join(self.allowed) or 'any non-empty value'}")
        for item in items:
            if item == "":
                raise ConfigListError("Configuration '{name}' values must not be empty.")
            if self.allowed and item not in self.allowed:
                raise ConfigValueError(f"String must be one of: {', '.join(self.allowed)}", bad_value=item)

    @staticmethod
    def distinct_items(value: Any) -> Any:
        return value if value is None else tuple(dict.fromkeys(value))


def list_of(*allowed: str) -> Validator:
    """Every element of a LIST value must be one of `allowed` (Kafka's ValidList, empty list allowed)."""
    return ValidList(allowed)


_NO_DEFAULT = object()


@dataclass(frozen=True)
class ConfigKey:
    """One config: Kafka's name, type, parsed default (None = null), optional validator and doc string."""

    name: str
    type: ConfigType
    default: Any = _NO_DEFAULT
    validator: Validator | None = None
    doc: str = ""

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


def _invalid(name: str, raw: object, rule: str) -> InvalidConfigError:
    return InvalidConfigError(f"Invalid value {raw} for configuration {name}: {rule}")


def parse_value(key: ConfigKey, raw: str) -> Any:
    """Parse one string as Kafka's ConfigDef.parseType does (trimmed, range-checked)."""
    text = raw.strip()
    kind = key.type
    if kind is ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise _invalid(key.name, raw, "Expected value to be either true or false")
        return text.lower() == "true"
    if kind in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS):
        return text
    if kind is ConfigType.LIST:
        return tuple(part.strip() for part in text.split(",")) if text else ()
    if kind is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            raise _invalid(key.name, raw, "Not a number of type DOUBLE") from None
    bounds = {
        ConfigType.INT: (INT_MIN, INT_MAX),
        ConfigType.SHORT: (-32768, 32767),
        ConfigType.LONG: (LONG_MIN, LONG_MAX),
    }[kind]
    try:
        number = int(text, 10)
    except ValueError:
        raise _invalid(key.name, raw, f"Not a number of type {kind.name}") from None
    if not bounds[0] <= number <= bounds[1]:
        raise _invalid(key.name, raw, f"Not a number of type {kind.name}")
    return number


def format_value(key: ConfigKey, value: Any) -> str | None:
    """The string form Kafka's DescribeConfigs shows for a parsed value (None stays None)."""
    if value is None:
        return None
    if key.type is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if key.type is ConfigType.LIST:
        return ",".join(value)
    return str(value)


class ConfigDef:
    """An immutable table of ConfigKeys; thread-safe (never mutated after construction)."""

    def __init__(self, keys: Iterable[ConfigKey]) -> None:
        self.keys: dict[str, ConfigKey] = {}
        for key in keys:
            if key.name in self.keys:
                raise ValueError(f"duplicate config key {key.name}")
            self.keys[key.name] = key

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def names(self) -> Sequence[str]:
        return list(self.keys)

    def validate_value(self, name: str, raw: str) -> Any:
        """Parse and validate one value; raise InvalidConfigError for an unknown key or a bad value."""
        key = self.keys.get(name)
        if key is None:
            raise InvalidConfigError(f"Unknown configuration {name}")
        value = parse_value(key, raw)
        if isinstance(key.validator, ValidList):
            value = ValidList.distinct_items(value)
        self._check(key, value, raw)
        return value

    @staticmethod
    def _check(key: ConfigKey, value: Any, raw: object, reported_name: str | None = None) -> None:
        """Run the key's validator; `reported_name` is the property the user set (e.g. a broker synonym)."""
        if key.validator is not None:
            try:
                key.validator(value)
            except ConfigListError as exc:
                raise InvalidConfigError(str(exc).replace("{name}", reported_name or key.name)) from None
            except ConfigValueError as exc:
                bad_value = raw if exc.bad_value is None else exc.bad_value
                raise _invalid(reported_name or key.name, bad_value, str(exc)) from None

    def parse(self, props: Mapping[str, str], *, allow_unknown: bool = True) -> dict[str, Any]:
        """All keys of the table, from `props` or the default; unknown keys ignored unless disallowed."""
        if not allow_unknown:
            for name in props:
                if name not in self.keys:
                    raise InvalidConfigError(f"Unknown configuration {name}")
        parsed: dict[str, Any] = {}
        for name, key in self.keys.items():
            if name in props:
                raw = props[name]
                parsed[name] = None if raw is None else self.validate_value(name, raw)
            elif key.has_default:
                parsed[name] = key.default
            else:
                raise InvalidConfigError(
                    f'Missing required configuration "{name}" which has no default value.')
        return parsed

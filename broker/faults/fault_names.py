"""Kafka's names for APIs and error codes as a fault names them: `"OffsetCommit"`, `"OFFSET_COMMIT"`, `"offset-commit"`
or `8`; `"NOT_LEADER_OR_FOLLOWER"` or `6`. Anything else is a `FaultInputError` whose message is the one line the
caller shows. Stateless."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.error_codes import ErrorCode

_Member = TypeVar("_Member", bound=IntEnum)


class FaultInputError(ValueError):
    """A fault the broker refuses (unknown API, error or broker id, a bad number): the message says why, in one line."""


def _folded(name: str) -> str:
    return name.replace("_", "").replace("-", "").replace(" ", "").lower()


_APIS_BY_FOLDED_NAME = {_folded(api.name): api for api in ApiKey}
_ERRORS_BY_NAME = {error.name: error for error in ErrorCode}


def api_key(text: str | int) -> ApiKey:
    """The API a fault names by Kafka's name (ApiKeys' `PRODUCE` or its request name `Produce`) or number."""
    return _member(text, ApiKey, _APIS_BY_FOLDED_NAME.get(_folded(str(text))),
                   f"unknown API key {text}: minikafka serves {', '.join(str(int(api)) for api in ApiKey)}",
                   f"unknown API {str(text).strip()!r}: use Kafka's name (Produce, OffsetCommit, FIND_COORDINATOR) or "
                   f"the API key's number")


def error_code(text: str | int) -> ErrorCode:
    """The error a fault names by Kafka's name (`NOT_LEADER_OR_FOLLOWER`, any case) or code (`6`); `NONE` (0) is
    allowed: that request is served as usual, as in librdkafka's mock cluster."""
    return _member(text, ErrorCode, _ERRORS_BY_NAME.get(str(text).strip().upper().replace("-", "_")),
                   f"unknown error code {text}: not one of Kafka's error codes minikafka knows",
                   f"unknown error {str(text).strip()!r}: use Kafka's name (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, "
                   f"...) or its code")


def _member(text: str | int, enum: type[_Member], by_name: _Member | None, unknown_number: str,
            unknown_name: str) -> _Member:
    """`enum`'s member numbered `text`, else `by_name` (the member the caller found by name); else the matching
    refusal."""
    value = str(text).strip()
    if value.lstrip("-").isdigit():
        try:
            return enum(int(value))
        except ValueError:
            raise FaultInputError(unknown_number) from None
    if by_name is None:
        raise FaultInputError(unknown_name)
    return by_name

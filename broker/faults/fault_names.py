"""Kafka's names for APIs and error codes as a fault names them: `"OffsetCommit"`, `"OFFSET_COMMIT"`, `"offset-commit"`
or `8`; `"NOT_LEADER_OR_FOLLOWER"` or `6`. Anything else is a `FaultInputError` whose message is the one line the
caller shows. Stateless."""

from __future__ import annotations

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.error_codes import ErrorCode


class FaultInputError(ValueError):
    """A fault the broker refuses (unknown API, error or broker id, a bad number): the message says why, in one line."""


def _folded(name: str) -> str:
    return name.replace("_", "").replace("-", "").replace(" ", "").lower()


_APIS_BY_FOLDED_NAME = {_folded(api.name): api for api in ApiKey}
_ERRORS_BY_NAME = {error.name: error for error in ErrorCode}


def api_key(text: str | int) -> ApiKey:
    """The API a fault names by Kafka's name (ApiKeys' `PRODUCE` or its request name `Produce`) or number."""
    value = str(text).strip()
    if value.lstrip("-").isdigit():
        try:
            return ApiKey(int(value))
        except ValueError:
            raise FaultInputError(f"unknown API key {value}: minikafka serves "
                                  f"{', '.join(str(int(api)) for api in ApiKey)}") from None
    api = _APIS_BY_FOLDED_NAME.get(_folded(value))
    if api is None:
        raise FaultInputError(f"unknown API {value!r}: use Kafka's name (Produce, OffsetCommit, FIND_COORDINATOR) "
                              f"or the API key's number")
    return api


def error_code(text: str | int) -> ErrorCode:
    """The error a fault names by Kafka's name (`NOT_LEADER_OR_FOLLOWER`, any case) or code (`6`); `NONE` (0) is
    allowed: that request is served as usual, as in librdkafka's mock cluster."""
    value = str(text).strip()
    if value.lstrip("-").isdigit():
        try:
            return ErrorCode(int(value))
        except ValueError:
            raise FaultInputError(f"unknown error code {value}: not one of Kafka's error codes minikafka "
                                  f"knows") from None
    error = _ERRORS_BY_NAME.get(value.upper().replace("-", "_"))
    if error is None:
        raise FaultInputError(f"unknown error {value!r}: use Kafka's name (NOT_LEADER_OR_FOLLOWER, "
                              f"NOT_COORDINATOR, ...) or its code")
    return error


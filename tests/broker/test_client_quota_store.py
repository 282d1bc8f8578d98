"""`ClientQuotaStore`: Kafka's AlterClientQuotas validation and messages (ClientQuotaControlManager), the
DescribeClientQuotas filter (ClientQuotasImage.describe), validate-only, and the file surviving a reload."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.quotas.client_quota_store import (
    CLIENT_QUOTAS_FILE,
    MATCH_TYPE_DEFAULT,
    MATCH_TYPE_EXACT,
    MATCH_TYPE_SPECIFIED,
    ClientQuotaStore,
    QuotaAlteration,
)
from minikafka.protocol.errors import ErrorCode, InvalidRequestError, UnsupportedVersionError


def alter(store: ClientQuotaStore, entity: dict[str, str | None], ops: dict[str, float | None],
          validate_only: bool = False) -> tuple[ErrorCode, str | None]:
    [result] = store.alter([QuotaAlteration(tuple(entity.items()), tuple(ops.items()))], validate_only)
    return result.error_code, result.error_message


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ({}, {"producer_byte_rate": 1.0}, "Invalid empty client quota entity"),
    ({"group": "g"}, {"producer_byte_rate": 1.0}, "Unhandled client quota entity type: group"),
    ({"user": ""}, {"producer_byte_rate": 1.0}, "Empty user not supported"),
    ({"client-id": "c"}, {"connection_creation_rate": 1.0}, "Invalid configuration key connection_creation_rate"),
    ({"client-id": "c"}, {"producer_byte_rate": 0.0}, "Quota producer_byte_rate must be greater than 0"),
    ({"client-id": "c"}, {"producer_byte_rate": 1.5}, "producer_byte_rate cannot be a fractional value."),
    ({"client-id": "c"}, {"consumer_byte_rate": 1e19},
     "Proposed value for consumer_byte_rate is too large for a LONG."),
    ({"ip": "1.2.3.4", "user": "u"}, {"connection_creation_rate": 1.0}, "Invalid quota entity combination"),
    ({"ip": "1.2.3.4"}, {"connection_creation_rate": 1e10}, "too large for an INT."),
])
def test_invalid_alterations_get_kafkas_messages(entity: dict[str, str | None], ops: dict[str, float | None],
                                                  message: str) -> None:
    code, text = alter(ClientQuotaStore(), entity, ops)
    assert code is ErrorCode.INVALID_REQUEST
    assert text is not None and message in text


def test_set_remove_validate_only_and_reload(tmp_path: Path) -> None:
    store = ClientQuotaStore.load(tmp_path)
    assert alter(store, {"client-id": "c1"}, {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}) == (
        ErrorCode.NONE, None)
    assert alter(store, {"user": None}, {"consumer_byte_rate": 2048.0}) == (ErrorCode.NONE, None)
    assert alter(store, {"client-id": "c2"}, {"producer_byte_rate": 1.0}, validate_only=True) == (ErrorCode.NONE, None)
    assert alter(store, {"client-id": "c1"}, {"request_percentage": None}) == (ErrorCode.NONE, None)
    assert alter(store, {"client-id": "c3"}, {"request_percentage": None}) == (ErrorCode.NONE, None)  # nothing to do
    expected = {(("client-id", "c1"),): {"producer_byte_rate": 1048576.0}, (("user", None),): {
        "consumer_byte_rate": 2048.0}}
    assert store.entities() == expected
    assert (tmp_path / CLIENT_QUOTAS_FILE).exists()
    assert ClientQuotaStore.load(tmp_path).entities() == expected
    assert alter(store, {"user": None}, {"consumer_byte_rate": None}) == (ErrorCode.NONE, None)
    assert ClientQuotaStore.load(tmp_path).entities() == {(("client-id", "c1"),): {"producer_byte_rate": 1048576.0}}


def test_a_duplicate_entity_or_key_is_refused() -> None:
    store = ClientQuotaStore()
    results = store.alter([
        QuotaAlteration((("client-id", "c"),), (("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0))),
    ])
    assert [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST]
    assert results[0].error_message is not None and "duplicate entity" in results[0].error_message
    results = store.alter([QuotaAlteration((("client-id", "d"),), (("producer_byte_rate", 1.0),)),
                           QuotaAlteration((("client-id", "d"),), (("consumer_byte_rate", 1.0),))])
    assert [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST]
    assert store.entities() == {(("client-id", "d"),): {"producer_byte_rate": 1.0}}  # Kafka keeps the first


def test_describe_filters_like_kafka() -> None:
    store = ClientQuotaStore()
    for entity in ({"client-id": "c1"}, {"client-id": None}, {"user": "alice"}, {"user": "alice", "client-id": "c1"},
                   {"user": None, "client-id": None}):
        assert alter(store, entity, {"producer_byte_rate": 100.0})[0] is ErrorCode.NONE

    def names(components: list[tuple[str, int, str | None]], strict: bool = False) -> list[dict[str, str | None]]:
        return sorted((dict(entity) for entity, _ in store.describe(components, strict)), key=repr)

    assert names([("client-id", MATCH_TYPE_EXACT, "c1")]) == sorted(
        [{"client-id": "c1"}, {"client-id": "c1", "user": "alice"}], key=repr)
    assert names([("client-id", MATCH_TYPE_EXACT, "c1")], strict=True) == [{"client-id": "c1"}]
    assert names([("client-id", MATCH_TYPE_DEFAULT, None)], strict=True) == [{"client-id": None}]
    assert names([("user", MATCH_TYPE_SPECIFIED, None)], strict=True) == [{"user": "alice"}]
    assert len(names([])) == 5 and names([], strict=True) == []
    for components, error, message in [
        ([("", MATCH_TYPE_EXACT, "x")], InvalidRequestError, "Invalid empty entity type."),
        ([("user", MATCH_TYPE_EXACT, None)], InvalidRequestError, "MATCH_TYPE_EXACT, but set match string to null"),
        ([("user", MATCH_TYPE_DEFAULT, "x")], InvalidRequestError, "MATCH_TYPE_DEFAULT, but also specified"),
        ([("user", 7, None)], InvalidRequestError, "Unknown match type 7"),
        ([("user", 1, None), ("user", 1, None)], InvalidRequestError, "cannot appear more than once"),
        ([("group", 1, None)], UnsupportedVersionError, "Unsupported entity type group"),
        ([("ip", 1, None), ("user", 1, None)], InvalidRequestError, "IP filter component should not be used"),
    ]:
        with pytest.raises(error) as info:
            store.describe(components, False)
        assert message in str(info.value.message)

"""`error_response`: the answer to a request whose handler failed (Kafka's AbstractRequest.getErrorResponse).

Built from the response's own schema (kafka-python's classes are generated from Kafka's message JSON), so one
function serves every API:
- a level of the response with an `error_code` gets the error, and its nested arrays stay empty (Metadata's
  topics without partitions, JoinGroup without members, OffsetFetch v8's groups without topics);
- a level without one mirrors the request's entities beneath it (its one untagged array mirrors the request
  level's array of the same name, or else its first non-empty one) and carries the error on each: every partition of
  a Produce, ListOffsets or DeleteRecords, every resource of DescribeConfigs, every topic of CreateTopics, every
  creation of CreateAcls. Entity keys (topic name or id, partition index, resource type and name, group id, ...)
  are copied from the request; offsets and timestamps are -1; every other field keeps its schema default.
Fetch v7-12 carries the error both at the top and on every partition, as Kafka does for those versions. Stateless.
"""

from __future__ import annotations

from typing import Any

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.error_codes import ErrorCode
from minikafka.protocol.messages import response_class

#: response key field -> the request fields it is copied from, in order of preference
_KEY_SOURCES: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "topic_name": ("topic_name", "name", "topic"),
    "topic_id": ("topic_id",),
    "partition_index": ("partition_index", "partition", "index"),
    "partition": ("partition", "partition_index", "index"),
    "index": ("index", "partition_index", "partition"),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
    "resource_pattern_type": ("resource_pattern_type",),
    "group_id": ("group_id",),
    "transactional_id": ("transactional_id",),
    "user": ("user", "name"),
    "producer_id": ("producer_id",),
}

#: offsets and timestamps a failed entity reports as -1 (Kafka's INVALID_OFFSET, UNKNOWN_OFFSET, NO_TIMESTAMP)
_MINUS_ONE_FIELDS = frozenset({"base_offset", "high_watermark", "last_stable_offset", "log_start_offset", "offset",
                               "committed_offset", "timestamp", "log_append_time_ms"})

#: Kafka answers these versions with the error at the top and on every partition as well
_MIRROR_UNDER_TOP_LEVEL_ERROR: dict[ApiKey, range] = {ApiKey.FETCH: range(7, 13)}


def error_response(api_key: ApiKey, api_version: int, request: Any, code: ErrorCode) -> Any:
    """The versioned response object answering `request` with `code` wherever the response has an error."""
    cls = response_class(api_key, api_version)
    mirror_anyway = api_version in _MIRROR_UNDER_TOP_LEVEL_ERROR.get(api_key, range(0))
    return cls(**_level(cls.fields, request, api_version, code, mirror_anyway))


def _present(fields: dict[str, Any], version: int) -> dict[str, Any]:
    return {name: field for name, field in fields.items() if field.for_version_q(version)}


def _level(fields: dict[str, Any], source: Any, version: int, code: ErrorCode, mirror_anyway: bool = False
           ) -> dict[str, Any]:
    present = _present(fields, version)
    values: dict[str, Any] = {name: -1 for name in present if name in _MINUS_ONE_FIELDS}
    if "error_code" in present:
        values["error_code"] = int(code)
    mirror = mirror_anyway or "error_code" not in present
    arrays = [name for name, field in present.items() if field.is_struct_array()]
    # a tagged array (Produce's and Fetch's node_endpoints, KIP-951) answers nothing of the request
    untagged = [name for name in arrays if not present[name].tagged_field_q(version)]
    for name in arrays:
        if mirror:
            field = present[name]
            values[name] = [field.data_class(**_element(field.fields, element, version, code))
                            for element in _matching_array(source, name, untagged == [name])]
    for name in present:
        if name in values or name in arrays or name not in _KEY_SOURCES:
            continue
        for source_name in _KEY_SOURCES[name]:
            value = getattr(source, source_name, None)
            if value is not None and not isinstance(value, list):
                values[name] = value
                break
    return values


def _element(fields: dict[str, Any], element: Any, version: int, code: ErrorCode) -> dict[str, Any]:
    """One mirrored entity; a request entity that is a bare name or index (DescribeGroups' group ids, OffsetFetch's
    partition indexes) fills the response entity's first key field of that type."""
    if isinstance(element, (str, int)):
        present = _present(fields, version)
        key = next((name for name in present if name in _KEY_SOURCES
                    and isinstance(element, str) == (present[name].type_str == "string")), None)
        values = _level(fields, None, version, code)
        if key is not None:
            values[key] = element
        return values
    return _level(fields, element, version, code)


def _matching_array(source: Any, name: str, only_one: bool) -> list[Any]:
    """The request's entities that the response array `name` answers: the same-named array, else (when the
    response level has one array) the request level's first non-empty array."""
    if source is None:
        return []
    same = getattr(source, name, None)
    if isinstance(same, list):
        return same
    if not only_one:
        return []
    fields = getattr(source, "fields", None) or {}
    for field_name in fields:
        value = getattr(source, field_name, None)
        if isinstance(value, list) and value:
            return value
    return []

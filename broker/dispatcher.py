"""`Dispatcher`: routes each decoded request to its handler module and encodes the response.

The table below is the only place that knows which module serves which API key. A handler returns a
response object, or None for "send nothing" (acks=0 Produce). A handler that fails unexpectedly is answered
with the API's error response, UNKNOWN_SERVER_ERROR on every partition or resource (Kafka's
AbstractRequest.getErrorResponse, `error_responses.py`), and the connection stays open; it is closed only where
Kafka closes it: an acks=0 Produce (there is no response to carry the error) and the SASL exchange (the
authentication state is unknown). Event-loop thread only.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import misrouted
from minikafka.broker.error_responses import error_response
from minikafka.broker.handlers import api_versions, metadata
from minikafka.broker.metrics import BrokerMetrics
from minikafka.broker.network import CloseConnection
from minikafka.broker.quotas.request_throttling import HandlerTimer, record_network_time, throttle
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.error_codes import ErrorCode
from minikafka.protocol.response_frame import ResponseFrame

log = logging.getLogger(__name__)

Handler = Callable[[BrokerContext, RequestReceived, Session], Awaitable[Any]]

#: API key -> its handler in broker/handlers: "module" (its `handle`) or "module.function"
HANDLER_NAMES: dict[ApiKey, str] = {
    ApiKey.PRODUCE: "produce",
    ApiKey.FETCH: "fetch",
    ApiKey.LIST_OFFSETS: "list_offsets",
    ApiKey.METADATA: "metadata",
    ApiKey.OFFSET_COMMIT: "offset_commit",
    ApiKey.OFFSET_FETCH: "offset_fetch",
    ApiKey.FIND_COORDINATOR: "find_coordinator",
    ApiKey.JOIN_GROUP: "join_group",
    ApiKey.HEARTBEAT: "heartbeat",
    ApiKey.LEAVE_GROUP: "leave_group",
    ApiKey.SYNC_GROUP: "sync_group",
    ApiKey.DESCRIBE_GROUPS: "describe_groups",
    ApiKey.LIST_GROUPS: "list_groups",
    ApiKey.API_VERSIONS: "api_versions",
    ApiKey.CREATE_TOPICS: "create_topics",
    ApiKey.DELETE_TOPICS: "delete_topics",
    ApiKey.DELETE_RECORDS: "delete_records",
    ApiKey.INIT_PRODUCER_ID: "init_producer_id",
    ApiKey.OFFSET_FOR_LEADER_EPOCH: "offset_for_leader_epoch",
    ApiKey.ADD_PARTITIONS_TO_TXN: "add_partitions_to_txn",
    ApiKey.ADD_OFFSETS_TO_TXN: "add_offsets_to_txn",
    ApiKey.END_TXN: "end_txn",
    ApiKey.TXN_OFFSET_COMMIT: "txn_offset_commit",
    ApiKey.DESCRIBE_TRANSACTIONS: "describe_transactions",
    ApiKey.LIST_TRANSACTIONS: "list_transactions",
    ApiKey.DESCRIBE_ACLS: "describe_acls",
    ApiKey.CREATE_ACLS: "create_acls",
    ApiKey.DELETE_ACLS: "delete_acls",
    ApiKey.DESCRIBE_CONFIGS: "describe_configs",
    ApiKey.ALTER_CONFIGS: "alter_configs",
    ApiKey.CREATE_PARTITIONS: "create_partitions",
    ApiKey.DELETE_GROUPS: "delete_groups",
    ApiKey.ELECT_LEADERS: "elect_leaders",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "incremental_alter_configs",
    ApiKey.LIST_CONFIG_RESOURCES: "list_config_resources",
    ApiKey.OFFSET_DELETE: "offset_delete",
    ApiKey.DESCRIBE_LOG_DIRS: "describe_log_dirs",
    ApiKey.DESCRIBE_CLUSTER: "describe_cluster",
    ApiKey.DESCRIBE_PRODUCERS: "describe_producers",
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: "describe_topic_partitions",
    ApiKey.SASL_HANDSHAKE: "sasl_handshake",
    ApiKey.SASL_AUTHENTICATE: "sasl_authenticate",
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: "describe_user_scram_credentials",
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: "alter_user_scram_credentials",
    ApiKey.DESCRIBE_CLIENT_QUOTAS: "describe_client_quotas",
    ApiKey.ALTER_CLIENT_QUOTAS: "alter_client_quotas",
    ApiKey.CONSUMER_GROUP_HEARTBEAT: "consumer_group_heartbeat",
    ApiKey.CONSUMER_GROUP_DESCRIBE: "consumer_group_describe",
    ApiKey.SHARE_GROUP_HEARTBEAT: "share_group_heartbeat",
    ApiKey.SHARE_GROUP_DESCRIBE: "share_group_describe",
    ApiKey.SHARE_FETCH: "share_fetch",
    ApiKey.SHARE_ACKNOWLEDGE: "share_acknowledge",
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: "share_group_offsets.handle_describe",
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: "share_group_offsets.handle_alter",
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: "share_group_offsets.handle_delete",
}


def _imported_at_first_request(api_key: ApiKey, name: str) -> Handler:
    """The handler `name` of HANDLER_NAMES, its module imported at the API's first request: the handler modules are
    off the broker's start path (tests/broker/test_startup_imports.py), and that first request takes the table's
    entry over for the handler itself, unless something else (a test's wrapper) is in the table by then."""
    module, _, function = name.partition(".")

    async def import_and_handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
        handler: Handler = getattr(importlib.import_module(f"minikafka.broker.handlers.{module}"), function or "handle")
        if HANDLERS.get(api_key) is import_and_handle:
            HANDLERS[api_key] = handler
        return await handler(ctx, event, session)

    return import_and_handle


HANDLERS: dict[ApiKey, Handler] = {
    api_key: _imported_at_first_request(api_key, name) for api_key, name in HANDLER_NAMES.items()
}
# every client's first requests
HANDLERS[ApiKey.API_VERSIONS] = api_versions.handle
HANDLERS[ApiKey.METADATA] = metadata.handle

missing = set(SUPPORTED_VERSIONS) - set(HANDLERS)
assert not missing, f"advertised APIs without a handler: {missing}"


class Dispatcher:
    """Calls handlers and records per-API metrics."""

    def __init__(self, ctx: BrokerContext, metrics: BrokerMetrics) -> None:
        self.ctx = ctx
        self.request_stats = metrics.request_stats

    async def __call__(self, event: RequestReceived, session: Session) -> ResponseFrame | None:
        started = time.perf_counter()
        ctx = self.ctx
        if misrouted(ctx.coordinators, ctx.config.node_id, event.api_key, event.api_version, event.request):
            # a group or transaction request to a broker that does not coordinate its key, as Kafka answers it
            not_coordinator = answer_with_error(event, ErrorCode.NOT_COORDINATOR, "not the coordinator")
            return ServerConnection.encode_response_frame(event, not_coordinator)
        handler = HandlerTimer(HANDLERS[event.api_key](ctx, event, session))  # request-quota time
        try:
            response = await handler
        except CloseConnection:
            raise
        except Exception as exc:
            log.exception("%s v%d handler failed", event.api_key.name, event.api_version)
            response = _error_response(event, exc)
        encoding_started = time.perf_counter_ns()
        frame = None if response is None else ServerConnection.encode_response_frame(event, response)
        quotas = self.ctx.quotas
        if quotas.quotas_enabled:  # client quotas (KIP-219): throttle_time_ms in the response, the connection muted
            record_network_time(quotas, event, session, time.perf_counter_ns() - encoding_started)
            frame = throttle(quotas, event, session, response, frame, handler.busy_ns)
        stats = self.request_stats
        stats.observe(REQUEST_NAMES[event.api_key], time.perf_counter() - started)
        if event.api_key is ApiKey.PRODUCE:
            stats.bytes_in += event.size_bytes
        elif event.api_key is ApiKey.FETCH and frame is not None:
            stats.bytes_out += len(frame)
        return frame


#: APIs whose failure closes the connection (Kafka's SaslServerAuthenticator does on an unexpected error)
CLOSE_ON_FAILURE = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def _error_response(event: RequestReceived, exc: Exception) -> Any:
    """The answer to a request whose handler raised `exc`, or CloseConnection where Kafka closes."""
    reason = f"{event.api_key.name} handler failed: {exc!r}"
    if event.api_key in CLOSE_ON_FAILURE:
        raise CloseConnection(reason) from exc
    try:
        return answer_with_error(event, ErrorCode.UNKNOWN_SERVER_ERROR, reason)
    except CloseConnection as close:
        raise close from exc


def answer_with_error(event: RequestReceived, code: ErrorCode, reason: str) -> Any:
    """`event`'s error response with `code` on every partition or resource (`error_responses.py`); CloseConnection
    with `reason` where there is no response to carry it (an acks=0 Produce, an ApiVersions of a version too new, a
    request shape the schema walk does not know)."""
    request = event.request
    if request is None or (event.api_key is ApiKey.PRODUCE and request.acks == 0):
        raise CloseConnection(reason)
    try:
        return error_response(event.api_key, event.api_version, request, code)
    except Exception as error:  # the request has a shape the schema walk does not know: close as before
        log.exception("No error response for %s v%d", event.api_key.name, event.api_version)
        raise CloseConnection(reason) from error


def _request_name(api_key: ApiKey) -> str:
    """Kafka's request names as in its metrics: PRODUCE -> Produce, LIST_OFFSETS -> ListOffsets."""
    return "".join(part.capitalize() for part in api_key.name.split("_"))


#: `_request_name` of every API key, computed once rather than per request.
REQUEST_NAMES: dict[ApiKey, str] = {api_key: _request_name(api_key) for api_key in ApiKey}

"""`Dispatcher`: routes each decoded request to its handler module and encodes the response.

The table below is the only place that knows which module serves which API key. A handler returns a
response object, or None for "send nothing" (acks=0 Produce). A handler that fails unexpectedly is answered
with the API's error response, UNKNOWN_SERVER_ERROR on every partition or resource (Kafka's
AbstractRequest.getErrorResponse, `error_responses.py`), and the connection stays open; it is closed only where
Kafka closes it: an acks=0 Produce (there is no response to carry the error) and the SASL exchange (the
authentication state is unknown). Event-loop thread only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import misrouted
from minikafka.broker.error_responses import error_response
from minikafka.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    share_group_offsets,
    sync_group,
    txn_offset_commit,
)
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

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.OFFSET_COMMIT: offset_commit.handle,
    ApiKey.OFFSET_FETCH: offset_fetch.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
    ApiKey.JOIN_GROUP: join_group.handle,
    ApiKey.HEARTBEAT: heartbeat.handle,
    ApiKey.LEAVE_GROUP: leave_group.handle,
    ApiKey.SYNC_GROUP: sync_group.handle,
    ApiKey.DESCRIBE_GROUPS: describe_groups.handle,
    ApiKey.LIST_GROUPS: list_groups.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    ApiKey.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn.handle,
    ApiKey.ADD_OFFSETS_TO_TXN: add_offsets_to_txn.handle,
    ApiKey.END_TXN: end_txn.handle,
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit.handle,
    ApiKey.DESCRIBE_TRANSACTIONS: describe_transactions.handle,
    ApiKey.LIST_TRANSACTIONS: list_transactions.handle,
    ApiKey.DESCRIBE_ACLS: describe_acls.handle,
    ApiKey.CREATE_ACLS: create_acls.handle,
    ApiKey.DELETE_ACLS: delete_acls.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.DELETE_GROUPS: delete_groups.handle,
    ApiKey.ELECT_LEADERS: elect_leaders.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    ApiKey.LIST_CONFIG_RESOURCES: list_config_resources.handle,
    ApiKey.OFFSET_DELETE: offset_delete.handle,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.DESCRIBE_PRODUCERS: describe_producers.handle,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions.handle,
    ApiKey.SASL_HANDSHAKE: sasl_handshake.handle,
    ApiKey.SASL_AUTHENTICATE: sasl_authenticate.handle,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: describe_user_scram_credentials.handle,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: alter_user_scram_credentials.handle,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: describe_client_quotas.handle,
    ApiKey.ALTER_CLIENT_QUOTAS: alter_client_quotas.handle,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat.handle,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe.handle,
    ApiKey.SHARE_GROUP_HEARTBEAT: share_group_heartbeat.handle,
    ApiKey.SHARE_GROUP_DESCRIBE: share_group_describe.handle,
    ApiKey.SHARE_FETCH: share_fetch.handle,
    ApiKey.SHARE_ACKNOWLEDGE: share_acknowledge.handle,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: share_group_offsets.handle_describe,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: share_group_offsets.handle_alter,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: share_group_offsets.handle_delete,
}

missing = set(SUPPORTED_VERSIONS) - set(HANDLERS)
assert not missing, f"advertised APIs without a handler: {missing}"


class Dispatcher:
    """Calls handlers and records per-API metrics."""

    def __init__(self, ctx: BrokerContext, metrics: BrokerMetrics) -> None:
        self.ctx = ctx
        self.metrics = metrics

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
        self.metrics.observe_request(REQUEST_NAMES[event.api_key], time.perf_counter() - started)
        if event.api_key is ApiKey.PRODUCE:
            self.metrics.bytes_in.inc(event.size_bytes)
        elif event.api_key is ApiKey.FETCH and frame is not None:
            self.metrics.bytes_out.inc(len(frame))
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

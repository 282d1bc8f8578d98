"""KIP-219 throttling of one request, between the dispatcher and the quota managers.

As Kafka's KafkaApis/RequestHandlerHelper: every request's handling time is recorded against the request quota
(`request_percentage`); a Produce request's size against `producer_byte_rate` (acks=0 Produce skips the request
quota); a consumer Fetch response's size against `consumer_byte_rate`, and a throttled Fetch is answered with an
empty response (its bytes un-recorded; the client fetches the same offsets again once the throttle is over).
The response goes out at once with `throttle_time_ms` set to the larger throttle, the throttle is recorded on
the manager that caused it, and the connection is muted (`network.throttle_connection`) for that long: nothing
more is read from it until the throttle time has passed. Event-loop thread only.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Generator
from typing import Any

from minikafka.broker.network import throttle_connection
from minikafka.broker.quotas.quota_managers import QuotaManagers
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.messages import response_class
from minikafka.protocol.response_frame import ResponseFrame

#: ClientRequestQuotaManager.NanosToPercentagePerSecond
NANOS_TO_PERCENTAGE = 100.0 / 1e9


class HandlerTimer:
    """Awaits a handler's coroutine, adding up the time the event loop spends running its steps (`busy_ns`):
    time suspended on futures (long polls, worker threads, locks) is not counted."""

    __slots__ = ("_awaitable", "busy_ns")

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self._awaitable = awaitable
        self.busy_ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._awaitable.__await__()
        send_value: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.perf_counter_ns()
            try:
                yielded = coro.send(send_value) if thrown is None else coro.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                self.busy_ns += time.perf_counter_ns() - started
            try:
                send_value, thrown = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # cancellation and other throws go to the handler
                send_value, thrown = None, exc


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def fetch_max_bytes(quotas: QuotaManagers | None, event: RequestReceived, session: Session, max_bytes: int) -> int:
    """KafkaApis: a consumer Fetch never asks for more than its quota could ever allow in one window."""
    if quotas is None:
        return max_bytes
    limit = quotas.fetch.max_value_in_quota_window(session.principal.name, event.client_id or "")
    return max_bytes if limit >= max_bytes else max(int(limit), 1)


def throttle(quotas: QuotaManagers, event: RequestReceived, session: Session, response: Any,
             frame: ResponseFrame | None, busy_ns: int) -> ResponseFrame | None:
    """Record the request against the client's quotas; returns the frame to send (re-encoded with
    `throttle_time_ms`, or an empty Fetch response, when throttled) and mutes the connection if needed."""
    user, client_id = session.principal.name, event.client_id or ""
    timestamp_ms = now_ms()
    request_ms = bandwidth_ms = 0
    bandwidth = None
    if event.api_key is ApiKey.PRODUCE:
        bandwidth = quotas.produce
        bandwidth_ms = bandwidth.record_and_get_throttle_time_ms(user, client_id, event.size_bytes, timestamp_ms)
        if event.request.acks != 0:
            request_ms = quotas.request.record_and_get_throttle_time_ms(
                user, client_id, busy_ns * NANOS_TO_PERCENTAGE, timestamp_ms)
    elif event.api_key is ApiKey.FETCH and frame is not None and not _is_from_follower(event):
        request_ms = quotas.request.record_and_get_throttle_time_ms(
            user, client_id, busy_ns * NANOS_TO_PERCENTAGE, timestamp_ms)
        bandwidth = quotas.fetch
        bandwidth_ms = bandwidth.record_and_get_throttle_time_ms(user, client_id, len(frame), timestamp_ms)
        if max(request_ms, bandwidth_ms) > 0:
            bandwidth.record_no_throttle(user, client_id, -len(frame), timestamp_ms)
            response = _throttled_fetch_response(event.api_version, response)
    elif response is not None:
        request_ms = quotas.request.record_and_get_throttle_time_ms(
            user, client_id, busy_ns * NANOS_TO_PERCENTAGE, timestamp_ms)
    throttle_ms = max(request_ms, bandwidth_ms)
    if throttle_ms <= 0:
        return frame
    if bandwidth is not None and bandwidth_ms > request_ms:
        bandwidth.record_throttle(user, client_id, bandwidth_ms, timestamp_ms)
    else:
        quotas.request.record_throttle(user, client_id, request_ms, timestamp_ms)
    throttle_connection(throttle_ms)
    if response is None:
        return None
    if hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = throttle_ms
    return ServerConnection.encode_response(event, response)


def record_network_time(quotas: QuotaManagers, event: RequestReceived, session: Session, elapsed_ns: int) -> None:
    """Kafka's recordNetworkThreadTimeCallback: time spent on the request outside its handler (encoding),
    recorded against the request quota without throttling."""
    quotas.request.record_no_throttle(session.principal.name, event.client_id or "", elapsed_ns * NANOS_TO_PERCENTAGE,
                                      now_ms())


def _is_from_follower(event: RequestReceived) -> bool:
    request = event.request
    if event.api_version >= 15:
        return request.replica_state is not None and request.replica_state.replica_id >= 0
    return bool(request.replica_id >= 0)


def _throttled_fetch_response(version: int, response: Any) -> Any:
    """FetchContext.getThrottledResponse: no partitions, the session kept."""
    cls = response_class(ApiKey.FETCH, version)
    fields: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "responses": []}
    if version >= 7:
        fields["session_id"] = getattr(response, "session_id", 0)
    return cls(**fields)

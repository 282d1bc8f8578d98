"""`FaultState`: the wire-level faults set on this process's brokers; `BrokerFaults`: one broker's hook
(`SocketServer.faults`) that applies them to the requests that broker receives.

The faults, by the names `MiniKafka.faults`, `minikafka faults` and `/admin/faults/*` share:
- `push_request_errors(api, *errors, broker, client_id)`: the next requests of `api` (through `broker`, from client
  ids containing `client_id`; None: any) are answered with those errors, one each, in order, without being served,
  as librdkafka's `rd_kafka_mock_push_request_errors`. The answer is the API's error response for the request's
  version, the code on every partition or resource (Kafka's AbstractRequest.getErrorResponse); `NONE` serves that
  request as usual. Pushed again, errors queue behind those already pushed. An error that tells a client its
  metadata is stale (`STALE_METADATA_ERRORS`: the leader moved) also answers that client's later requests of the
  API through that broker, without taking another pushed error, until the client sends a Metadata request: on a
  cluster the requests it pipelined behind the failed one would meet the same moved leader, and an idempotent
  producer whose later batch were appended while an earlier one failed would have to bump its epoch and could
  write that batch twice (Kafka accepts any first sequence from a producer it has no state for).
- `set_rtt(id, ms)`: every response of broker `id` is written `ms` after it is ready; the connection goes on reading
  meanwhile (latency, not a throughput cap) and responses keep their order. 0 removes it.
- `disconnect_on(api, count, broker, client_id)`: the next `count` such requests are served (the request takes
  effect: a commit is applied, records appended), then the connection closes instead of the response.
- `blackhole(client_id)`: requests from matching clients arriving from now on are held unanswered and never served,
  as if a network dropped them; the broker's own timers go on (a consumer's session expires). `clear_faults()`
  closes the connections they were held on, so the client's retry goes on a fresh connection.
- `clear_faults()`: all of the above end; a response already held by `set_rtt` still leaves at its time.
Runtime only: nothing is written, a restarted broker has no faults. Event-loop thread only (the admin routes and
the connections' tasks share the loop).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.broker.dispatcher import REQUEST_NAMES, answer_with_error
from minikafka.broker.faults.fault_names import FaultInputError, api_key, error_code
from minikafka.broker.network import CloseConnection, RequestDispatcher, respond_later
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.error_codes import ErrorCode
from minikafka.protocol.response_frame import ResponseFrame

log = logging.getLogger(__name__)

#: set_rtt's upper bound: a minute is more than any client's request.timeout.ms default
MAX_RTT_MS = 60_000

#: The errors the Java client answers by refreshing metadata (its InvalidMetadataException subclasses): pushed, they
#: hold for that client, API and broker until its next Metadata request.
STALE_METADATA_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INCONSISTENT_TOPIC_ID,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.LISTENER_NOT_FOUND,
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
})


@dataclass
class _RequestFilter:
    """Which requests a fault applies to: one API, through one broker or any, from client ids containing a string."""

    api: ApiKey
    broker: int | None
    client_id: str | None

    def matches(self, api: ApiKey, broker_id: int, client_id: str) -> bool:
        return (api is self.api and (self.broker is None or self.broker == broker_id)
                and (self.client_id is None or self.client_id in client_id))

    def describe(self) -> dict[str, Any]:
        return {"api": REQUEST_NAMES[self.api], "broker": self.broker, "client_id": self.client_id}


@dataclass
class _PushedErrors:
    requests: _RequestFilter
    errors: deque[ErrorCode]


@dataclass
class _Disconnects:
    requests: _RequestFilter
    remaining: int


class FaultState:
    """Owns the faults of the brokers `broker_ids` and their `BrokerFaults` hooks; validates what is set (a
    `FaultInputError` names the mistake) and keeps each hook's `active` flag true exactly while something may
    apply to it."""

    def __init__(self, broker_ids: Sequence[int]) -> None:
        self.broker_ids = tuple(broker_ids)
        self.brokers = {broker_id: BrokerFaults(self, broker_id) for broker_id in self.broker_ids}
        self._pushed: list[_PushedErrors] = []
        #: (client id, broker id, API) -> the stale-metadata error that client met there, until its next Metadata
        self._stale_metadata: dict[tuple[str, int, ApiKey], ErrorCode] = {}
        self._disconnects: list[_Disconnects] = []
        self._rtt_ms: dict[int, int] = {}
        self._blackholes: list[str] = []
        self._healed: asyncio.Event | None = None  # set by clear_faults: requests held by a blackhole are dropped
        self._held_responses = 0  # responses set_rtt holds (the hooks stay active until they are out)

    # --- setting faults -------------------------------------------------------------------------------------
    def push_request_errors(self, api: str | int, errors: Iterable[str | int], broker: str | int | None = None,
                            client_id: str | None = None) -> None:
        requests = self._filter(api, broker, client_id)
        codes = deque(error_code(error) for error in errors)
        if not codes:
            raise FaultInputError("push_request_errors needs at least one error")
        self._pushed.append(_PushedErrors(requests, codes))
        self._changed(f"push_request_errors({requests.describe()}, {[code.name for code in codes]})")

    def set_rtt(self, broker: str | int, ms: str | int) -> None:
        broker_id = self._broker_id(broker)
        rtt_ms = _integer("ms", ms, 0, MAX_RTT_MS)
        if rtt_ms:
            self._rtt_ms[broker_id] = rtt_ms
        else:
            self._rtt_ms.pop(broker_id, None)
        self._changed(f"set_rtt({broker_id}, {rtt_ms})")

    def disconnect_on(self, api: str | int, count: str | int = 1, broker: str | int | None = None,
                      client_id: str | None = None) -> None:
        requests = self._filter(api, broker, client_id)
        self._disconnects.append(_Disconnects(requests, _integer("count", count, 1, 2**31 - 1)))
        self._changed(f"disconnect_on({requests.describe()}, count={count})")

    def blackhole(self, client_id: str | None) -> None:
        if not client_id:
            raise FaultInputError("blackhole needs a client id (requests from client ids containing it get no "
                                  "response)")
        self._blackholes.append(client_id)
        self._changed(f"blackhole({client_id!r})")

    def clear_faults(self) -> None:
        self._pushed.clear()
        self._stale_metadata.clear()
        self._disconnects.clear()
        self._rtt_ms.clear()
        self._blackholes.clear()
        if self._healed is not None:
            self._healed.set()
            self._healed = None
        self._changed("clear_faults()")

    def describe(self) -> dict[str, Any]:
        """The faults in force, as the admin port reports them (JSON-ready)."""
        return {
            "brokers": list(self.broker_ids),
            "push_request_errors": [{**pushed.requests.describe(), "errors": [code.name for code in pushed.errors]}
                                    for pushed in self._pushed],
            "stale_metadata": [{"api": REQUEST_NAMES[api], "broker": broker_id, "client_id": client_id,
                                "error": code.name}
                               for (client_id, broker_id, api), code in self._stale_metadata.items()],
            "rtt_ms": {str(broker_id): rtt_ms for broker_id, rtt_ms in sorted(self._rtt_ms.items())},
            "disconnect_on": [{**disconnect.requests.describe(), "count": disconnect.remaining}
                              for disconnect in self._disconnects],
            "blackhole": list(self._blackholes),
        }

    def _filter(self, api: str | int, broker: str | int | None, client_id: str | None) -> _RequestFilter:
        return _RequestFilter(api_key(api), None if broker is None else self._broker_id(broker), client_id or None)

    def _broker_id(self, broker: str | int) -> int:
        broker_id = _integer("broker id", broker, -(2**31), 2**31 - 1)
        if broker_id not in self.broker_ids:
            raise FaultInputError(f"unknown broker {broker_id}: the brokers are "
                                  f"{', '.join(str(known) for known in self.broker_ids)}")
        return broker_id

    def _changed(self, what: str) -> None:
        log.info("fault: %s", what)
        self._refresh()

    def _refresh(self) -> None:
        everywhere = bool(self._pushed or self._stale_metadata or self._disconnects or self._blackholes
                          or self._held_responses)
        for broker_id, hook in self.brokers.items():
            hook.active = everywhere or broker_id in self._rtt_ms

    # --- applying them (BrokerFaults) -----------------------------------------------------------------------
    def _next_error(self, api: ApiKey, broker_id: int, client_id: str) -> ErrorCode | None:
        if api is ApiKey.METADATA and self._stale_metadata:
            self._metadata_refreshed(client_id)
        stale = self._stale_metadata.get((client_id, broker_id, api))
        if stale is not None:
            return stale
        for index, pushed in enumerate(self._pushed):
            if pushed.requests.matches(api, broker_id, client_id):
                code = pushed.errors.popleft()
                if not pushed.errors:
                    del self._pushed[index]
                if code in STALE_METADATA_ERRORS:
                    self._stale_metadata[(client_id, broker_id, api)] = code
                self._refresh()
                return code
        return None

    def _metadata_refreshed(self, client_id: str) -> None:
        for key in [key for key in self._stale_metadata if key[0] == client_id]:
            del self._stale_metadata[key]
        self._refresh()

    def _take_disconnect(self, api: ApiKey, broker_id: int, client_id: str) -> bool:
        for index, disconnect in enumerate(self._disconnects):
            if disconnect.requests.matches(api, broker_id, client_id):
                disconnect.remaining -= 1
                if not disconnect.remaining:
                    del self._disconnects[index]
                    self._refresh()
                return True
        return False

    def _blackholed(self, client_id: str) -> bool:
        return any(blackholed in client_id for blackholed in self._blackholes)

    async def _until_healed(self) -> None:
        if self._healed is None:
            self._healed = asyncio.Event()
        await self._healed.wait()

    def _hold(self, frame: ResponseFrame, rtt_ms: int) -> None:
        self._held_responses += 1
        self._refresh()
        respond_later(frame, rtt_ms / 1000.0, self._response_written)

    def _response_written(self) -> None:
        self._held_responses -= 1
        if not self._held_responses:
            self._refresh()


class BrokerFaults:
    """One broker's `RequestInterceptor`: `active` is kept by its `FaultState`; `intercept` applies the faults to
    one request of this broker in place of the plain dispatch. Event-loop thread only."""

    def __init__(self, state: FaultState, broker_id: int) -> None:
        self._state = state
        self.broker_id = broker_id
        self.active = False

    async def intercept(self, event: RequestReceived, session: Session,
                        dispatch: RequestDispatcher) -> ResponseFrame | None:
        state = self._state
        api, client_id = event.api_key, event.client_id or ""
        if state._blackholed(client_id):
            await state._until_healed()
            raise CloseConnection(f"blackhole cleared: the held {api.name} request from {client_id!r} is dropped")
        error = state._next_error(api, self.broker_id, client_id)
        if error:  # not None, not NONE
            reason = f"push_request_errors: {error.name} for a {api.name} request without a response"
            frame: ResponseFrame | None = ServerConnection.encode_response_frame(
                event, answer_with_error(event, error, reason))
        elif state._take_disconnect(api, self.broker_id, client_id):
            await dispatch(event, session)
            raise CloseConnection(f"disconnect_on: {api.name} served, the connection closes instead of the response")
        else:
            frame = await dispatch(event, session)
        rtt_ms = state._rtt_ms.get(self.broker_id, 0)
        if frame is None or not (rtt_ms or state._held_responses):
            return frame
        state._hold(frame, rtt_ms)  # also at 0 ms while earlier responses are held: order is kept
        return None


def _integer(what: str, value: str | int, minimum: int, maximum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise FaultInputError(f"{what} must be an integer, got {value!r}") from None
    if not minimum <= number <= maximum:
        raise FaultInputError(f"{what} must be between {minimum} and {maximum}, got {number}")
    return number

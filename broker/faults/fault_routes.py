"""`FaultRoutes`: the fault layer on the admin port, registered on `AdminHttpServer.routes` like the other `/admin/*`
routes, so the same guard and credentials apply to them.

    GET  /admin/faults                                                   the faults in force
    POST /admin/faults/push-request-errors?api=A&errors=E1,E2[&broker=ID][&client_id=S]
    POST /admin/faults/set-rtt?id=ID&ms=MS
    POST /admin/faults/disconnect-on?api=A[&count=N][&broker=ID][&client_id=S]
    POST /admin/faults/blackhole?client_id=S
    POST /admin/faults/clear-faults
    POST /admin/faults/elect-leader?topic=T&partition=P&id=ID
    POST /admin/faults/stop-broker?id=ID
    POST /admin/faults/start-broker?id=ID
    POST /admin/faults/move-coordinator?kind=group|transaction|share&key=KEY&id=ID
    POST /admin/faults/pause-follower?topic=T&partition=P&id=ID
    POST /admin/faults/resume-follower?topic=T&partition=P&id=ID

Each answers 200 with the faults in force (JSON, as `GET /admin/faults`), or 400 `{"error": "..."}` naming the
mistake (an unknown API, error or broker, a missing or malformed parameter). Event-loop thread only.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.broker.faults.cluster_faults import ClusterFaults
from minikafka.broker.faults.coordinator_faults import CoordinatorFaults
from minikafka.broker.faults.fault_names import FaultInputError
from minikafka.broker.faults.fault_state import FaultState

Reply = tuple[int, str, bytes]
Query = dict[str, list[str]]
FAULTS_PATH = "/admin/faults"


def _reply(status: int, body: dict[str, Any]) -> Reply:
    return status, "application/json", json.dumps(body).encode() + b"\n"


def _optional(query: Query, name: str) -> str | None:
    values = query.get(name)
    return values[0] if values and values[0] != "" else None


def _required(query: Query, name: str) -> str:
    value = _optional(query, name)
    if value is None:
        raise FaultInputError(f"missing parameter {name}")
    return value


class FaultRoutes:
    """Serves `/admin/faults*` from one `FaultState` and the `ClusterFaults` (elections, broker stops)."""

    def __init__(self, state: FaultState, cluster: ClusterFaults | None = None,
                 coordinators: CoordinatorFaults | None = None) -> None:
        self.state = state
        self.cluster = cluster
        self.coordinators = coordinators

    def register(self, routes: dict[tuple[str, str], Callable[[Query], Awaitable[Reply]]]) -> None:
        routes[("GET", FAULTS_PATH)] = self.describe
        for name, route in (("push-request-errors", self.push_request_errors), ("set-rtt", self.set_rtt),
                            ("disconnect-on", self.disconnect_on), ("blackhole", self.blackhole),
                            ("clear-faults", self.clear_faults)):
            routes[("POST", f"{FAULTS_PATH}/{name}")] = self._refusing_bad_input(route)
        for name, cluster_route in (("elect-leader", self.elect_leader), ("stop-broker", self.stop_broker),
                                    ("start-broker", self.start_broker), ("move-coordinator", self.move_coordinator),
                                    ("pause-follower", self.pause_follower), ("resume-follower", self.resume_follower)):
            routes[("POST", f"{FAULTS_PATH}/{name}")] = self._refusing_bad_cluster_input(cluster_route)

    async def describe(self, _query: Query) -> Reply:
        return _reply(200, self._describe())

    def _describe(self) -> dict[str, Any]:
        return {**self.state.describe(), **(self.cluster.describe() if self.cluster is not None else {})}

    def _refusing_bad_cluster_input(self, route: Callable[[Query], Awaitable[None]]
                                    ) -> Callable[[Query], Awaitable[Reply]]:
        async def serve(query: Query) -> Reply:
            try:
                await route(query)
            except FaultInputError as error:
                return _reply(400, {"error": str(error)})
            return _reply(200, self._describe())
        return serve

    def _cluster(self) -> ClusterFaults:
        if self.cluster is None:
            raise FaultInputError("this broker has no cluster faults")
        return self.cluster

    async def elect_leader(self, query: Query) -> None:
        self._cluster().elect_leader(_required(query, "topic"), _required(query, "partition"), _required(query, "id"))

    async def pause_follower(self, query: Query) -> None:
        self._cluster().pause_follower(_required(query, "topic"), _required(query, "partition"),
                                       _required(query, "id"))

    async def resume_follower(self, query: Query) -> None:
        self._cluster().resume_follower(_required(query, "topic"), _required(query, "partition"),
                                        _required(query, "id"))

    async def stop_broker(self, query: Query) -> None:
        await self._cluster().stop_broker(_required(query, "id"))

    async def start_broker(self, query: Query) -> None:
        await self._cluster().start_broker(_required(query, "id"))

    async def move_coordinator(self, query: Query) -> None:
        if self.coordinators is None:
            raise FaultInputError("this broker has no coordinator faults")
        self.coordinators.move_coordinator(_required(query, "kind"), _required(query, "key"), _required(query, "id"))

    def _refusing_bad_input(self, route: Callable[[Query], None]) -> Callable[[Query], Awaitable[Reply]]:
        async def serve(query: Query) -> Reply:
            try:
                route(query)
            except FaultInputError as error:
                return _reply(400, {"error": str(error)})
            return _reply(200, self._describe())
        return serve

    def push_request_errors(self, query: Query) -> None:
        errors = [error for values in query.get("errors", []) for error in values.split(",") if error.strip()]
        if not errors:
            raise FaultInputError("missing parameter errors (comma-separated error names or codes)")
        self.state.push_request_errors(_required(query, "api"), errors, _optional(query, "broker"),
                                       _optional(query, "client_id"))

    def set_rtt(self, query: Query) -> None:
        self.state.set_rtt(_required(query, "id"), _required(query, "ms"))

    def disconnect_on(self, query: Query) -> None:
        self.state.disconnect_on(_required(query, "api"), _optional(query, "count") or 1, _optional(query, "broker"),
                                 _optional(query, "client_id"))

    def blackhole(self, query: Query) -> None:
        self.state.blackhole(_required(query, "client_id"))

    def clear_faults(self, _query: Query) -> None:
        self.state.clear_faults()

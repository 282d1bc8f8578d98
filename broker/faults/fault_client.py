"""`Faults`: the client of a running broker's `/admin/faults/*` endpoints (broker/faults/fault_routes.py), behind
`MiniKafka.faults` and `minikafka faults`. Each call sets the fault at once and returns the faults now in force
(`describe()`'s JSON); a fault the broker refuses raises `FaultError` with its one-line reason. Stdlib only, so a
test process imports nothing of the broker's. Holds only the address; any thread.

    kafka.faults.push_request_errors("Produce", "NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER")
    kafka.faults.set_rtt(1, 200)
    kafka.faults.disconnect_on("OffsetCommit")
    kafka.faults.blackhole("consumer-2")
    kafka.faults.clear_faults()
    kafka.faults.elect_leader("orders", 0, 2)     # with MiniKafka(brokers=3)
    kafka.faults.stop_broker(2); kafka.faults.start_broker(2)
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from minikafka.broker.admin_client import AdminCredentials, admin_json_request, with_credentials

FAULTS_PATH = "/admin/faults"


class FaultError(ValueError):
    """The broker refused a fault (HTTP 400): an unknown API, error or broker id, a bad number."""


class AdminPortError(RuntimeError):
    """The admin port answered something else than the fault's result: 401/403 (credentials), 404 (a broker
    without the fault layer), 500."""


class Faults:
    """Sets and clears the wire-level faults of the broker whose admin port is `admin_url`."""

    def __init__(self, admin_url: str, credentials: AdminCredentials | None = None, timeout_s: float = 10.0) -> None:
        self.admin_url = admin_url.rstrip("/")
        self.credentials = credentials
        self.timeout_s = timeout_s

    def push_request_errors(self, api: str | int, *errors: str | int, broker: int | None = None,
                            client_id: str | None = None) -> dict[str, Any]:
        """The next requests of `api` (through `broker`, from client ids containing `client_id`) are answered with
        `errors`, one each, in order; API and errors by Kafka's names or numbers."""
        return self._post("push-request-errors", api=api, errors=",".join(str(error) for error in errors),
                          broker=broker, client_id=client_id)

    def set_rtt(self, id: int, ms: int) -> dict[str, Any]:
        """Every response of broker `id` is held back `ms` milliseconds (0: no longer)."""
        return self._post("set-rtt", id=id, ms=ms)

    def disconnect_on(self, api: str | int, count: int = 1, broker: int | None = None,
                      client_id: str | None = None) -> dict[str, Any]:
        """The next `count` requests of `api` take effect, then their connection closes instead of the response."""
        return self._post("disconnect-on", api=api, count=count, broker=broker, client_id=client_id)

    def blackhole(self, client_id: str) -> dict[str, Any]:
        """Requests from client ids containing `client_id` get no response (and are not served) until cleared."""
        return self._post("blackhole", client_id=client_id)

    def clear_faults(self) -> dict[str, Any]:
        """End every fault."""
        return self._post("clear-faults")

    def elect_leader(self, topic: str, partition: int, id: int) -> dict[str, Any]:
        """Running in-sync replica `id` becomes the leader of `topic`-`partition` (leader epoch + 1)."""
        return self._post("elect-leader", topic=topic, partition=partition, id=id)

    def pause_follower(self, topic: str, partition: int, id: int) -> dict[str, Any]:
        """Follower replica `id` of `topic`-`partition` stops following: the records appended from now on are not
        on it, the high watermark waits for it (acks=all waits) until it leaves the ISR after
        replica.lag.time.max.ms."""
        return self._post("pause-follower", topic=topic, partition=partition, id=id)

    def resume_follower(self, topic: str, partition: int, id: int) -> dict[str, Any]:
        """Paused follower `id` catches up and rejoins the ISR."""
        return self._post("resume-follower", topic=topic, partition=partition, id=id)

    def stop_broker(self, id: int) -> dict[str, Any]:
        """Broker `id` closes its listeners and connections; the partitions it led elect new leaders."""
        return self._post("stop-broker", id=id)

    def start_broker(self, id: int) -> dict[str, Any]:
        """Broker `id` listens again on its ports and rejoins the ISR of its partitions."""
        return self._post("start-broker", id=id)

    def move_coordinator(self, kind: str, key: str, id: int) -> dict[str, Any]:
        """Broker `id` becomes the coordinator of `key` ("group": a group id, "transaction": a transactional id,
        "share": "groupId:topicId:partition"): it is elected leader of the key's internal partition."""
        return self._post("move-coordinator", kind=kind, key=key, id=id)

    def describe(self) -> dict[str, Any]:
        """The faults in force."""
        return self._request("GET", FAULTS_PATH, {})

    def _post(self, name: str, **params: Any) -> dict[str, Any]:
        return self._request("POST", f"{FAULTS_PATH}/{name}", params)

    def _request(self, method: str, path: str, params: dict[str, Any]) -> dict[str, Any]:
        query = urllib.parse.urlencode({name: value for name, value in params.items() if value is not None})
        url = f"{self.admin_url}{path}" + (f"?{query}" if query else "")
        status, reply = admin_json_request(url, with_credentials({}, self.credentials), self.timeout_s, method)
        if status == 400:
            raise FaultError(reply.get("error", str(reply)))
        if status != 200:
            raise AdminPortError(f"HTTP {status} from {url}: {reply.get('error', reply)}")
        return reply

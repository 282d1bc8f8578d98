"""`Console`: the console's routes on the admin HTTP server — `/` (topics, consumer groups and share groups; the
wire-level faults in force and the stopped brokers above them while any is set),
`/topic?name=T` (partitions, cleaner state, segment drawings; `/topic/live?name=T` is the part its script refreshes
every second), `/key?topic=T&key=K|key_hex=H[&partition=N][&show=OFFSET]` (where a key's records are on disk; a value
only for `show`), `/cluster[?internal=1]` (the brokers, running or stopped, each partition's leader, leader epoch,
replicas, ISR and ELR, and who coordinates each group and transactional id; `/cluster/live` is the part its script
refreshes every second, so a stopped broker or a moved leader shows without a reload), and `/static/<file>` (the
stylesheet and the script, package data). Server-rendered HTML, no build step. Read-only: the faults that stop
brokers and move leaders stay on `/admin/faults/*`.

The console has no authentication of its own: AdminHttpServer guards every path but `/metrics` with the `/admin/*`
rules (Basic credentials and a DESCRIBE-on-cluster ACL once security is configured; loopback only without it). Past
that, each page asks the request's `AdminAccess` (broker/admin_auth.py) per resource, as Kafka's requests do: the
front page lists the topics the principal may DESCRIBE and the consumer and share groups it may DESCRIBE (their
members and hosts with them; a group's partition rows only for topics it may DESCRIBE); a topic page needs DESCRIBE
on the topic; a key lookup (records and values) READ on the topic; the cluster page lists the partitions of the
topics it may DESCRIBE and the group and transactional ids it may DESCRIBE (the brokers for anyone past the gate, as
Metadata lists them). A refused page is 403, whether the topic exists or not.
Event-loop thread only; page data is read in the admin port's threads (`admin_thread`) except group lag (the
coordinator is loop-owned) and the cluster page's `ClusterReadModel` (built on the loop from loop-owned state; its
HTML is rendered in an admin thread: the model is immutable).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from importlib.resources import files
from typing import Any, TypeVar

from minikafka.broker.admin_auth import AdminAccess, request_access
from minikafka.broker.admin_http import AdminHttpServer
from minikafka.broker.admin_workers import admin_thread
from minikafka.broker.cluster_read_model import ClusterReadModel
from minikafka.broker.console import pages
from minikafka.broker.console.state import (
    INTERNAL_PREFIX,
    ConsoleState,
    GroupLag,
    ShareGroupView,
    group_lags,
    share_group_views,
)
from minikafka.broker.faults.fault_state import FaultState
from minikafka.broker.groups.group_coordinator import GroupCoordinator
from minikafka.broker.key_records import parse_key
from minikafka.broker.security.acls import AclOperation, ResourceType
from minikafka.broker.share.share_coordinator import ShareCoordinator
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.storage.clock import Clock
from minikafka.storage.log_manager import LogManager

Reply = tuple[int, str, bytes]
HTML = "text/html; charset=utf-8"
STATIC_TYPES = {"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


class Console:
    """Registers and serves the console pages; `group_coordinator` and `share_coordinator` are read when a page
    asks, and `cluster` (`ClusterReader.read_model`) builds the cluster page's read model (None: no cluster page)."""

    def __init__(self, log_manager: LogManager, log_cleaner: LogCleaner, clock: Clock,
                 group_coordinator: GroupCoordinator | None = None,
                 share_coordinator: ShareCoordinator | None = None, faults: FaultState | None = None,
                 cluster: Callable[[], ClusterReadModel] | None = None) -> None:
        self.state = ConsoleState(log_manager, log_cleaner)
        self.log_manager = log_manager
        self.clock = clock
        self.group_coordinator = group_coordinator
        self.share_coordinator = share_coordinator
        self.faults = faults
        self.cluster = cluster
        self._static = {name: files("minikafka.broker.console").joinpath("static", name).read_bytes()
                        for name in STATIC_TYPES}

    def register(self, server: AdminHttpServer) -> None:
        server.routes[("GET", "/")] = self.front
        server.routes[("GET", "/topic")] = self.topic
        server.routes[("GET", "/topic/live")] = self.topic_live
        server.routes[("GET", "/key")] = self.key
        if self.cluster is not None:
            server.routes[("GET", "/cluster")] = self.cluster_page
            server.routes[("GET", "/cluster/live")] = self.cluster_live
        for name in STATIC_TYPES:
            server.routes[("GET", f"/static/{name}")] = functools.partial(self.static, name)

    async def static(self, name: str, _query: dict[str, list[str]]) -> Reply:
        return 200, STATIC_TYPES[name], self._static[name]

    async def front(self, _query: dict[str, list[str]]) -> Reply:
        access = request_access()
        now_ms = self.clock.time_ms()
        topics = await admin_thread(self.state.topic_views, now_ms)
        groups = group_lags(self.group_coordinator, self.log_manager)
        share_groups = share_group_views(self.share_coordinator)
        faults = self.faults.describe() if self.faults is not None else None
        stopped = [b.node_id for b in self.cluster().brokers if not b.running] if self.cluster is not None else []
        described = access.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, {
            *(t.name for t in topics), *(row[0] for g in groups for row in g.partitions),
            *(row[0] for g in share_groups for row in g.partitions)})
        return 200, HTML, pages.front_page([t for t in topics if t.name in described],
                                           _visible_groups(access, groups, described),
                                           _visible_groups(access, share_groups, described), now_ms, faults,
                                           stopped)

    async def topic(self, query: dict[str, list[str]]) -> Reply:
        return await self._topic(query, pages.topic_page)

    async def topic_live(self, query: dict[str, list[str]]) -> Reply:
        return await self._topic(query, pages.topic_live)

    async def _topic(self, query: dict[str, list[str]], render: pages.TopicRenderer) -> Reply:
        name = _first(query, "name") or ""
        if not request_access().allows(AclOperation.DESCRIBE, ResourceType.TOPIC, [name])[0]:
            return _refused(AclOperation.DESCRIBE, name)
        now_ms = self.clock.time_ms()
        view = await admin_thread(self.state.topic_detail, name, now_ms)
        if view is None:
            return 404, HTML, pages.message_page("No such topic", f"Topic {name} does not exist.")
        return 200, HTML, render(view, now_ms)

    async def key(self, query: dict[str, list[str]]) -> Reply:
        topic = _first(query, "topic") or ""
        if not request_access().allows(AclOperation.READ, ResourceType.TOPIC, [topic])[0]:
            return _refused(AclOperation.READ, topic)
        key_text, hex_text = _first(query, "key"), _first(query, "key_hex")
        if _first(query, "hex") and key_text is not None:  # the form's hex checkbox
            key_text, hex_text = None, key_text
        try:
            key = parse_key(key_text, hex_text)
            partition = int(p) if (p := _first(query, "partition")) else None
            show = int(s) if (s := _first(query, "show")) else None
        except ValueError as error:
            return 400, HTML, pages.message_page("Bad key lookup", str(error))
        lookup = await admin_thread(self.state.key_lookup, topic, key, partition, self.clock.time_ms(), show)
        if lookup is None:
            return 404, HTML, pages.message_page("No such partition",
                                                 f"Topic {topic} (partition {partition}) does not exist.")
        shown = hex_text if hex_text is not None else key_text
        return 200, HTML, pages.key_page(lookup, shown or "", hex_text is not None)

    async def cluster_page(self, query: dict[str, list[str]]) -> Reply:
        internal = bool(_first(query, "internal"))
        model = self._cluster_model(internal)
        return 200, HTML, await admin_thread(pages.cluster_page, model, self.clock.time_ms(), internal)

    async def cluster_live(self, query: dict[str, list[str]]) -> Reply:
        model = self._cluster_model(bool(_first(query, "internal")))
        return 200, HTML, await admin_thread(pages.cluster_live, model, self.clock.time_ms())

    def _cluster_model(self, internal: bool) -> ClusterReadModel:
        """The read model (built here, on the loop) with the partitions of the topics the request may DESCRIBE (the
        internal ones only when asked) and the group and transactional ids it may DESCRIBE."""
        assert self.cluster is not None
        model = self.cluster()
        access = request_access()
        partitions = [p for p in model.partitions if internal or not p.topic.startswith(INTERNAL_PREFIX)]
        topics = access.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, {p.topic for p in partitions})
        shown = {kind: access.allowed(AclOperation.DESCRIBE, resource,
                                      {c.key for c in model.coordinators if c.kind == kind})
                 for kind, resource in (("group", ResourceType.GROUP),
                                        ("transaction", ResourceType.TRANSACTIONAL_ID))}
        return dataclasses.replace(
            model, partitions=tuple(p for p in partitions if p.topic in topics),
            coordinators=tuple(c for c in model.coordinators if c.key in shown.get(c.kind, set())))


def _refused(operation: AclOperation, topic: str) -> Reply:
    return 403, HTML, pages.message_page("Not allowed", f"This page needs {operation.name} on topic {topic}.")


GroupRow = TypeVar("GroupRow", GroupLag, ShareGroupView)


def _visible_groups(access: AdminAccess, groups: list[GroupRow], topics: set[str]) -> list[GroupRow]:
    """The groups (consumer or share) `access` may DESCRIBE, members and hosts included, each with the partitions of
    the `topics` it may DESCRIBE (as OffsetFetch leaves the others out) and its sums over those."""
    shown = access.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, (g.group_id for g in groups))
    return [_with_partitions(g, [row for row in g.partitions if row[0] in topics])
            for g in groups if g.group_id in shown]


def _with_partitions(group: GroupRow, rows: list[Any]) -> GroupRow:
    if isinstance(group, GroupLag):
        return dataclasses.replace(group, partitions=rows, lag=sum(row[3] for row in rows))
    return dataclasses.replace(group, partitions=rows, in_flight=sum(row[3] for row in rows),
                               archived=sum(row[4] for row in rows))

"""The console's cluster page (`/cluster`, the fragment `/cluster/live` its script refreshes; broker/console/routes.py
and broker/cluster_reader.py) over real HTTP, against brokers run by `MiniKafka(brokers=3)` and changed through the
fault API: it lists the brokers with their advertised listeners, running or stopped, and per partition what a Kafka
client's DescribeTopics answers (leader, replicas, ISR) with the leader epoch and KIP-966's ELR, and which broker
coordinates a group (what DescribeConsumerGroups answers) and a transactional id. After stop_broker, start_broker and
move_coordinator the next fragment shows the change. One broker: leader 1, ISR 1. The browser test of the same page
is in tests/integration/test_console_browser.py.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka

pytestmark = pytest.mark.timeout(180)


@dataclass
class Row:
    attributes: dict[str, str]
    css: str  # the row's class: warn (under-replicated), bad (no leader)
    cells: dict[str, str] = field(default_factory=dict)  # by the cell's class (its last but for num/small/ok/bad)
    texts: list[str] = field(default_factory=list)


class Rows(HTMLParser):
    """The `<tr>`s with data-* attributes of a page, with their cells' text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self._row: Row | None = None
        self._cell: str | None = None
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {name.removeprefix("data-"): value or "" for name, value in attrs if name.startswith("data-")}
        if tag == "tr" and data:
            self._row = Row(data, dict(attrs).get("class") or "")
        elif tag == "td" and self._row is not None:
            classes = [c for c in (dict(attrs).get("class") or "").split() if c not in ("num", "small", "ok", "bad")]
            self._cell, self._text = (classes[0] if classes else ""), []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            text = "".join(self._text)
            self._row.texts.append(text)
            if self._cell:
                self._row.cells[self._cell] = text
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None


@dataclass
class ClusterPage:
    brokers: dict[int, Row]
    partitions: dict[tuple[str, int], Row]
    coordinators: dict[tuple[str, str], Row]


def cluster_page(kafka: MiniKafka, path: str = "/cluster/live") -> ClusterPage:
    with urllib.request.urlopen(kafka.admin_url + path, timeout=10) as response:
        assert response.status == 200
        rows = Rows(response.read().decode()).rows
    return ClusterPage({int(r.attributes["broker"]): r for r in rows if "broker" in r.attributes},
                       {(r.attributes["topic"], int(r.attributes["partition"])): r for r in rows
                        if "partition" in r.attributes},
                       {(r.attributes["kind"], r.attributes["key"]): r for r in rows if "kind" in r.attributes})


def ids(text: str) -> list[int]:
    return [] if text == "\u2013" else [int(part) for part in text.split(", ")]


def described(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, ISR) as a Kafka client's DescribeTopics sees them."""
    description = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    return {p.id: (p.leader.id if p.leader is not None else -1, [n.id for n in p.replicas], [n.id for n in p.isr])
            for p in description.partitions}


def running_admin(kafka: MiniKafka, stopped: int) -> AdminClient:
    """A new client bootstrapped from the running brokers only (one that knew the stopped broker may keep sending it
    its DescribeTopics until the request times out)."""
    addresses = kafka.bootstrap_servers.split(",")
    return AdminClient({"bootstrap.servers": ",".join(address for index, address in enumerate(addresses, 1)
                                                      if index != stopped)})


def group_coordinator(admin: AdminClient, group: str) -> int:
    coordinator: Any = admin.describe_consumer_groups([group])[group].result(30).coordinator
    return int(coordinator.id)


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniKafka]:
    with MiniKafka(data_dir=tmp_path_factory.mktemp("cluster") / "data", brokers=3) as kafka:
        yield kafka


def test_the_cluster_page_follows_a_stopped_broker_and_a_moved_coordinator(three: MiniKafka) -> None:
    topic, group, transactional_id = (f"{name}-{uuid.uuid4().hex[:6]}" for name in ("orders", "billing", "payer"))
    admin = AdminClient({"bootstrap.servers": three.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": three.bootstrap_servers, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()
    producer = Producer({"bootstrap.servers": three.bootstrap_servers, "transactional.id": transactional_id})
    producer.init_transactions(30)

    page = cluster_page(three)
    addresses = three.bootstrap_servers.split(",")
    assert sorted(page.brokers) == [1, 2, 3]
    for broker_id, row in page.brokers.items():
        assert row.attributes["running"] == "true" and row.cells["state"] == "running"
        assert row.texts[1] == f"PLAINTEXT://{addresses[broker_id - 1]}"
    assert [row.texts[3] for row in page.brokers.values()] == ["controller", "", ""]
    client_view = described(admin, topic)
    assert len(client_view) == 3
    for index, (leader, replicas, isr) in client_view.items():
        row = page.partitions[(topic, index)]
        assert (int(row.cells["leader"]), ids(row.cells["replicas"]), sorted(ids(row.cells["isr"]))) == \
            (leader, replicas, sorted(isr))
        assert row.cells["epoch"] == "0" and row.cells["elr"] == row.cells["offline"] == "\u2013" and row.css == ""
    assert not any(name.startswith("__") for name, _ in page.partitions)  # internal topics only when asked
    internal = cluster_page(three, "/cluster/live?internal=1").partitions
    assert ("__consumer_offsets", 0) in internal and ("__transaction_state", 0) in internal

    coordinator = page.coordinators[("group", group)]
    assert int(coordinator.cells["coordinator"]) == group_coordinator(admin, group)
    assert coordinator.texts[2].startswith("__consumer_offsets-")
    assert page.coordinators[("transaction", transactional_id)].texts[2].startswith("__transaction_state-")

    moved_to = next(b for b in (1, 2, 3) if b != group_coordinator(admin, group))
    three.faults.move_coordinator("group", group, moved_to)
    assert int(cluster_page(three).coordinators[("group", group)].cells["coordinator"]) == moved_to
    # a new client (the old one keeps its cached coordinator until NOT_COORDINATOR makes it look again)
    assert group_coordinator(AdminClient({"bootstrap.servers": three.bootstrap_servers}), group) == moved_to

    stopped = client_view[0][0]  # partition 0's leader
    three.faults.stop_broker(stopped)
    try:
        page = cluster_page(three)
        assert page.brokers[stopped].attributes["running"] == "false" and page.brokers[stopped].cells["state"] == \
            "stopped"
        assert sum(row.attributes["running"] == "true" for row in page.brokers.values()) == 2
        assert page.brokers[stopped].cells["leads"] == "0"
        client_view_after = described(running_admin(three, stopped), topic)
        for index, (leader, replicas, isr) in client_view_after.items():
            row = page.partitions[(topic, index)]
            assert int(row.cells["leader"]) == leader != stopped
            assert sorted(ids(row.cells["isr"])) == sorted(isr) == sorted(set(replicas) - {stopped})
            assert ids(row.cells["offline"]) == [stopped]
            assert row.css == "warn"  # under-replicated
        with urllib.request.urlopen(three.admin_url + "/", timeout=10) as response:
            front = response.read().decode()
        assert f"<p class=bad id=stopped-brokers>broker(s) {stopped} stopped" in front
        moved = page.partitions[(topic, 0)]
        assert moved.cells["epoch"] == "1" and int(moved.cells["leader"]) != stopped
    finally:
        three.faults.start_broker(stopped)
    page = cluster_page(three)
    assert page.brokers[stopped].cells["state"] == "running"
    with urllib.request.urlopen(three.admin_url + "/", timeout=10) as response:
        assert b"stopped-brokers" not in response.read()
    assert all(sorted(ids(page.partitions[(topic, i)].cells["isr"])) == [1, 2, 3] for i in range(3))
    producer.flush(1)


def test_the_cluster_page_shows_the_elr_and_a_leaderless_partition(three: MiniKafka) -> None:
    """min.insync.replicas=3 on 3 replicas: a stopped broker leaves an ISR of 2 and is an eligible leader replica
    (KIP-966); a partition whose only replica stops has no leader, an empty ISR and that replica in its ELR."""
    strict, single = (f"{name}-{uuid.uuid4().hex[:6]}" for name in ("strict", "single"))
    admin = AdminClient({"bootstrap.servers": three.bootstrap_servers})
    futures = admin.create_topics([NewTopic(strict, 1, 3, config={"min.insync.replicas": "3"}),
                                   NewTopic(single, 1, replica_assignment=[[2]])])
    for future in futures.values():
        future.result(30)
    three.faults.stop_broker(2)
    try:
        page = cluster_page(three)
        row = page.partitions[(strict, 0)]
        assert ids(row.cells["elr"]) == [2] and 2 not in ids(row.cells["isr"]) and len(ids(row.cells["isr"])) == 2
        row = page.partitions[(single, 0)]
        assert (row.cells["leader"], row.cells["isr"], ids(row.cells["elr"]), ids(row.cells["offline"]), row.css) == \
            ("none", "\u2013", [2], [2], "bad")
        assert described(running_admin(three, 2), single)[0][0] == -1  # the client sees no leader either
    finally:
        three.faults.start_broker(2)
    page = cluster_page(three)
    assert page.partitions[(strict, 0)].cells["elr"] == "\u2013"
    assert page.partitions[(single, 0)].cells["leader"] == "2"


def test_with_one_broker_the_cluster_page_shows_broker_1_leading_everything(tmp_path: Any) -> None:
    with MiniKafka(data_dir=tmp_path / "data") as kafka:
        topic = f"solo-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        page = cluster_page(kafka)
        assert list(page.brokers) == [1] and page.brokers[1].cells["state"] == "running"
        assert page.brokers[1].texts[3] == "controller" and page.brokers[1].cells["leads"] == "2"
        for index in range(2):
            row = page.partitions[(topic, index)]
            assert [row.cells[name] for name in ("leader", "epoch", "replicas", "isr", "elr")] == \
                ["1", "0", "1", "1", "\u2013"]
        with urllib.request.urlopen(kafka.admin_url + "/cluster", timeout=10) as response:
            html = response.read().decode()
        assert 'data-src="/cluster/live"' in html and "/static/console.js" in html

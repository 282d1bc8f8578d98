"""`ClusterReader.read_model()` (broker/cluster_reader.py) over a real `Cluster` and `PartitionStates` (its file in a
temporary log dir) changed by the elections a stopped and a started broker cause, and the cluster page's fragment
rendered from it (broker/console/pages.py): leaders, epochs, ISR, ELR and last known ELR, offline replicas, the
brokers' counts, the coordinators; a group id is escaped; the model is built only on the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from minikafka.broker.cluster import Cluster
from minikafka.broker.cluster_read_model import NO_LEADER, ClusterReadModel
from minikafka.broker.cluster_reader import ClusterReader
from minikafka.broker.config import KafkaConfig
from minikafka.broker.console import pages
from minikafka.broker.coordinator_routing import CoordinatorRouting
from minikafka.broker.loop_owner import LoopOwnershipError
from minikafka.broker.partition_states import PartitionStates


def three_brokers(log_dir: Path) -> tuple[Cluster, PartitionStates, ClusterReader]:
    config = KafkaConfig({"log.dirs": str(log_dir), "minikafka.brokers": "3",
                          "listeners": "PLAINTEXT://127.0.0.1:19092"})
    cluster = Cluster([config.for_broker(broker_id) for broker_id in config.broker_ids])
    counts = {"orders": 2, "strict": 1, "single": 1, "__consumer_offsets": 5}
    states = PartitionStates(cluster, log_dir, lambda topic, partition: 0, counts.get)
    states.min_insync_replicas = lambda topic: 3 if topic == "strict" else 1
    states.add_partitions("orders", 0, 2, 3)
    states.add_partitions("strict", 0, 1, 3)
    states.add_partitions("__consumer_offsets", 0, 5, 3)
    reader = ClusterReader(cluster, states, CoordinatorRouting(cluster, states, counts.get),
                           lambda: ["billing", "<b>odd</b>"], lambda: ["payer"])
    return cluster, states, reader


def read(reader: ClusterReader) -> ClusterReadModel:
    async def on_loop() -> ClusterReadModel:
        return reader.read_model()
    return asyncio.run(on_loop())


def test_the_read_model_follows_a_stopped_and_a_started_broker(tmp_path: Path) -> None:
    cluster, states, reader = three_brokers(tmp_path)
    model = read(reader)
    assert [(b.node_id, b.running, b.controller, b.listeners) for b in model.brokers] == [
        (1, True, True, ("PLAINTEXT://127.0.0.1:19092",)), (2, True, False, ("PLAINTEXT://127.0.0.1:19093",)),
        (3, True, False, ("PLAINTEXT://127.0.0.1:19094",))]
    orders = {p.partition: p for p in model.partitions if p.topic == "orders"}
    assert [(p.leader, p.leader_epoch, sorted(p.isr), p.elr, p.offline) for p in orders.values()] == \
        [(p.replicas[0], 0, [1, 2, 3], (), ()) for p in orders.values()]
    assert sum(b.leader_of for b in model.brokers) == 8 and all(b.replica_of == 8 for b in model.brokers)
    coordinators = {(c.kind, c.key): c for c in model.coordinators}
    assert set(coordinators) == {("group", "billing"), ("group", "<b>odd</b>"), ("transaction", "payer")}
    billing = coordinators[("group", "billing")]
    assert billing.partition is not None and billing.topic == "__consumer_offsets"
    assert billing.coordinator == states.get("__consumer_offsets", billing.partition).leader
    payer = coordinators[("transaction", "payer")]  # no __transaction_state yet: the first broker coordinates
    assert (payer.partition, payer.coordinator) == (None, 1)

    stopped = orders[0].leader
    cluster.nodes[stopped].running = False
    states.broker_stopped(stopped)
    model = read(reader)
    moved = next(p for p in model.partitions if (p.topic, p.partition) == ("orders", 0))
    assert moved.leader not in (stopped, NO_LEADER) and moved.leader_epoch == 1 and stopped not in moved.isr
    assert moved.offline == (stopped,) and moved.under_replicated and moved.elr == ()
    strict = next(p for p in model.partitions if p.topic == "strict")
    assert strict.elr == (stopped,)  # KIP-966: left an ISR below min.insync.replicas
    assert [b.running for b in model.brokers if b.node_id == stopped] == [False]
    assert [b.leader_of for b in model.brokers if b.node_id == stopped] == [0]

    html = pages.cluster_live(model, 0).decode()
    assert "&lt;b&gt;odd&lt;/b&gt;" in html and "<b>odd</b>" not in html
    assert f'data-broker="{stopped}" data-running="false"' in html
    assert '<tr data-topic="orders" data-partition="0" class=warn>' in html

    cluster.nodes[stopped].running = True
    states.broker_started(stopped)
    model = read(reader)
    assert all(sorted(p.isr) == [1, 2, 3] and not p.offline and not p.elr for p in model.partitions)


def test_a_partition_whose_last_replica_stops_has_no_leader_and_a_last_known_elr(tmp_path: Path) -> None:
    cluster, states, reader = three_brokers(tmp_path)
    states.add_partitions("single", 0, 1, 1, [[2]])
    cluster.nodes[2].running = False
    states.broker_stopped(2)
    single = next(p for p in read(reader).partitions if p.topic == "single")
    assert (single.leader, single.isr, single.elr, single.last_known_elr, single.offline) == \
        (NO_LEADER, (), (2,), (2,), (2,))
    html = pages.cluster_live(read(reader), 0).decode()
    assert ('<tr data-topic="single" data-partition="0" class=bad><td>single</td><td class=num>0</td>'
            "<td class='num leader'>none</td>") in html


def test_the_read_model_is_built_on_the_loop_only(tmp_path: Path) -> None:
    _, _, reader = three_brokers(tmp_path)
    with pytest.raises(LoopOwnershipError, match="ClusterReader is event-loop-thread only"):
        reader.read_model()

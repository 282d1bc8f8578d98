"""Metadata over a real socket: all-topics conventions per version, auto-creation rules, this node as the
controller and every partition's leader."""

from __future__ import annotations

from collections.abc import Callable

from kafka.protocol.metadata.metadata import MetadataRequest

from tests.broker.test_fetch_wire import create_topic
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def metadata(client: WireClient, version: int, topics: list[str] | None, auto_create: bool = True) -> object:
    request_topics = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in topics]
    kwargs = {"topics": request_topics}
    if version >= 4:
        kwargs["allow_auto_topic_creation"] = auto_create
    if version >= 8:
        kwargs["include_topic_authorized_operations"] = False
    if 8 <= version <= 10:
        kwargs["include_cluster_authorized_operations"] = False
    return client.request(MetadataRequest[version](**kwargs))


def test_all_topics_conventions_by_version(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "a", partitions=2)
        create_topic(client, "b")
        assert {t.name for t in metadata(client, 0, []).topics} == {"a", "b"}
        assert {t.name for t in metadata(client, 1, None).topics} == {"a", "b"}
        assert metadata(client, 1, []).topics == []
        response = metadata(client, 12, ["a"])
        assert response.controller_id == 1 and [b.node_id for b in response.brokers] == [1]
        assert response.brokers[0].port == broker.port
        topic = response.topics[0]
        assert topic.error_code == 0 and topic.topic_id.int != 0
        assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes) for p in topic.partitions] == [
            (0, 1, 0, [1]), (1, 1, 0, [1])]


def test_auto_create_follows_request_flag_and_broker_config(broker_factory: Callable[..., BrokerProcess]) -> None:
    on = broker_factory({"num.partitions": "3"}, name="on")
    with WireClient(on.bootstrap) as client:
        refused = metadata(client, 12, ["nope"], auto_create=False).topics[0]
        assert refused.error_code == 3
        created = metadata(client, 12, ["yes"], auto_create=True).topics[0]
        assert created.error_code == 0 and len(created.partitions) == 3
        invalid = metadata(client, 12, ["bad/name"], auto_create=True).topics[0]
        assert invalid.error_code == 17
    off = broker_factory({"auto.create.topics.enable": "false"}, name="off")
    with WireClient(off.bootstrap) as client:
        assert metadata(client, 12, ["yes"], auto_create=True).topics[0].error_code == 3

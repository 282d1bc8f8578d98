"""Issue 3 admin: confluent-kafka AdminClient list/describe groups, list/alter/delete group offsets, delete
groups (NON_EMPTY_GROUP while members remain) and delete records, plus kafka-python's raw error codes for
unknown member / illegal generation / commit to an unknown topic."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic

OVERRIDES = {
    "group.min.session.timeout.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
}


def joined_consumer(bootstrap: str, topic: str, group: str) -> object:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 2000})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    assert consumer.assignment()
    return consumer


@pytest.mark.timeout(120)
def test_admin_client_group_operations(broker_factory: Callable[..., BrokerProcess]) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    broker = broker_factory(OVERRIDES)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create_topic(broker.bootstrap, "events", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for index in range(20):
        producer.produce("events", value=b"v", partition=index % 2)
    assert producer.flush(30) == 0

    consumer = joined_consumer(broker.bootstrap, "events", "admin-group")
    consumer.commit(offsets=[TopicPartition("events", 0, 4), TopicPartition("events", 1, 6)],  # type: ignore[attr-defined]
                    asynchronous=False)

    listed = admin.list_consumer_groups().result(timeout=30)
    assert "admin-group" in {group.group_id for group in listed.valid}
    described = admin.describe_consumer_groups(["admin-group"])["admin-group"].result(timeout=30)
    assert str(described.state).endswith("STABLE") and len(described.members) == 1
    assignment = described.members[0].assignment.topic_partitions
    assert sorted(tp.partition for tp in assignment) == [0, 1]

    with pytest.raises(Exception) as non_empty:
        admin.delete_consumer_groups(["admin-group"])["admin-group"].result(timeout=30)
    assert non_empty.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    consumer.close()  # type: ignore[attr-defined]

    request = ConsumerGroupTopicPartitions("admin-group", [TopicPartition("events", 0), TopicPartition("events", 1)])
    offsets = admin.list_consumer_group_offsets([request])["admin-group"].result(timeout=30)
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == {0: 4, 1: 6}

    altered = ConsumerGroupTopicPartitions("admin-group", [TopicPartition("events", 0, 9)])
    admin.alter_consumer_group_offsets([altered])["admin-group"].result(timeout=30)
    offsets = admin.list_consumer_group_offsets([request])["admin-group"].result(timeout=30)
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == {0: 9, 1: 6}

    deleted = admin.delete_records([TopicPartition("events", 0, 5)])
    assert deleted[TopicPartition("events", 0, 5)].result(timeout=30).low_watermark == 5

    admin.delete_consumer_groups(["admin-group"])["admin-group"].result(timeout=30)
    listed = admin.list_consumer_groups().result(timeout=30)
    assert "admin-group" not in {group.group_id for group in listed.valid}
    offsets = admin.list_consumer_group_offsets([request])["admin-group"].result(timeout=30)
    assert {tp.offset for tp in offsets.topic_partitions} == {-1001}


@pytest.mark.timeout(60)
def test_raw_group_error_codes(broker_factory: Callable[..., BrokerProcess]) -> None:
    """Unknown member, illegal generation, commit to an unknown topic, as Kafka answers them."""
    from kafka.protocol.consumer.group import HeartbeatRequest, OffsetCommitRequest

    from tests.wire_client import WireClient

    broker = broker_factory(OVERRIDES)
    create_topic(broker.bootstrap, "known", 1)
    consumer = joined_consumer(broker.bootstrap, "known", "raw-group")
    try:
        with WireClient(broker.bootstrap) as client:
            heartbeat = client.request(HeartbeatRequest[4](group_id="raw-group", generation_id=1, member_id="nobody",
                                                        group_instance_id=None))
            assert heartbeat.error_code == 25  # UNKNOWN_MEMBER_ID
            commit = client.request(
                OffsetCommitRequest[8](
                    group_id="simple-group", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                    topics=[OffsetCommitRequest[8].OffsetCommitRequestTopic(
                        name="missing",
                        partitions=[OffsetCommitRequest[8].OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                            committed_metadata="")])],
                )
            )
            assert commit.topics[0].partitions[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
            commit = client.request(
                OffsetCommitRequest[8](
                    group_id="never-seen", generation_id_or_member_epoch=5, member_id="m", group_instance_id=None,
                    topics=[OffsetCommitRequest[8].OffsetCommitRequestTopic(
                        name="known",
                        partitions=[OffsetCommitRequest[8].OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                            committed_metadata="")])],
                )
            )
            assert commit.topics[0].partitions[0].error_code == 22  # ILLEGAL_GENERATION
    finally:
        consumer.close()  # type: ignore[attr-defined]

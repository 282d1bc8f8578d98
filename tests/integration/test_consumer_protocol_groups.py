"""KIP-848 consumer groups end to end (issue 12): confluent-kafka members with `group.protocol=consumer` share
a topic, partitions move when a member leaves or is killed (session timeout), committed offsets and the group
survive a broker restart, and the admin APIs (ListGroups, ConsumerGroupDescribe) show the group as Kafka 4 does."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.interop.consumer_protocol_scenario import COMMITTED, PARTITIONS, produce, resume, share_and_move

OVERRIDES = {
    "group.consumer.session.timeout.ms": "3000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture(scope="module")
def kip848_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("kip848") / "data", OVERRIDES)
    process.start()
    try:
        yield process
    finally:
        process.stop()


def test_members_share_move_and_offsets_survive_restart(kip848_broker: BrokerProcess) -> None:
    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, "kip848", PARTITIONS)
    produce(bootstrap, "kip848")
    outcome = share_and_move(bootstrap, "kip848", "kip848-g")
    assert outcome == {"sizes_three": [2, 2, 2], "sizes_two": [3, 3], "moved_to_survivors": True, "kept": True}
    kip848_broker.stop()
    kip848_broker.start()
    assert resume(kip848_broker.bootstrap, "kip848", "kip848-g") == COMMITTED


def test_admin_sees_a_consumer_group(kip848_broker: BrokerProcess) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType, TopicPartition
    from confluent_kafka.admin import AdminClient

    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, "kip848-admin", 2)
    from tests.interop.consumer_protocol_scenario import _consumer

    consumer = _consumer(bootstrap, "kip848-admin-g")
    consumer.subscribe(["kip848-admin"])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
        consumer.poll(0.1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        listed = admin.list_consumer_groups().result()
        [entry] = [group for group in listed.valid if group.group_id == "kip848-admin-g"]
        assert entry.type == ConsumerGroupType.CONSUMER and entry.state == ConsumerGroupState.STABLE
        described = admin.describe_consumer_groups(["kip848-admin-g"])["kip848-admin-g"].result()
        assert described.type == ConsumerGroupType.CONSUMER and described.state == ConsumerGroupState.STABLE
        [member] = described.members
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1]
        consumer.commit(offsets=[TopicPartition("kip848-admin", 0, 1)], asynchronous=False)
    finally:
        consumer.close()


KILLED_MEMBER = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "kip848-kill", "group.protocol": "consumer"})
c.subscribe(["kip848-kill"])
while len(c.assignment()) == 0:
    c.poll(0.1)
print("assigned", flush=True)
while True:
    c.poll(0.1)
"""


def test_killed_member_partitions_move_after_its_session_times_out(kip848_broker: BrokerProcess,
                                                                  tmp_path: Path) -> None:
    from tests.interop.consumer_protocol_scenario import _consumer

    bootstrap = kip848_broker.bootstrap
    create_topic(bootstrap, "kip848-kill", 4)
    victim = subprocess.Popen([sys.executable, "-c", KILLED_MEMBER, bootstrap], stdout=subprocess.PIPE)
    survivor = _consumer(bootstrap, "kip848-kill")
    try:
        assert victim.stdout is not None and victim.stdout.readline().strip() == b"assigned"
        survivor.subscribe(["kip848-kill"])
        deadline = time.monotonic() + 30
        while len(survivor.assignment()) != 2 and time.monotonic() < deadline:
            survivor.poll(0.1)
        assert len(survivor.assignment()) == 2
        victim.kill()
        victim.wait(10)
        killed_at = time.monotonic()
        while len(survivor.assignment()) != 4 and time.monotonic() < killed_at + 20:
            survivor.poll(0.1)
        assert len(survivor.assignment()) == 4
        assert time.monotonic() - killed_at >= 2.0  # not before the 3 s session timeout (less a heartbeat)
    finally:
        victim.kill()
        survivor.close()

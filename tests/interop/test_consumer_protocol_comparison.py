"""KIP-848 side by side (issue 12): the same confluent-kafka `group.protocol=consumer` scenario against Apache
Kafka and minikafka gives the same assignment shapes ([2, 2, 2], then [3, 3] with the leaver's partitions on
the survivors, nobody else moving) and the same committed offsets; minikafka's also survive a restart.
Member ids are random, so which member holds which partition is not compared."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.apache_kafka import ApacheKafka
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.interop.consumer_protocol_scenario import COMMITTED, PARTITIONS, produce, resume, share_and_move


def _run(bootstrap: str) -> tuple[dict[str, object], dict[int, int], str, str]:
    topic, group = f"kip848-{uuid.uuid4().hex[:8]}", f"kip848-g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic)
    return share_and_move(bootstrap, topic, group), resume(bootstrap, topic, group), topic, group


def test_same_assignments_and_offsets_as_apache_kafka(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    apache_outcome, apache_offsets, _topic, _group = _run(apache_kafka.bootstrap)
    broker = BrokerProcess(tmp_path / "data", {"offsets.topic.num.partitions": "3"})
    broker.start()
    try:
        outcome, offsets, topic, group = _run(broker.bootstrap)
        assert outcome == apache_outcome == {"sizes_three": [2, 2, 2], "sizes_two": [3, 3],
                                             "moved_to_survivors": True, "kept": True}
        assert offsets == apache_offsets == COMMITTED
        broker.stop()
        broker.start()
        assert resume(broker.bootstrap, topic, group) == COMMITTED
    finally:
        broker.stop()


def test_kafka_offsets_decoder_reads_our_consumer_group_records(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    """ConsumerGroupMetadata (3), PartitionMetadata (4), MemberMetadata (5), TargetAssignmentMetadata (6),
    TargetAssignmentMember (7) and CurrentMemberAssignment (8) as Kafka's own `--offsets-decoder` reads them."""
    from tests.apache_kafka import check_dump_clean, dump_log
    from tests.interop.consumer_protocol_scenario import _consumer

    broker = BrokerProcess(tmp_path / "data", {"offsets.topic.num.partitions": "1"})
    broker.start()
    try:
        create_topic(broker.bootstrap, "kip848-layout", 2)
        consumer = _consumer(broker.bootstrap, "kip848-layout-g")
        consumer.subscribe(["kip848-layout"])
        while len(consumer.assignment()) < 2:
            consumer.poll(0.1)
        consumer.close()
    finally:
        assert broker.stop() == 0
    logs = [path for path in broker.data_dir.glob("__consumer_offsets-*/*.log") if path.stat().st_size > 0]
    dumped = dump_log(logs, deep=True, index_sanity=False, lib_dir=apache_kafka.lib_dir, offsets_decoder=True)
    assert check_dump_clean(dumped) == []
    out = dumped.stdout
    for record_type in range(3, 9):
        assert f'key: {{"type":"{record_type}","data":{{"groupId":"kip848-layout-g"' in out, record_type
    assert '"subscribedTopicNames":["kip848-layout"]' in out
    assert '"numPartitions":2' in out

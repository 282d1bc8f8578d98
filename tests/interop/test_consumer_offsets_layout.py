"""`__consumer_offsets` holds Kafka-layout records: Apache Kafka's own kafka-dump-log --offsets-decoder decodes
the group metadata and offset commits a real consumer group wrote into minikafka (issue 3)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.apache_kafka import check_dump_clean, dump_log
from tests.integration.client_drivers import create_topic

pytestmark = pytest.mark.interop


def test_kafka_offsets_decoder_reads_our_group_metadata_and_commits(broker: Any, apache_kafka: Any) -> None:
    from confluent_kafka import Consumer, Producer

    create_topic(broker.bootstrap, "layout", 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(5):
        producer.produce("layout", key=b"k", value=b"v")
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "layout-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["layout"])
    consumed, deadline = 0, time.monotonic() + 30
    while consumed < 5 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            consumed += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert consumed == 5
    assert broker.stop() == 0
    logs = [path for path in broker.data_dir.glob("__consumer_offsets-*/*.log") if path.stat().st_size > 0]
    assert len(logs) == 1  # one group -> one partition by Kafka's hash rule
    dumped = dump_log(logs, deep=True, index_sanity=False, lib_dir=apache_kafka.lib_dir, offsets_decoder=True)
    assert check_dump_clean(dumped) == []
    out = dumped.stdout
    assert 'key: {"type":"2","data":{"group":"layout-group"}}' in out
    assert '"protocolType":"consumer","generation":1,"protocol":"range"' in out
    assert 'key: {"type":"1","data":{"group":"layout-group","topic":"layout","partition":0}}' in out
    assert '"offset":5,' in out

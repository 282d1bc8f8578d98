"""DescribeLogDirs over a real socket: partition sizes equal the bytes of the batches in the `.log` segment files,
the volume's total/usable bytes (v4+), and Kafka's omissions (unknown topics and partitions, topics without
requested partitions)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kafka.protocol.admin.cluster import DescribeLogDirsRequest

from minikafka.protocol.errors import ErrorCode
from tests.broker.test_fetch_wire import batch_of, create_topic, produce
from tests.broker_process import BrokerProcess
from tests.segment_files import batch_bytes
from tests.wire_client import WireClient


def describe_log_dirs(client: WireClient, version: int, topics: dict[str, list[int]] | None) -> Any:
    topic_cls = DescribeLogDirsRequest.DescribableLogDirTopic
    request_topics = None if topics is None else [topic_cls(topic=name, partitions=parts)
                                                  for name, parts in topics.items()]
    return client.request(DescribeLogDirsRequest[version](topics=request_topics))


def sizes(response: Any) -> dict[tuple[str, int], int]:
    (result,) = response.results
    return {(topic.name, partition.partition_index): partition.partition_size
            for topic in result.topics for partition in topic.partitions}


def segment_bytes(data_dir: Path, topic: str, partition: int) -> int:
    return sum(batch_bytes(path) for path in (data_dir / f"{topic}-{partition}").glob("*.log"))


def test_partition_sizes_are_the_segment_bytes_on_disk(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "sized", partitions=3, configs={"segment.bytes": "1024"})
        for _ in range(6):
            assert produce(client, "sized", 0, batch_of(4, value_bytes=100)).error_code == 0
        assert produce(client, "sized", 1, batch_of(1)).error_code == 0
        data_dir = Path(broker.data_dir)
        assert len(list((data_dir / "sized-0").glob("*.log"))) > 1  # rolled: the size spans segments
        expected = {("sized", p): segment_bytes(data_dir, "sized", p) for p in range(3)}
        assert expected[("sized", 0)] > 1024 and expected[("sized", 2)] == 0
        for version in range(1, 6):
            response = describe_log_dirs(client, version, {"sized": [0, 1, 2]})
            (result,) = response.results
            assert result.error_code == ErrorCode.NONE and result.log_dir == os.path.abspath(data_dir)
            assert sizes(response) == expected
            assert {(p.offset_lag, p.is_future_key) for t in result.topics for p in t.partitions} == {(0, False)}
            if version >= 3:
                assert response.error_code == ErrorCode.NONE
            if version >= 4:
                volume = os.statvfs(data_dir)
                assert result.total_bytes == volume.f_blocks * volume.f_frsize
                assert 0 < result.usable_bytes <= result.total_bytes
            if version >= 5:
                assert result.is_cordoned is False


def test_unknown_partitions_are_left_out_and_null_means_every_partition(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "a", partitions=2)
        create_topic(client, "b")
        assert produce(client, "a", 1, batch_of(3)).error_code == 0
        data_dir = Path(broker.data_dir)
        response = describe_log_dirs(client, 4, {"a": [1, 7], "b": [], "missing": [0]})
        assert sizes(response) == {("a", 1): segment_bytes(data_dir, "a", 1)}
        assert [topic.name for topic in response.results[0].topics] == ["a"]  # "b" asked for no partition
        assert set(sizes(describe_log_dirs(client, 4, None))) == {("a", 0), ("a", 1), ("b", 0)}
        empty = describe_log_dirs(client, 4, {})
        assert empty.results[0].topics == [] and empty.results[0].error_code == ErrorCode.NONE

"""Produce, Fetch, ListOffsets and OffsetForLeaderEpoch over a real socket with exact request versions."""

from __future__ import annotations

import threading
import time

from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.producer.produce import ProduceRequest

from minikafka.protocol.records import Record, RecordBatch, build_batch, iter_batches
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def create_topic(client: WireClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest[7](
        topics=[topic(name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                      configs=[topic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
        timeout_ms=10_000, validate_only=False,
    )
    assert client.request(request).topics[0].error_code == 0


def produce(client: WireClient, topic: str, partition: int, batch: bytes, version: int = 9, acks: int = -1) -> object:
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest[version](
        transactional_id=None, acks=acks, timeout_ms=10_000,
        topic_data=[data(name=topic, partition_data=[data.PartitionProduceData(index=partition, records=batch)])],
    )
    return client.request(request).responses[0].partition_responses[0]


def batch_of(count: int, start: int = 0, value_bytes: int = 10) -> bytes:
    return build_batch(
        [Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * value_bytes)
         for i in range(count)],
        base_offset=0,
    )


def fetch(client: WireClient, partitions: list[tuple[str, int, int]], *, max_wait_ms: int = 0, min_bytes: int = 0,
          max_bytes: int = 50_000_000, partition_max_bytes: int = 1_000_000, version: int = 12) -> object:
    topic_cls = FetchRequest.FetchTopic
    topics: dict[str, list[object]] = {}
    for name, partition, offset in partitions:
        topics.setdefault(name, []).append(
            topic_cls.FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                     last_fetched_epoch=-1, log_start_offset=-1,
                                     partition_max_bytes=partition_max_bytes))
    request = FetchRequest[version](
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0,
        session_id=0, session_epoch=-1,
        topics=[topic_cls(topic=name, partitions=parts) for name, parts in topics.items()],
        forgotten_topics_data=[], rack_id="",
    )
    return client.request(request)


def test_offsets_are_assigned_and_fetch_returns_every_requested_partition(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "orders", partitions=2)
        first = produce(client, "orders", 0, batch_of(5))
        second = produce(client, "orders", 0, batch_of(3))
        assert (first.error_code, first.base_offset, second.base_offset) == (0, 0, 5)
        response = fetch(client, [("orders", 0, 0), ("orders", 1, 0), ("missing", 0, 0)])
        parts = {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}
        assert set(parts) == {("orders", 0), ("orders", 1), ("missing", 0)}
        assert response.session_id == 0
        assert parts[("missing", 0)].error_code == 3
        assert parts[("orders", 1)].error_code == 0 and parts[("orders", 1)].high_watermark == 0
        records = [r for b in iter_batches(parts[("orders", 0)].records) for r in b.records()]
        assert [r.offset for r in records] == list(range(8))
        assert parts[("orders", 0)].high_watermark == 8 and parts[("orders", 0)].log_start_offset == 0


def test_fetch_out_of_range_and_at_log_end(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "t")
        produce(client, "t", 0, batch_of(3))
        beyond = fetch(client, [("t", 0, 4)]).responses[0].partitions[0]
        at_end = fetch(client, [("t", 0, 3)]).responses[0].partitions[0]
        assert beyond.error_code == 1
        assert (at_end.error_code, at_end.records or b"") == (0, b"")


def test_fetch_returns_one_whole_batch_even_when_larger_than_max_bytes(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "big")
        produce(client, "big", 0, batch_of(10, value_bytes=1000))
        produce(client, "big", 0, batch_of(10, value_bytes=1000))
        part = fetch(client, [("big", 0, 0)], max_bytes=100, partition_max_bytes=100).responses[0].partitions[0]
        batches = list(iter_batches(part.records))
        assert len(batches) == 1 and batches[0].records_count == 10 and batches[0].is_valid()


def test_long_poll_is_woken_by_an_append(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as consumer, WireClient(broker.bootstrap) as producer:
        create_topic(consumer, "poll")
        timer = threading.Timer(0.5, lambda: produce(producer, "poll", 0, batch_of(1)))
        timer.start()
        started = time.monotonic()
        part = fetch(consumer, [("poll", 0, 0)], max_wait_ms=10_000, min_bytes=1).responses[0].partitions[0]
        elapsed = time.monotonic() - started
        timer.join()
        assert RecordBatch(part.records).records_count == 1
        assert 0.4 < elapsed < 5.0


def test_long_poll_times_out_with_an_empty_answer(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "quiet")
        started = time.monotonic()
        part = fetch(client, [("quiet", 0, 0)], max_wait_ms=600, min_bytes=1).responses[0].partitions[0]
        assert 0.5 < time.monotonic() - started < 5.0
        assert part.error_code == 0 and not part.records


def test_list_offsets_and_offset_for_leader_epoch(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "lo")
        produce(client, "lo", 0, batch_of(4))
        topic_cls = ListOffsetsRequest.ListOffsetsTopic

        def list_offset(timestamp: int) -> tuple[int, int, int]:
            request = ListOffsetsRequest[7](
                replica_id=-1, isolation_level=0,
                topics=[topic_cls(name="lo", partitions=[topic_cls.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])],
            )
            part = client.request(request).topics[0].partitions[0]
            return part.error_code, part.offset, part.timestamp

        assert list_offset(-2)[:2] == (0, 0)
        assert list_offset(-1)[:2] == (0, 4)
        assert list_offset(1_700_000_000_002) == (0, 2, 1_700_000_000_002)
        assert list_offset(1_800_000_000_000)[:2] == (0, -1)
        epoch_topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
        request = OffsetForLeaderEpochRequest[4](
            replica_id=-1,
            topics=[epoch_topic(topic="lo", partitions=[epoch_topic.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=0, leader_epoch=0)])],
        )
        part = client.request(request).topics[0].partitions[0]
        assert (part.error_code, part.leader_epoch, part.end_offset) == (0, 0, 4)


def test_zstd_needs_produce_v7(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "z")
        zstd = build_batch([Record(offset=0, timestamp=1, key=b"k", value=b"v")], base_offset=0, compression=4)
        assert produce(client, "z", 0, zstd, version=6).error_code == 76
        assert produce(client, "z", 0, zstd, version=7).error_code == 0


def test_invalid_acks_is_refused_per_partition(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "acks")
        assert produce(client, "acks", 0, batch_of(1), acks=2).error_code == 21

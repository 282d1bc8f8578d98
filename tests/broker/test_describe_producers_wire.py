"""DescribeProducers over a real socket: an idempotent producer's id, epoch, last sequence and timestamp, an
open transaction's start offset, and errors that stay on their own partition (checked against Apache Kafka
4.3 with the same requests)."""

from __future__ import annotations

import time
from typing import Any

from kafka.protocol.admin.transactions import DescribeProducersRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import EndTxnRequest, InitProducerIdRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import Record, build_batch
from tests.broker.test_fetch_wire import create_topic
from tests.broker.transactions.test_transactions_wire import add_partitions, init
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

T0 = 1_700_000_000_000


def describe_producers(client: WireClient, topics: dict[str, list[int]]) -> dict[tuple[str, int], Any]:
    topic_cls = DescribeProducersRequest.TopicRequest
    response = client.request(DescribeProducersRequest[0](
        topics=[topic_cls(name=name, partition_indexes=parts) for name, parts in topics.items()]))
    return {(topic.name, partition.partition_index): partition
            for topic in response.topics for partition in topic.partitions}


def produce_batch(client: WireClient, topic: str, partition: int, pid: int, epoch: int, sequence: int, count: int,
                  transactional_id: str | None = None) -> int:
    batch = build_batch([Record(i, T0 + i, b"k%d" % i, b"v") for i in range(count)], base_offset=0,
                        producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                        is_transactional=transactional_id is not None)
    data = ProduceRequest.TopicProduceData
    response = client.request(ProduceRequest[9](
        transactional_id=transactional_id, acks=-1, timeout_ms=10_000,
        topic_data=[data(name=topic, partition_data=[data.PartitionProduceData(index=partition, records=batch)])]))
    partition_response = response.responses[0].partition_responses[0]
    assert partition_response.error_code == ErrorCode.NONE
    return int(partition_response.base_offset)


def test_idempotent_producer_is_listed_and_bad_partitions_get_their_own_errors(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "p", partitions=2)
        init_response = client.request_until_ready(InitProducerIdRequest[4](
            transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
        pid, epoch = init_response.producer_id, init_response.producer_epoch
        produce_batch(client, "p", 0, pid, epoch, sequence=0, count=3)
        produce_batch(client, "p", 0, pid, epoch, sequence=3, count=4)

        described = describe_producers(client, {"p": [0, 1, 9, -1], "missing": [0], "bad/name": [0]})
        active = described[("p", 0)]
        assert (active.error_code, active.error_message) == (ErrorCode.NONE, None)
        assert [(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
                 s.current_txn_start_offset) for s in active.active_producers] == [(pid, epoch, 6, T0 + 3, -1, -1)]
        assert (described[("p", 1)].error_code, described[("p", 1)].active_producers) == (ErrorCode.NONE, [])
        for bad in (("p", 9), ("p", -1)):  # Kafka sets only the code for a partition the topic lacks
            assert (described[bad].error_code, described[bad].error_message) == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        assert (described[("missing", 0)].error_code, described[("missing", 0)].error_message) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        assert (described[("bad/name", 0)].error_code, described[("bad/name", 0)].error_message) == (
            ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad/name' contains one or more characters "
            "other than ASCII alphanumerics, '.', '_' and '-'")


def test_open_transaction_shows_its_start_offset_until_the_marker(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "p")
        _error, pid, epoch = init(client, "tx")
        assert add_partitions(client, "tx", pid, epoch, {"p": [0]}) == {("p", 0): ErrorCode.NONE}
        produce_batch(client, "p", 0, pid + 1000, 0, sequence=0, count=2)  # an unrelated idempotent producer
        first_offset = produce_batch(client, "p", 0, pid, epoch, sequence=0, count=2, transactional_id="tx")
        states = describe_producers(client, {"p": [0]})[("p", 0)].active_producers
        assert [(s.producer_id, s.current_txn_start_offset, s.coordinator_epoch) for s in states] == [
            (pid, first_offset, -1), (pid + 1000, -1, -1)]  # by producer id
        assert client.request(EndTxnRequest[3](transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                                               committed=True)).error_code == ErrorCode.NONE
        deadline = time.monotonic() + 10
        while True:  # the COMMIT marker is written by the coordinator after EndTxn returns
            (state,) = [s for s in describe_producers(client, {"p": [0]})[("p", 0)].active_producers
                        if s.producer_id == pid]
            if state.current_txn_start_offset == -1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (state.current_txn_start_offset, state.last_sequence) == (-1, 1)
        assert state.coordinator_epoch >= 0

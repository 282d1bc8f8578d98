"""Transaction APIs over a real socket with exact request versions: the error codes clients rely on."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import Record, build_batch
from tests.broker.test_fetch_wire import create_topic
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def init(client: WireClient, transactional_id: str, timeout_ms: int = 60_000, version: int = 4) -> tuple[int, int, int]:
    response = client.request_until_ready(InitProducerIdRequest[version](
        transactional_id=transactional_id, transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1))
    return response.error_code, response.producer_id, response.producer_epoch


def add_partitions(client: WireClient, txn: str, pid: int, epoch: int, partitions: dict[str, list[int]],
                   version: int = 3) -> dict[tuple[str, int], int]:
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    response = client.request(AddPartitionsToTxnRequest[version](
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[topic(name=name, partitions=parts) for name, parts in partitions.items()]))
    return {(result.name, partition.partition_index): partition.partition_error_code
            for result in response.results_by_topic_v3_and_below for partition in result.results_by_partition}


def produce_transactional(client: WireClient, txn: str, pid: int, epoch: int, sequence: int) -> int:
    batch = build_batch([Record(0, 1_700_000_000_000, b"k", b"v")], base_offset=0, producer_id=pid,
                        producer_epoch=epoch, base_sequence=sequence, is_transactional=True)
    data = ProduceRequest.TopicProduceData
    response = client.request(ProduceRequest[9](
        transactional_id=txn, acks=-1, timeout_ms=10_000,
        topic_data=[data(name="t", partition_data=[data.PartitionProduceData(index=0, records=batch)])]))
    return int(response.responses[0].partition_responses[0].error_code)


def test_find_coordinator_for_a_transactional_id(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        response = client.request_until_ready(FindCoordinatorRequest[4](key_type=1, coordinator_keys=["tx-a", "tx-b"]))
        assert [(c.key, c.error_code, c.port) for c in response.coordinators] == [
            ("tx-a", 0, broker.port), ("tx-b", 0, broker.port)]


def test_init_producer_id_refuses_a_timeout_above_the_maximum(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        assert init(client, "tx", timeout_ms=900_001)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        error, pid, epoch = init(client, "tx")
        assert (error, epoch) == (ErrorCode.NONE, 0)
        assert init(client, "tx") == (ErrorCode.NONE, pid, 1)
        assert init(client, "tx", version=2) == (ErrorCode.NONE, pid, 2)


def test_produce_outside_the_transaction_is_invalid_txn_state(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "t")
        _error, pid, epoch = init(client, "tx")
        assert produce_transactional(client, "tx", pid, epoch, 0) == ErrorCode.INVALID_TXN_STATE
        assert add_partitions(client, "tx", pid, epoch, {"t": [0]}) == {("t", 0): ErrorCode.NONE}
        assert produce_transactional(client, "other-id", pid, epoch, 0) == ErrorCode.INVALID_TXN_STATE
        assert produce_transactional(client, "tx", pid, epoch, 0) == ErrorCode.NONE
        assert client.request(EndTxnRequest[3](transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                                               committed=True)).error_code == ErrorCode.NONE
        assert produce_transactional(client, "tx", pid, epoch, 1) == ErrorCode.INVALID_TXN_STATE


def test_add_partitions_with_an_unknown_topic(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "t")
        _error, pid, epoch = init(client, "tx")
        assert add_partitions(client, "tx", pid, epoch, {"t": [0], "missing": [0]}) == {
            ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        # v1 clients do not know PRODUCER_FENCED (v2+): they get INVALID_PRODUCER_EPOCH.
        assert add_partitions(client, "tx", pid, epoch + 1, {"t": [0]}, version=1) == {
            ("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
        assert add_partitions(client, "tx", pid, epoch + 1, {"t": [0]}) == {("t", 0): ErrorCode.PRODUCER_FENCED}


def test_txn_offset_commit_is_unstable_until_the_commit(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        create_topic(client, "t")
        _error, pid, epoch = init(client, "tx")
        topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic

        def txn_commit() -> int:
            response = client.request_until_ready(TxnOffsetCommitRequest[3](
                transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch, generation_id=-1,
                member_id="", group_instance_id=None,
                topics=[topic(name="t", partitions=[topic.TxnOffsetCommitRequestPartition(
                    partition_index=0, committed_offset=42, committed_leader_epoch=-1, committed_metadata="")])]))
            return int(response.topics[0].partitions[0].error_code)

        def offset_fetch(require_stable: bool) -> tuple[int, int]:
            fetch_topic = OffsetFetchRequest.OffsetFetchRequestTopic
            response = client.request_until_ready(OffsetFetchRequest[7](
                group_id="g", topics=[fetch_topic(name="t", partition_indexes=[0])], require_stable=require_stable))
            partition = response.topics[0].partitions[0]
            return partition.error_code, partition.committed_offset

        assert txn_commit() == ErrorCode.INVALID_TXN_STATE  # the group's partition is not in the transaction
        assert client.request(AddOffsetsToTxnRequest[3](transactional_id="tx", producer_id=pid,
                                                        producer_epoch=epoch, group_id="g")).error_code == 0
        assert txn_commit() == ErrorCode.NONE
        assert offset_fetch(require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert offset_fetch(require_stable=False) == (ErrorCode.NONE, -1)
        assert client.request(EndTxnRequest[3](transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                                               committed=True)).error_code == ErrorCode.NONE
        assert offset_fetch(require_stable=True) == (ErrorCode.NONE, 42)


def test_describe_and_list_transactions(broker: BrokerProcess) -> None:
    from kafka.protocol.admin.transactions import DescribeTransactionsRequest, ListTransactionsRequest

    with WireClient(broker.bootstrap) as client:
        create_topic(client, "t", partitions=2)
        _error, pid, epoch = init(client, "open", timeout_ms=30_000)
        add_partitions(client, "open", pid, epoch, {"t": [1, 0]})
        _error, idle_pid, _epoch = init(client, "idle")
        response = client.request_until_ready(DescribeTransactionsRequest[0](transactional_ids=["open", "missing"]))
        described, missing = response.transaction_states
        assert (described.error_code, described.transaction_state, described.transaction_timeout_ms,
                described.producer_id, described.producer_epoch) == (0, "Ongoing", 30_000, pid, epoch)
        assert [(topic.topic, topic.partitions) for topic in described.topics] == [("t", [0, 1])]
        assert described.transaction_start_time_ms > 0
        assert missing.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

        def listed(states: list[str], producer_ids: list[int] | None = None) -> tuple[list[str], set[str]]:
            response = client.request(ListTransactionsRequest[1](
                state_filters=states, producer_id_filters=producer_ids or [], duration_filter=-1))
            return response.unknown_state_filters, {s.transactional_id for s in response.transaction_states}

        assert listed([]) == ([], {"open", "idle"})
        assert listed(["Ongoing", "Bogus"]) == (["Bogus"], {"open"})
        assert listed(["Bogus"]) == (["Bogus"], set())
        assert listed([], [idle_pid]) == ([], {"idle"})

"""Transaction version 2 (KIP-890 part 2) over a real socket with exact request versions: the finalized feature
in ApiVersions, Produce v12 adding its partition, TxnOffsetCommit v5 without AddOffsetsToTxn, EndTxn v5 answering
the bumped epoch, the zombie's late produce fenced, and the broker form of AddPartitionsToTxn (v5, verifyOnly)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, EndTxnRequest, TxnOffsetCommitRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import Record, build_batch
from tests.broker.test_fetch_wire import create_topic
from tests.broker.transactions.test_transactions_wire import init
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


@pytest.fixture(scope="module")
def tv2_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(Path(tmp_path_factory.mktemp("tv2")) / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()


def features(client: WireClient, version: int = 4) -> tuple[dict[str, tuple[int, int]], dict[str, int], int]:
    response = client.request(ApiVersionsRequest[version](client_software_name="wire-test",
                                                          client_software_version="1.0"))
    return ({f.name: (f.min_version, f.max_version) for f in response.supported_features},
            {f.name: f.max_version_level for f in response.finalized_features}, response.finalized_features_epoch)


def produce(client: WireClient, txn: str, pid: int, epoch: int, sequence: int, partition: int = 0,
            version: int = 12) -> int:
    batch = build_batch([Record(0, 1_700_000_000_000, b"k", b"v")], base_offset=0, producer_id=pid,
                        producer_epoch=epoch, base_sequence=sequence, is_transactional=True)
    data = ProduceRequest.TopicProduceData
    response = client.request(ProduceRequest[version](
        transactional_id=txn, acks=-1, timeout_ms=10_000,
        topic_data=[data(name="t2", partition_data=[data.PartitionProduceData(index=partition, records=batch)])]))
    return int(response.responses[0].partition_responses[0].error_code)


def end_txn(client: WireClient, txn: str, pid: int, epoch: int, commit: bool, version: int = 5) -> tuple[int, int, int]:
    response = client.request(EndTxnRequest[version](transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                                                     committed=commit))
    return response.error_code, response.producer_id, response.producer_epoch


def describe(client: WireClient, txn: str) -> tuple[str, int, int]:
    state = client.request_until_ready(DescribeTransactionsRequest[0](transactional_ids=[txn])).transaction_states[0]
    return state.transaction_state, state.producer_id, state.producer_epoch


def test_api_versions_advertise_transaction_version_2(tv2_broker: BrokerProcess) -> None:
    with WireClient(tv2_broker.bootstrap) as client:
        supported, finalized, epoch = features(client)
        assert supported == {"metadata.version": (7, 25), "transaction.version": (0, 2)}
        assert finalized == {"metadata.version": 25, "transaction.version": 2} and epoch >= 0
        # v3: as Kafka 4 (KIP-1022), no supported feature whose range starts at 0; the finalized ones stay.
        supported, finalized, _epoch = features(client, 3)
        assert supported == {"metadata.version": (7, 25)} and finalized["transaction.version"] == 2


def test_tv2_flow_with_raw_requests(tv2_broker: BrokerProcess) -> None:
    with WireClient(tv2_broker.bootstrap) as client:
        create_topic(client, "t2", partitions=2)
        error, pid, epoch = init(client, "tx2", version=5)
        assert (error, epoch) == (ErrorCode.NONE, 0)
        # No AddPartitionsToTxn: Produce v12 adds the partition; v11 only verifies (TRANSACTION_ABORTABLE).
        assert produce(client, "tx2", pid, epoch, 0, partition=1, version=11) == ErrorCode.TRANSACTION_ABORTABLE
        assert produce(client, "tx2", pid, epoch, 0) == ErrorCode.NONE
        assert produce(client, "tx2", pid, epoch, 1) == ErrorCode.NONE
        assert describe(client, "tx2") == ("Ongoing", pid, 0)
        # TxnOffsetCommit v5 (to the group's coordinator) adds the group's __consumer_offsets partition itself.
        assert client.request_until_ready(FindCoordinatorRequest[4](key_type=0, coordinator_keys=["g2"])).coordinators[
            0].error_code == ErrorCode.NONE
        topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
        response = client.request_until_ready(TxnOffsetCommitRequest[5](
            transactional_id="tx2", group_id="g2", producer_id=pid, producer_epoch=epoch, generation_id=-1,
            member_id="", group_instance_id=None,
            topics=[topic(name="t2", partitions=[topic.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=2, committed_leader_epoch=-1, committed_metadata="")])]))
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
        # EndTxn v5 bumps the epoch and says so; a retry with the old epoch gets the same answer.
        assert end_txn(client, "tx2", pid, epoch, True) == (ErrorCode.NONE, pid, 1)
        assert end_txn(client, "tx2", pid, epoch, True) == (ErrorCode.NONE, pid, 1)
        assert describe(client, "tx2") == ("CompleteCommit", pid, 1)
        fetch_topic = OffsetFetchRequest.OffsetFetchRequestTopic
        offsets = client.request_until_ready(OffsetFetchRequest[7](
            group_id="g2", topics=[fetch_topic(name="t2", partition_indexes=[0])], require_stable=True))
        assert offsets.topics[0].partitions[0].committed_offset == 2
        # The zombie at the old epoch is fenced; the producer goes on at the bumped epoch from sequence 0.
        assert produce(client, "tx2", pid, epoch, 2) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert produce(client, "tx2", pid, 1, 0) == ErrorCode.NONE
        # The broker's batched form: verifyOnly answers per partition.
        transaction = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
        response = client.request(AddPartitionsToTxnRequest[5](transactions=[transaction(
            transactional_id="tx2", producer_id=pid, producer_epoch=1, verify_only=True,
            topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t2", partitions=[0, 1])])]))
        results = {(topic_result.name, partition.partition_index): partition.partition_error_code
                   for result in response.results_by_transaction for topic_result in result.topic_results
                   for partition in topic_result.results_by_partition}
        assert results == {("t2", 0): ErrorCode.NONE, ("t2", 1): ErrorCode.TRANSACTION_ABORTABLE}
        assert end_txn(client, "tx2", pid, 1, False) == (ErrorCode.NONE, pid, 2)
        assert end_txn(client, "tx2", pid, 1, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)


def test_finalized_level_0_keeps_the_classic_protocol(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory({"minikafka.transaction.version": "0"})
    with WireClient(broker.bootstrap) as client:
        supported, finalized, _epoch = features(client)
        assert supported["transaction.version"] == (0, 2) and "transaction.version" not in finalized
        create_topic(client, "t2")
        _error, pid, epoch = init(client, "tx0")
        assert produce(client, "tx0", pid, epoch, 0, version=9) == ErrorCode.INVALID_TXN_STATE
        # Kafka decides by the request version: Produce v12 still adds, EndTxn v3 does not bump.
        assert produce(client, "tx0", pid, epoch, 0) == ErrorCode.NONE
        assert end_txn(client, "tx0", pid, epoch, True, version=3)[0] == ErrorCode.NONE
        assert describe(client, "tx0") == ("CompleteCommit", pid, epoch)

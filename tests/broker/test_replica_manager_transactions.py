"""read_committed through ReplicaManager and the Fetch handler: data up to the LSO plus the aborted list;
transaction markers wake waiting fetches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from minikafka.broker.cluster import Cluster
from minikafka.broker.config import KafkaConfig
from minikafka.broker.fetch_manager import FetchManager
from minikafka.broker.fetch_session_cache import FetchSessionCache
from minikafka.broker.handlers import fetch as fetch_handler
from minikafka.broker.handlers import list_offsets as list_offsets_handler
from minikafka.broker.partition_states import PartitionStates
from minikafka.broker.replica_manager import FetchPartitionRequest, PartitionRead, ReplicaManager
from minikafka.broker.session import LOCAL_SESSION
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.messages import encode_response
from minikafka.protocol.records import Record, build_batch, iter_batches
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager

T0 = 1_700_000_000_000
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def one_broker(rm: ReplicaManager) -> dict[str, Any]:
    """What a handler's context says of a one-broker cluster: node 1 leads every partition."""
    log_dir = rm.log_manager.log_dir
    states = PartitionStates(Cluster([KafkaConfig({"log.dirs": str(log_dir)})]), Path(log_dir),
                             lambda topic, partition: rm.log_for(topic, partition).log_end_offset,
                             lambda topic: None if (meta := rm.topic(topic)) is None else meta.num_partitions)
    return {"partitions": states, "node_id": 1}


@pytest.fixture
def replica_manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    log_manager = LogManager(tmp_path / "logs", {}, FakeClock(T0))
    log_manager.startup()
    log_manager.create_topic("t", 1, {})
    yield ReplicaManager(log_manager)
    log_manager.shutdown()


def txn_batch(producer_id: int, *values: bytes, sequence: int = 0) -> bytes:
    records = [Record(i, T0, b"k", v) for i, v in enumerate(values)]
    return build_batch(records, base_offset=0, producer_id=producer_id, producer_epoch=0, base_sequence=sequence,
                       is_transactional=True)


def read(rm: ReplicaManager, offset: int, isolation_level: int) -> PartitionRead:
    results, _ = rm.read_partitions([FetchPartitionRequest("t", 0, offset, 1 << 20)], 1 << 20, isolation_level)
    return results[("t", 0)]


def offsets(read: PartitionRead) -> list[int]:
    return [b.base_offset for b in iter_batches(read.records)]


def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(replica_manager: ReplicaManager) -> None:
    rm = replica_manager
    rm.append("t", 0, txn_batch(1, b"a", b"b"))        # 0-1
    rm.append("t", 0, txn_batch(2, b"c"))              # 2
    rm.append("t", 0, build_batch([Record(0, T0, b"k", b"plain")], base_offset=0))  # 3
    committed = read(rm, 0, READ_COMMITTED)
    assert (committed.records, committed.aborted_transactions) == (b"", [])
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 0)
    uncommitted = read(rm, 0, READ_UNCOMMITTED)
    assert offsets(uncommitted) == [0, 2, 3] and uncommitted.aborted_transactions is None

    assert rm.write_txn_marker("t", 0, 1, 0, 0, commit=False).first_offset == 4
    committed = read(rm, 0, READ_COMMITTED)
    assert offsets(committed) == [0]  # producer 2's transaction from offset 2 is still open
    assert committed.last_stable_offset == 2
    assert committed.aborted_transactions == [(1, 0)]

    rm.write_txn_marker("t", 0, 2, 0, 0, commit=True)
    committed = read(rm, 0, READ_COMMITTED)
    assert offsets(committed) == [0, 2, 3, 4, 5]
    assert committed.aborted_transactions == [(1, 0)]
    assert read(rm, 5, READ_COMMITTED).aborted_transactions == []
    assert read(rm, 6, READ_COMMITTED).aborted_transactions == []


async def test_a_commit_marker_wakes_a_waiting_read_committed_fetch(replica_manager: ReplicaManager) -> None:
    rm = replica_manager
    rm.append("t", 0, txn_batch(1, b"a"))
    fetch = asyncio.ensure_future(rm.fetch([FetchPartitionRequest("t", 0, 0, 1 << 20)], max_wait_ms=30_000,
                                           min_bytes=1, max_bytes=1 << 20, isolation_level=READ_COMMITTED))
    await asyncio.sleep(0)
    assert not fetch.done()
    rm.write_txn_marker("t", 0, 1, 0, 0, commit=True)
    result = (await asyncio.wait_for(fetch, 5))[("t", 0)]
    assert offsets(result) == [0, 1] and result.aborted_transactions == []


async def test_fetch_response_carries_aborted_transactions(replica_manager: ReplicaManager) -> None:
    rm = replica_manager
    rm.append("t", 0, txn_batch(7, b"a"))
    rm.write_txn_marker("t", 0, 7, 0, 0, commit=False)

    async def fetch(version: int, isolation_level: int) -> Any:
        partition = FetchRequest[version].FetchTopic.FetchPartition
        fields: dict[str, Any] = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
        if version >= 9:
            fields["current_leader_epoch"] = -1
        if version >= 5:
            fields["log_start_offset"] = -1
        request_fields: dict[str, Any] = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                                          "max_bytes": 1 << 20, "isolation_level": isolation_level,
                                          "topics": [FetchRequest[version].FetchTopic(topic="t",
                                                                                      partitions=[partition(**fields)])]}
        if version >= 7:
            request_fields.update(session_id=0, session_epoch=-1, forgotten_topics_data=[])
        if version >= 11:
            request_fields["rack_id"] = ""
        request = FetchRequest[version](**request_fields)
        event = RequestReceived(ApiKey.FETCH, version, 1, "test", request, 0)
        sessions = FetchManager(FetchSessionCache(1), FakeClock().monotonic_ms)
        ctx = SimpleNamespace(replica_manager=rm, fetch_manager=sessions, **one_broker(rm))
        response = await fetch_handler.handle(ctx, event, LOCAL_SESSION)  # type: ignore[arg-type]
        assert encode_response(response, 1)
        return response.responses[0].partitions[0]

    for version in (4, 11, 12):
        committed = await fetch(version, READ_COMMITTED)
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(7, 0)]
        assert committed.last_stable_offset == 2
        assert (await fetch(version, READ_UNCOMMITTED)).aborted_transactions is None


async def test_list_offsets_latest_is_the_lso_for_read_committed(replica_manager: ReplicaManager) -> None:
    rm = replica_manager
    rm.append("t", 0, build_batch([Record(0, T0, b"k", b"plain")], base_offset=0))
    rm.append("t", 0, txn_batch(3, b"open"))
    rm.append("t", 0, build_batch([Record(0, T0, b"k", b"later")], base_offset=0))

    async def latest(isolation_level: int) -> int:
        topic = ListOffsetsRequest[7].ListOffsetsTopic
        request = ListOffsetsRequest[7](replica_id=-1, isolation_level=isolation_level, topics=[topic(
            name="t", partitions=[topic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                             timestamp=-1)])])
        event = RequestReceived(ApiKey.LIST_OFFSETS, 7, 1, "test", request, 0)
        ctx = SimpleNamespace(replica_manager=rm, **one_broker(rm))
        response = await list_offsets_handler.handle(ctx, event, LOCAL_SESSION)  # type: ignore[arg-type]
        return int(response.topics[0].partitions[0].offset)

    assert (await latest(READ_COMMITTED), await latest(READ_UNCOMMITTED)) == (1, 3)
    rm.write_txn_marker("t", 0, 3, 0, 0, commit=True)
    assert (await latest(READ_COMMITTED), await latest(READ_UNCOMMITTED)) == (4, 4)

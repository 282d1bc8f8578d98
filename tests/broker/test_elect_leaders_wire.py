"""ElectLeaders (key 43) over a real socket against three brokers in one process: PREFERRED and UNCLEAN elections
with Kafka's per-partition error codes, the null topic list, v0, a bad election type, ApiVersions, and
`auto.leader.rebalance.enable` bringing the preferred leader back after `start_broker`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from minikafka.protocol.schemas import ElectLeadersRequest
from minikafka.testing import MiniKafka
from tests.broker.test_several_brokers_wire import address, create_topic, metadata, partitions_of
from tests.wire_client import WireClient

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST = 0, 3, 42
PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, ELECTION_NOT_NEEDED = 80, 83, 84
PREFERRED, UNCLEAN = 0, 1


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniKafka]:
    with MiniKafka({"auto.leader.rebalance.enable": "false"}, data_dir=tmp_path_factory.mktemp("elect") / "data",
                   brokers=3) as broker:
        yield broker


def elect(client: WireClient, election_type: int, partitions: dict[str, list[int]] | None,
          version: int = 2) -> Any:
    topic_cls = ElectLeadersRequest.TopicPartitions
    fields: dict[str, Any] = {"topic_partitions": None if partitions is None else [
        topic_cls(topic=topic, partitions=indexes) for topic, indexes in partitions.items()], "timeout_ms": 10_000}
    if version >= 1:
        fields["election_type"] = election_type
    return client.request(ElectLeadersRequest[version](**fields))


def results(response: Any) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {(topic.topic, part.partition_id): (part.error_code, part.error_message)
            for topic in response.replica_election_results for part in topic.partition_result}


def leader(client: WireClient, topic: str, partition: int = 0) -> tuple[int, int]:
    part = partitions_of(metadata(client, topic))[partition]
    return part.leader_id, part.leader_epoch


def test_elect_leaders_is_advertised_as_kafka_4_3_serves_it(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 2)) as client:
        advertised = {e.api_key: (e.min_version, e.max_version)
                      for e in client.request(ApiVersionsRequest[3](client_software_name="t",
                                                                    client_software_version="1")).api_keys}
    assert advertised[43] == (0, 2)


def test_preferred_election_moves_the_leader_back_or_says_why_not(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 3)) as client:
        assert create_topic(client, "preferred", assignments=[[1, 2, 3], [2, 3, 1]]) == NONE
        assert results(elect(client, PREFERRED, {"preferred": [0, 1]})) == {
            ("preferred", 0): (ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
            ("preferred", 1): (ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")}
        kafka.faults.elect_leader("preferred", 0, 3)
        assert leader(client, "preferred") == (3, 1)
        response = elect(client, PREFERRED, {"preferred": [0]})
        assert response.error_code == NONE
        assert results(response) == {("preferred", 0): (NONE, None)}
        assert leader(client, "preferred") == (1, 2)

        kafka.faults.stop_broker(1)  # broker 2 leads partition 0 now; the preferred replica is not running
        assert leader(client, "preferred") == (2, 3)
        assert results(elect(client, PREFERRED, {"preferred": [0]})) == {
            ("preferred", 0): (PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")}
        kafka.faults.start_broker(1)  # auto.leader.rebalance.enable=false here: broker 2 keeps leading
        assert leader(client, "preferred") == (2, 3)
        assert results(elect(client, PREFERRED, {"preferred": [0]})) == {("preferred", 0): (NONE, None)}
        assert leader(client, "preferred") == (1, 4)


def test_unknown_topics_and_partitions_answer_with_kafkas_messages(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "known", assignments=[[1, 2]]) == NONE
        assert results(elect(client, PREFERRED, {"nowhere": [0], "known": [5, 0]})) == {
            ("nowhere", 0): (UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nowhere"),
            ("known", 5): (UNKNOWN_TOPIC_OR_PARTITION, "No such partition as known-5"),
            ("known", 0): (ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")}
        empty = elect(client, PREFERRED, {})
        assert (empty.error_code, empty.replica_election_results) == (NONE, [])


def test_a_null_topic_list_elects_everywhere_and_leaves_out_what_needs_no_election(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "everywhere", assignments=[[1, 2], [2, 1], [3, 1]]) == NONE
        kafka.faults.elect_leader("everywhere", 1, 1)
        by_topic = {topic.topic: topic.partition_result for topic in elect(client, PREFERRED, None)
                    .replica_election_results}
        assert [(part.partition_id, part.error_code) for part in by_topic["everywhere"]] == [(1, NONE)]
        assert leader(client, "everywhere", 1) == (2, 2)
        # v0 has no election type (always PREFERRED) and no top-level error code
        assert results(elect(client, PREFERRED, {"everywhere": [1]}, version=0)) == {
            ("everywhere", 1): (ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")}


def test_unclean_election_needs_a_leaderless_partition_and_a_running_replica(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        assert create_topic(client, "unclean", assignments=[[3], [1, 3]]) == NONE
        assert results(elect(client, UNCLEAN, {"unclean": [1]})) == {
            ("unclean", 1): (ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")}
        kafka.faults.stop_broker(3)
        try:
            assert leader(client, "unclean", 0) == (-1, 1)
            assert results(elect(client, UNCLEAN, {"unclean": [0]})) == {
                ("unclean", 0): (ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available.")}
            assert results(elect(client, PREFERRED, {"unclean": [0]})) == {
                ("unclean", 0): (PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")}
        finally:
            kafka.faults.start_broker(3)
        assert leader(client, "unclean", 0) == (3, 2)


def test_an_unknown_election_type_is_an_invalid_request_on_every_partition(kafka: MiniKafka) -> None:
    with WireClient(address(kafka, 1)) as client:
        response = elect(client, 7, {"known": [0, 1]})
    assert response.error_code == INVALID_REQUEST
    assert results(response) == {("known", 0): (INVALID_REQUEST, "Unknown election type 7"),
                                 ("known", 1): (INVALID_REQUEST, "Unknown election type 7")}


def test_auto_leader_rebalance_brings_the_preferred_leader_back(tmp_path: Path) -> None:
    config = {"leader.imbalance.check.interval.seconds": "1"}
    with MiniKafka(config, data_dir=tmp_path / "data", brokers=2) as kafka, \
            WireClient(address(kafka, 2)) as client:
        assert create_topic(client, "balanced", assignments=[[1, 2]]) == NONE
        kafka.faults.stop_broker(1)
        assert leader(client, "balanced") == (2, 1)
        kafka.faults.start_broker(1)
        deadline = time.monotonic() + 10
        while leader(client, "balanced")[0] != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert leader(client, "balanced") == (1, 2)

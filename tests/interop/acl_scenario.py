"""The ACL scenario of tests/interop/test_acl_scenario_comparison.py: raw requests (kafka-python's message classes)
over a SCRAM-SHA-256 authenticated SASL_PLAINTEXT connection, each reduced to the error codes the broker answered.

`SaslWireClient` is `WireClient` after SaslHandshake v1 + SaslAuthenticate v2 (kafka-python's own ScramClient makes
the tokens). `run_requests` sends the same fixed list of requests and returns `[(label, codes), ...]`; nothing in
it depends on timing or on which broker answers, so the lists of Apache Kafka and minikafka must be equal.
"""

from __future__ import annotations

from typing import Any

from kafka.net.sasl.scram import ScramClient
from kafka.protocol.admin.acl import CreateAclsRequest, DescribeAclsRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.groups import ListGroupsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from minikafka.protocol.records import Record, build_batch
from tests.wire_client import WireClient

MECHANISM = "SCRAM-SHA-256"
ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
CAROL = ("carol", "carol-secret")  # the principal of tests/interop/authorization_scenario.py
SCRAM_CREDENTIALS = [f"{MECHANISM}=[name={name},password={password}]" for name, password in (ADMIN, ALICE, CAROL)]
# Topics the admin creates before alice asks anything; `doomed` is the one she may delete once granted.
TOPICS = ("orders", "fin-payments", "fin-secret", "fin-hidden", "doomed")
TXN_ID = "tx-orders"

# ACL codes (Kafka's AclOperation / ResourceType / PatternType / AclPermissionType ids)
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
DENY, ALLOW = 2, 3
ALL, READ, WRITE, CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS = 2, 3, 4, 5, 6, 8, 10

# (resource type, name, pattern, principal, host, operation, permission): what the admin grants in the middle
GRANTS = [
    (TOPIC, "orders", LITERAL, "User:alice", "*", WRITE, ALLOW),
    (TOPIC, "orders", LITERAL, "User:alice", "*", DESCRIBE_CONFIGS, ALLOW),
    (TOPIC, "fin-", PREFIXED, "User:alice", "*", READ, ALLOW),
    (TOPIC, "fin-secret", LITERAL, "User:alice", "*", READ, DENY),
    (TOPIC, "fin-hidden", LITERAL, "User:alice", "*", DESCRIBE, DENY),
    (TOPIC, "doomed", LITERAL, "User:alice", "*", DELETE, ALLOW),
    (TOPIC, "new-", PREFIXED, "User:alice", "*", CREATE, ALLOW),
    (GROUP, "grp-", PREFIXED, "User:alice", "*", READ, ALLOW),
    (GROUP, "billing", LITERAL, "User:alice", "10.0.0.9", READ, ALLOW),  # another host: does not apply
    (GROUP, "grp-", PREFIXED, "User:alice", "*", DESCRIBE_CONFIGS, ALLOW),
    (TRANSACTIONAL_ID, TXN_ID, LITERAL, "User:alice", "*", WRITE, ALLOW),
]

Observed = list[tuple[str, Any]]


class SaslWireClient(WireClient):
    """A `WireClient` whose connection is authenticated with SCRAM-SHA-256 before any other request."""

    def __init__(self, bootstrap: str, user: str, password: str, timeout_s: float = 10.0) -> None:
        super().__init__(bootstrap, timeout_s)
        try:
            self._authenticate(user, password)
        except BaseException:
            self.close()
            raise

    def _authenticate(self, user: str, password: str) -> None:
        handshake = self.request(SaslHandshakeRequest[1](mechanism=MECHANISM))
        if handshake.error_code != 0:
            raise ConnectionError(f"SaslHandshake failed with {handshake.error_code}: {handshake.mechanisms}")
        scram = ScramClient(user, password, MECHANISM)
        first = self.request(SaslAuthenticateRequest[2](auth_bytes=scram.first_message()))
        if first.error_code != 0:
            raise ConnectionError(f"SCRAM first message refused: {first.error_code} {first.error_message}")
        scram.process_server_first_message(first.auth_bytes)
        final = self.request(SaslAuthenticateRequest[2](auth_bytes=scram.final_message()))
        if final.error_code != 0:
            raise ConnectionError(f"SCRAM final message refused: {final.error_code} {final.error_message}")
        scram.process_server_final_message(final.auth_bytes)


def create_topics(client: WireClient, names: list[str]) -> list[tuple[str, int]]:
    topic = CreateTopicsRequest.CreatableTopic
    response = client.request(CreateTopicsRequest[7](
        topics=[topic(name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])
                for name in names],
        timeout_ms=10_000, validate_only=False))
    return sorted((t.name, t.error_code) for t in response.topics)


def create_acls(client: WireClient, bindings: list[tuple[int, str, int, str, str, int, int]]) -> list[int]:
    creation = CreateAclsRequest.AclCreation
    response = client.request(CreateAclsRequest[3](creations=[
        creation(resource_type=rt, resource_name=name, resource_pattern_type=pattern, principal=principal,
                 host=host, operation=operation, permission_type=permission)
        for rt, name, pattern, principal, host, operation, permission in bindings]))
    return [result.error_code for result in response.results]


def _produce(client: WireClient, topic: str, transactional_id: str | None = None) -> int:
    data = ProduceRequest.TopicProduceData
    batch = build_batch([Record(offset=0, timestamp=1_700_000_000_000, key=b"k", value=b"v")], base_offset=0)
    response = client.request(ProduceRequest[9](
        transactional_id=transactional_id, acks=-1, timeout_ms=10_000,
        topic_data=[data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])]))
    code: int = response.responses[0].partition_responses[0].error_code
    return code


def _fetch(client: WireClient, topics: list[str]) -> list[tuple[str, int]]:
    topic_cls = FetchRequest.FetchTopic
    response = client.request(FetchRequest[12](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1_000_000, isolation_level=0, session_id=0,
        session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[topic_cls(topic=name, partitions=[topic_cls.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=100_000)]) for name in topics]))
    partitions = sorted((t.topic, p.error_code) for t in response.responses for p in t.partitions)
    return [("top-level", response.error_code), *partitions]


def _list_offsets(client: WireClient, topics: list[str]) -> list[tuple[str, int]]:
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    response = client.request(ListOffsetsRequest[7](
        replica_id=-1, isolation_level=0, topics=[topic_cls(name=name, partitions=[topic_cls.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-1)]) for name in topics]))
    return sorted((t.name, p.error_code) for t in response.topics for p in t.partitions)


def _metadata(client: WireClient, topics: list[str] | None) -> list[tuple[str, int]]:
    """`topics=None` lists all topics: the answer omits those the principal may not describe."""
    response = client.request(MetadataRequest[12](
        topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=name) for name in topics],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return sorted((t.name, t.error_code) for t in response.topics)


def _find_coordinator(client: WireClient, key: str, key_type: int) -> int:
    response = client.request(FindCoordinatorRequest[4](key_type=key_type, coordinator_keys=[key]))
    code: int = response.coordinators[0].error_code
    return code


def _join_group(client: WireClient, group: str) -> int:
    """JoinGroup v5 with no member id: MEMBER_ID_REQUIRED (79) once the group is authorized."""
    protocol = JoinGroupRequest.JoinGroupRequestProtocol
    response = client.request(JoinGroupRequest[5](
        group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
        group_instance_id=None, protocol_type="consumer", protocols=[protocol(name="range", metadata=b"")]))
    code: int = response.error_code
    return code


def _offset_commit(client: WireClient, group: str, topics: list[str]) -> list[tuple[str, int]]:
    """A simple (generation -1) commit, as a consumer with assign() sends."""
    topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
    response = client.request(OffsetCommitRequest[8](
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[topic_cls(name=name, partitions=[topic_cls.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=0, committed_leader_epoch=-1, committed_metadata="")])
            for name in topics]))
    return sorted((t.name, p.error_code) for t in response.topics for p in t.partitions)


def _offset_fetch(client: WireClient, group: str, topics: list[str]) -> list[tuple[str, int]]:
    topic_cls = OffsetFetchRequest.OffsetFetchRequestTopic
    response = client.request(OffsetFetchRequest[7](
        group_id=group, require_stable=False,
        topics=[topic_cls(name=name, partition_indexes=[0]) for name in topics]))
    partitions = sorted((t.name, p.error_code) for t in response.topics for p in t.partitions)
    return [("group", response.error_code), *partitions]


def _list_groups(client: WireClient) -> tuple[int, list[str]]:
    response = client.request(ListGroupsRequest[4](states_filter=[]))
    return response.error_code, sorted(group.group_id for group in response.groups)


def _init_producer_id(client: WireClient, transactional_id: str | None) -> int:
    response = client.request(InitProducerIdRequest[4](
        transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
    code: int = response.error_code
    return code


def _delete_topics(client: WireClient, names: list[str]) -> list[tuple[str, int]]:
    response = client.request(DeleteTopicsRequest[6](
        topics=[DeleteTopicsRequest.DeleteTopicState(name=name, topic_id=None) for name in names],
        timeout_ms=10_000))
    return sorted((t.name or "<null>", t.error_code) for t in response.responses)


def _describe_configs(client: WireClient, resources: list[tuple[int, str]]) -> list[tuple[int, str, int]]:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    response = client.request(DescribeConfigsRequest[4](
        resources=[resource(resource_type=rt, resource_name=name, configuration_keys=None) for rt, name in resources],
        include_synonyms=False, include_documentation=False))
    return sorted((r.resource_type, r.resource_name, r.error_code) for r in response.results)


def _describe_acls(client: WireClient) -> int:
    response = client.request(DescribeAclsRequest[3](
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1))
    code: int = response.error_code
    return code


def warm_up_coordinators(client: WireClient) -> None:
    """As a super user, wait until the group and transaction coordinators answer (Kafka creates and loads
    __consumer_offsets and __transaction_state on first use), so the scenario's codes do not depend on timing."""
    for key_type in (0, 1):  # group, transaction
        found = client.request_until_ready(FindCoordinatorRequest[4](key_type=key_type, coordinator_keys=["warm-up"]))
        assert found.coordinators[0].error_code == 0, found
    for transactional_id in ("warm-up", None):  # a transactional and an idempotent producer id
        initialised = client.request_until_ready(InitProducerIdRequest[4](
            transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
        assert initialised.error_code == 0, initialised


def run_requests(client: WireClient, phase: str, new_topic: str) -> Observed:
    """The fixed request list; `new_topic` is a name under the `new-` prefix not created before."""
    topics = ["orders", "fin-payments", "fin-secret", "fin-hidden", "ghost"]
    observed: Observed = [
        ("produce orders", _produce(client, "orders")),
        ("produce fin-payments", _produce(client, "fin-payments")),
        ("fetch", _fetch(client, topics)),
        ("list offsets", _list_offsets(client, topics)),
        ("metadata named", _metadata(client, topics)),
        ("metadata all", [(name, code) for name, code in _metadata(client, None) if not name.startswith("__")]),
        ("find coordinator group grp-a", _find_coordinator(client, "grp-a", 0)),
        ("find coordinator txn", _find_coordinator(client, TXN_ID, 1)),
        ("join group grp-a", _join_group(client, "grp-a")),
        ("join group billing", _join_group(client, "billing")),
        ("offset commit grp-a", _offset_commit(client, "grp-a", ["orders", "fin-payments", "fin-secret"])),
        ("offset commit billing", _offset_commit(client, "billing", ["fin-payments"])),
        ("offset fetch grp-a", _offset_fetch(client, "grp-a", ["orders", "fin-payments", "fin-secret"])),
        ("list groups", _list_groups(client)),
        ("init producer id transactional", _init_producer_id(client, TXN_ID)),
        ("init producer id other transactional", _init_producer_id(client, "tx-other")),
        ("init producer id idempotent", _init_producer_id(client, None)),
        ("delete topics", _delete_topics(client, ["doomed", "orders", "ghost"])),
        ("create topics", create_topics(client, [new_topic, "other-topic", "orders"])),
        ("create topics again", create_topics(client, [new_topic])),
        ("describe configs", _describe_configs(client, [(TOPIC, "orders"), (TOPIC, "fin-payments"), (4, "1")])),
        # GROUP (32) on the group, BROKER "" (4), BROKER_LOGGER (8) and CLIENT_METRICS (16) on the cluster
        ("describe configs of other resources", _describe_configs(client, [
            (32, "grp-a"), (32, "billing"), (4, ""), (8, "1"), (16, "subscription")])),
        ("create acls", create_acls(client, [(TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW)])),
        ("describe acls", _describe_acls(client)),
    ]
    return [(f"{phase}: {label}", value) for label, value in observed]

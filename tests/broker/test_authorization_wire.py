"""Authorization as Apache Kafka 4.3.1 decides it, over the wire (issue 29's six findings, KIP-430's authorized
operations, and the answers that used to differ), against one broker shared by the module: a SASL_PLAINTEXT
listener with SCRAM users alice and bob, StandardAuthorizer, `allow.everyone.if.no.acl.found=false`; the PLAINTEXT
listener's `User:ANONYMOUS` is a super user and plays the administrator. Each test uses its own topics and groups
and grants only what its case names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest

from tests.authorization_probes import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER_ACTION,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    IDEMPOTENT_WRITE,
    READ,
    WRITE,
    assigned,
    bits,
    describe_groups,
    fetch,
    group_describe,
    heartbeat,
    metadata,
    offset_fetch,
    topic_id,
)
from tests.interop.acl_scenario import SaslWireClient, _produce, create_acls, create_topics
from tests.scram_mini_kafka import ScramMiniKafka
from tests.wire_client import WireClient

pytestmark = pytest.mark.timeout(120)

TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED = 3, 4
ALLOW = 3
NONE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, TOPIC_AUTHORIZATION_FAILED = 0, 6, 75, 29
ALICE, BOB = ("alice", "alice-secret"), ("bob", "bob-secret")
LISTENER = "SASL_PLAINTEXT"


@pytest.fixture(scope="module")
def broker() -> Iterator[ScramMiniKafka]:
    config = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
              "auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0",
              "offsets.topic.num.partitions": "1"}
    credentials = [f"SCRAM-SHA-256=[name={name},password={password}]" for name, password in (ALICE, BOB)]
    with ScramMiniKafka(credentials, config=config, listeners={LISTENER: LISTENER}) as kafka:
        yield kafka


def admin(broker: ScramMiniKafka) -> WireClient:
    return WireClient(broker.bootstrap_servers)


def user(broker: ScramMiniKafka, who: tuple[str, str] = ALICE) -> SaslWireClient:
    return SaslWireClient(broker.bootstrap_servers_for(LISTENER), *who)


def grant(broker: ScramMiniKafka, *acls: tuple[int, str, int, int], principal: str = "User:alice") -> None:
    """(resource type, name, pattern type, operation) ALLOW for `principal` from any host."""
    with admin(broker) as client:
        assert create_acls(client, [(rt, name, pattern, principal, "*", op, ALLOW)
                                    for rt, name, pattern, op in acls]) == [NONE] * len(acls)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_topics(broker: ScramMiniKafka, *names: str) -> dict[str, uuid.UUID]:
    with admin(broker) as client:
        assert create_topics(client, list(names)) == sorted((name, NONE) for name in names)
        return {name: topic_id(client, name) for name in names}


def test_metadata_by_topic_id_does_not_reveal_the_name(broker: ScramMiniKafka) -> None:
    """Finding 1: a v12 request by id for a topic the caller may not DESCRIBE answers a null name and echoes the
    id (Kafka: topic ids are not sensitive, names are)."""
    secret = unique("secret")
    ids = make_topics(broker, secret)
    with user(broker) as alice:
        response = metadata(alice, ids=[ids[secret]])
    assert [(t.error_code, t.name, t.topic_id, t.partitions) for t in response.topics] == [
        (TOPIC_AUTHORIZATION_FAILED, None, ids[secret], [])]


def test_consumer_group_describe_hides_assignments_of_undescribable_topics(broker: ScramMiniKafka) -> None:
    """Finding 2: DESCRIBE on the group alone does not show a member's assigned topics (names, ids, partitions)."""
    secret, group = unique("secret"), unique("cgd")
    make_topics(broker, secret)
    with admin(broker) as client:
        joined = heartbeat(client, group, str(uuid.uuid4()), names=[secret])
        assert joined.error_code == NONE and assigned(joined)
    grant(broker, (GROUP, group, LITERAL, DESCRIBE))
    with user(broker) as alice:
        response = group_describe(alice, [group])
    [described] = response.groups
    assert (described.error_code, described.members) == (TOPIC_AUTHORIZATION_FAILED, [])
    assert described.error_message == "The group has described topic(s) that the client is not authorized to describe."
    grant(broker, (TOPIC, secret, LITERAL, DESCRIBE))
    with user(broker) as alice:
        [described] = group_describe(alice, [group]).groups
    assert described.error_code == NONE and [m.subscribed_topic_names for m in described.members] == [[secret]]


def test_heartbeat_subscribing_by_name_needs_describe_on_the_topic(broker: ScramMiniKafka) -> None:
    """Finding 3: READ on the group does not let a member be assigned a topic it may not DESCRIBE."""
    secret, group = unique("secret"), unique("cgh")
    make_topics(broker, secret)
    grant(broker, (GROUP, group, LITERAL, READ))
    with user(broker) as alice:
        refused = heartbeat(alice, group, str(uuid.uuid4()), names=[secret])
    assert (refused.error_code, refused.member_id, refused.member_epoch, refused.assignment) == (
        TOPIC_AUTHORIZATION_FAILED, None, 0, None)


def test_a_regex_resolves_only_to_describable_topics(broker: ScramMiniKafka) -> None:
    """Finding 4: a regex subscription matches only the topics the member may DESCRIBE."""
    prefix, group = unique("rx"), unique("rxg")
    ids = make_topics(broker, f"{prefix}-open", f"{prefix}-secret")
    grant(broker, (GROUP, group, LITERAL, READ), (TOPIC, f"{prefix}-open", LITERAL, DESCRIBE))
    with user(broker) as alice:
        joined = heartbeat(alice, group, str(uuid.uuid4()), regex=f"{prefix}-.*")
    assert joined.error_code == NONE
    assert assigned(joined) == {ids[f"{prefix}-open"]: [0]}


def test_a_regex_matches_internal_topics(broker: ScramMiniKafka) -> None:
    """Issue 23, scope 2: every topic of the cluster is matched, internal ones included (Kafka's
    TopicRegexResolver); only DESCRIBE decides. A super user is assigned `__consumer_offsets`, alice without
    DESCRIBE on it is not."""
    group, other = unique("internal"), unique("internal")
    with admin(broker) as client:
        heartbeat(client, unique("warm"), str(uuid.uuid4()), names=["__consumer_offsets"])  # creates the topic
        offsets_id = topic_id(client, "__consumer_offsets")
        joined = heartbeat(client, group, str(uuid.uuid4()), regex="__consumer_offsets")
    assert joined.error_code == NONE and assigned(joined) == {offsets_id: [0]}
    grant(broker, (GROUP, other, LITERAL, READ))
    with user(broker) as alice:
        refused = heartbeat(alice, other, str(uuid.uuid4()), regex="__consumer_offsets")
    assert refused.error_code == NONE and assigned(refused) == {}


def test_create_topics_without_describe_configs_reveals_no_shape(broker: ScramMiniKafka) -> None:
    """Finding 5 (KIP-525): CREATE without DESCRIBE_CONFIGS answers -1 partitions and -1 replication factor."""
    name = unique("new")
    grant(broker, (TOPIC, name, LITERAL, CREATE))
    topic = CreateTopicsRequest.CreatableTopic
    with user(broker) as alice:
        for validate_only in (True, False):
            response = alice.request(CreateTopicsRequest[7](
                topics=[topic(name=name, num_partitions=3, replication_factor=1, assignments=[], configs=[])],
                timeout_ms=10_000, validate_only=validate_only))
            [result] = response.topics
            assert (result.error_code, result.num_partitions, result.replication_factor, result.configs,
                    result.topic_config_error_code) == (NONE, -1, -1, [], TOPIC_AUTHORIZATION_FAILED)


def test_a_follower_fetch_gets_no_records(broker: ScramMiniKafka) -> None:
    """Finding 6: a fetch with a replica id and CLUSTER_ACTION (no topic READ) is refused per partition, as
    Kafka refuses a replica outside the partition's replica set: this broker has no followers."""
    name = unique("replicated")
    make_topics(broker, name)
    with admin(broker) as client:
        assert _produce(client, name) == NONE
        assert fetch(client, name)[0][0] == NONE and fetch(client, name)[0][2] > 0  # a consumer reads it
    grant(broker, (CLUSTER, "kafka-cluster", LITERAL, CLUSTER_ACTION), principal="User:bob")
    with user(broker, BOB) as bob:
        assert fetch(bob, name, replica_id=1) == [(NOT_LEADER_OR_FOLLOWER, -1, 0)]
        assert fetch(bob, name, replica_id=1, leader_epoch=0) == [(UNKNOWN_LEADER_EPOCH, -1, 0)]
        assert fetch(bob, name)[0][0] == TOPIC_AUTHORIZATION_FAILED  # as a consumer it needs READ


def test_authorized_operations_are_reported_when_asked(broker: ScramMiniKafka) -> None:
    """KIP-430: Metadata v10 (topic and cluster), DescribeGroups v5 and ConsumerGroupDescribe report the
    operations the caller may perform, from the same authorizer; nothing when not asked."""
    name, group = unique("ops"), unique("opsg")
    make_topics(broker, name)
    grant(broker, (TOPIC, name, LITERAL, DESCRIBE), (TOPIC, name, LITERAL, READ), (GROUP, group, LITERAL, READ),
          (CLUSTER, "kafka-cluster", LITERAL, DESCRIBE), (CLUSTER, "kafka-cluster", LITERAL, IDEMPOTENT_WRITE))
    with user(broker) as alice:
        asked = metadata(alice, [name], version=10, topic_operations=True, cluster_operations=True)
        assert [bits(t.authorized_operations) for t in asked.topics] == [{READ, DESCRIBE}]
        assert bits(asked.authorized_operations) == {DESCRIBE, IDEMPOTENT_WRITE}
        not_asked = metadata(alice, [name], version=10)
        assert bits(not_asked.topics[0].authorized_operations) is None and bits(not_asked.authorized_operations) is None
        assert heartbeat(alice, group, str(uuid.uuid4()), names=[name]).error_code == NONE
        [described] = group_describe(alice, [group], operations=True).groups
        assert (described.error_code, bits(described.authorized_operations)) == (NONE, {READ, DESCRIBE})
        [(_, error, _state, operations)] = describe_groups(alice, [group])
        assert (error, operations) == (NONE, [READ, DESCRIBE])
    with admin(broker) as client:
        every = {READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS}
        [topic] = metadata(client, [name], version=10, topic_operations=True).topics
        assert bits(topic.authorized_operations) == every


def test_offset_fetch_v1_refuses_an_undescribable_topic(broker: ScramMiniKafka) -> None:
    """OffsetFetch v1 has no top-level error code: a topic the caller may not DESCRIBE answers
    TOPIC_AUTHORIZATION_FAILED on its partitions, as Kafka, not NONE/-1."""
    name, group = unique("of"), unique("ofg")
    make_topics(broker, name)
    grant(broker, (GROUP, group, LITERAL, DESCRIBE))
    with user(broker) as alice:
        answer = offset_fetch(alice, group, [name], version=1)
    assert answer == [("group", NONE), (name, TOPIC_AUTHORIZATION_FAILED, -1)]


def test_add_partitions_to_txn_v5_verify_checks_no_topic_acl(broker: ScramMiniKafka) -> None:
    """v4+ comes from brokers: CLUSTER_ACTION suffices, Kafka checks no WRITE on the topics."""
    name = unique("txn")
    make_topics(broker, name)
    grant(broker, (CLUSTER, "kafka-cluster", LITERAL, CLUSTER_ACTION), principal="User:bob")
    transaction = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    topic = transaction.AddPartitionsToTxnTopic
    with user(broker, BOB) as bob:
        response = bob.request(AddPartitionsToTxnRequest[5](transactions=[transaction(
            transactional_id="tx-none", producer_id=1, producer_epoch=0, verify_only=True,
            topics=[topic(name=name, partitions=[0])])]))
    codes = [p.partition_error_code for r in response.results_by_transaction for t in r.topic_results
             for p in t.results_by_partition]
    assert response.error_code == NONE and codes and TOPIC_AUTHORIZATION_FAILED not in codes

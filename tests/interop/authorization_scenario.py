"""The authorization scenario of tests/interop/test_acl_scenario_comparison.py's `test_every_api_reveals_...`:
one raw request per API the broker advertises, sent as `User:carol` with no ACLs and then under narrow ACLs,
each answer reduced to what it reveals so that Apache Kafka's and minikafka's can be compared as values.

`reveal` keeps every field of an answer except those that differ between any two brokers by nature (throttle
times, messages, member and producer ids, hosts and ports, sizes, timestamps), turns topic ids into the names the
administrator sees (`id:<name>`, `zero`, `unknown-id`), record bytes into their length and sorts every list, so a
broker that answers with one more name, id, offset, config or record byte than the other shows up as a difference.
SaslHandshake and SaslAuthenticate are exercised by every login; ApiVersions needs no authorization and only its
error code is compared."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.messages import REQUEST_CLASSES
from minikafka.protocol.records import Record, build_batch
from tests.interop.acl_scenario import CAROL, SaslWireClient, create_acls, create_topics, warm_up_coordinators
from tests.wire_client import NOT_READY_YET, WireClient

#: What Kafka's producer retries besides NOT_READY_YET (a new partition without its leader yet; a transaction ending)
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS = 3, 6, 7, 19
CONCURRENT_TRANSACTIONS = 51

TOPICS = ("az-open", "az-desc", "az-secret")
TXN_ID = "az-tx"
ONGOING_TXN_ID = "az-ongoing"
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED, ALLOW = 3, 4, 3
READ, WRITE, CREATE, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS = 3, 4, 5, 8, 9, 10
#: The narrow ACLs of the second phase: topic by topic, group by group, nothing by wildcard.
NARROW_GRANTS = [
    (TOPIC, "az-open", LITERAL, "User:carol", "*", op, ALLOW) for op in (READ, WRITE, DESCRIBE_CONFIGS)] + [
    (TOPIC, "az-desc", LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
    (TOPIC, "az-new-", PREFIXED, "User:carol", "*", CREATE, ALLOW),
    (GROUP, "az-grp", LITERAL, "User:carol", "*", READ, ALLOW),
    (GROUP, "az-cg", LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
    (GROUP, "az-rx", LITERAL, "User:carol", "*", READ, ALLOW),
    (GROUP, "az-sg", LITERAL, "User:carol", "*", READ, ALLOW),
    (TRANSACTIONAL_ID, TXN_ID, LITERAL, "User:carol", "*", WRITE, ALLOW),
    (TRANSACTIONAL_ID, ONGOING_TXN_ID, LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
    (CLUSTER, "kafka-cluster", LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
    (CLUSTER, "kafka-cluster", LITERAL, "User:carol", "*", CLUSTER_ACTION, ALLOW),
]
VOLATILE = frozenset({
    "throttle_time_ms", "error_message", "member_id", "host", "port", "cluster_id", "producer_id", "producer_epoch",
    "last_timestamp", "transaction_start_time_ms", "total_bytes", "usable_bytes", "partition_size", "log_dir",
    "session_id", "client_host", "client_id", "leader_epoch", "committed_leader_epoch", "last_sequence",
    "current_txn_start_offset", "member_epoch", "heartbeat_interval_ms", "group_epoch", "assignment_epoch",
    "generation_id", "timestamp", "transaction_timeout_ms", "rack", "next_cursor", "topic_authorized_operations",
    "unknown_tags", "tags", "version", "supported_features", "finalized_features", "finalized_features_epoch",
    "zk_migration_ready", "api_keys", "leader", "protocol_data", "protocol_type", "group_state",
    "assignor_name", "member_type", "instance_id", "rack_id", "offset_lag", "is_future_key", "is_cordoned",
})

Observed = list[tuple[str, Any]]


@dataclass
class Context:
    """Per broker: the administrator's view of topic ids, to name the ids an answer reveals."""

    names_by_id: dict[uuid.UUID, str]
    ghost_id: uuid.UUID

    def id_of(self, name: str) -> uuid.UUID:
        return next(topic_id for topic_id, topic in self.names_by_id.items() if topic == name)


def reveal(value: Any, ctx: Context) -> Any:
    """The comparable content of an answer (see the module docstring)."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    if isinstance(value, dict):
        return {key: reveal(_as_uuid(item) if key == "topic_id" else item, ctx)
                for key, item in sorted(value.items()) if key not in VOLATILE}
    if isinstance(value, (list, tuple, set, frozenset)):
        return sorted((reveal(item, ctx) for item in value), key=repr)
    if isinstance(value, uuid.UUID):
        if value.int == 0:
            return "zero"
        return f"id:{ctx.names_by_id[value]}" if value in ctx.names_by_id else "unknown-id"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    return value


def _as_uuid(value: Any) -> Any:
    """to_dict() gives topic ids as text: canonical UUIDs, or Kafka's base64 form in the generated classes."""
    if not isinstance(value, str) or value.startswith("id:") or value in ("zero", "unknown-id"):
        return value  # not an id, or already revealed
    try:
        return uuid.UUID(value)
    except ValueError:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))


def build(cls: Any, fields: dict[str, Any]) -> Any:
    """A request (or nested struct) from plain dicts: nested structs are dicts, struct arrays lists of dicts;
    fields left out take the schema's defaults."""
    kwargs = {}
    for key, value in fields.items():
        field = cls._struct.fields[key]
        if isinstance(value, dict):
            kwargs[key] = build(field.data_class, value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            kwargs[key] = [build(field.data_class, item) for item in value]
        else:
            kwargs[key] = value
    return cls(**kwargs)


def request(key: ApiKey, version: int, **fields: Any) -> Any:
    return build(REQUEST_CLASSES[key][version], fields)


def send(client: WireClient, key: ApiKey, version: int, **fields: Any) -> Any:
    return client.request(request(key, version, **fields))


def one_record() -> bytes:
    return bytes(build_batch([Record(offset=0, timestamp=1_700_000_000_000, key=b"k", value=b"v")], base_offset=0))


def produce_request(topics: list[str], transactional_id: str | None = None) -> Any:
    return request(ApiKey.PRODUCE, 9, transactional_id=transactional_id, acks=-1, timeout_ms=10_000,
                   topic_data=[{"name": name, "partition_data": [{"index": 0, "records": one_record()}]}
                               for name in topics])


def produce(client: WireClient, topics: list[str], transactional_id: str | None = None) -> Any:
    return client.request(produce_request(topics, transactional_id))


def prepare(admin: WireClient) -> Context:
    """As the administrator: the topics with one record each, committed offsets of group az-grp, a KIP-848
    member of az-cg assigned az-secret, the transactional id az-tx initialised and az-ongoing's transaction
    open over az-open and az-secret."""
    warm_up_coordinators(admin)
    assert create_topics(admin, list(TOPICS)) == sorted((name, 0) for name in TOPICS)
    for name in TOPICS:  # one record each; Kafka's new partitions take a moment to get their leader
        _until_ok(admin, produce_request([name]),
                  lambda produced: [p.error_code for t in produced.responses for p in t.partition_responses],
                  NOT_READY_YET | {UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
                                  NOT_ENOUGH_REPLICAS})
    _until_ok(admin, request(ApiKey.OFFSET_COMMIT, 8, group_id="az-grp", generation_id_or_member_epoch=-1,
                             topics=[{"name": name, "partitions": [{"partition_index": 0, "committed_offset": 1}]}
                                     for name in TOPICS]),
              lambda committed: [p.error_code for t in committed.topics for p in t.partitions])
    joined = admin.request_until_ready(request(
        ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id="az-cg", member_id=str(uuid.uuid4()), member_epoch=0,
        rebalance_timeout_ms=30_000, subscribed_topic_names=["az-secret"], topic_partitions=[]))
    assert joined.error_code == 0, joined
    assert admin.request_until_ready(request(
        ApiKey.INIT_PRODUCER_ID, 4, transactional_id=TXN_ID, transaction_timeout_ms=60_000, producer_id=-1,
        producer_epoch=-1)).error_code == 0
    # an ongoing transaction over a topic carol may describe and one she may not
    producer = admin.request_until_ready(request(
        ApiKey.INIT_PRODUCER_ID, 4, transactional_id=ONGOING_TXN_ID, transaction_timeout_ms=300_000,
        producer_id=-1, producer_epoch=-1))
    _until_ok(admin, request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id=ONGOING_TXN_ID,
                             v3_and_below_producer_id=producer.producer_id,
                             v3_and_below_producer_epoch=producer.producer_epoch,
                             v3_and_below_topics=[{"name": t, "partitions": [0]} for t in ("az-open", "az-secret")]),
              lambda added: [p.partition_error_code for t in added.results_by_topic_v3_and_below
                             for p in t.results_by_partition],
              NOT_READY_YET | {CONCURRENT_TRANSACTIONS})
    listed = send(admin, ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False)
    return Context({t.topic_id: t.name for t in listed.topics}, uuid.uuid4())


def _until_ok(client: WireClient, sent: Any, codes: Callable[[Any], list[int]],
              retriable: frozenset[int] = NOT_READY_YET) -> Any:
    """`sent` resent while its answer has a code Kafka's clients retry for it (`retriable`), then all codes 0."""
    answer = client.request_until_ready(sent, retriable=retriable, codes=codes)
    assert set(codes(answer)) == {0}, answer
    return answer


def _heartbeat_until_assigned(client: WireClient, group: str, **subscription: Any) -> Any:
    """Join, then heartbeat until the member has an assignment (Kafka resolves a regex asynchronously, so its
    first answer may come before the resolution) or 20 s passed; the last answer."""
    member_id = str(uuid.uuid4())
    answer = send(client, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member_id, member_epoch=0,
                  rebalance_timeout_ms=30_000, topic_partitions=[], **subscription)
    deadline = time.monotonic() + 20
    while answer.error_code == 0 and not (answer.assignment and answer.assignment.topic_partitions) \
            and time.monotonic() < deadline:
        time.sleep(0.3)
        answer = send(client, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member_id,
                      member_epoch=answer.member_epoch)
    send(client, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member_id, member_epoch=-1)
    return answer


def _share_group(client: WireClient) -> Any:
    """A share-group member of az-sg: join subscribed to a topic carol may not describe, then to one she may, a
    ShareFetch opening its session over a readable and an unreadable topic, a ShareAcknowledge on that
    session and one with a wrong epoch, then leave; the error codes and the fetch answer."""
    member_id = str(uuid.uuid4())
    answers: list[Any] = []
    for topics in (["az-secret"], ["az-open"]):
        joined = send(client, ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="az-sg", member_id=member_id, member_epoch=0,
                      subscribed_topic_names=topics)
        answers.append(joined.error_code)
    ids = client_topic_ids(client)[:2]  # Kafka 4.3.1 answers UNKNOWN_SERVER_ERROR to an unknown topic id here
    answers.append(send(client, ApiKey.SHARE_FETCH, 1, group_id="az-sg", member_id=member_id, share_session_epoch=0,
                        max_wait_ms=0, min_bytes=1, max_bytes=100_000, max_records=10, batch_size=10,
                        topics=[{"topic_id": topic_id, "partitions": [{"partition_index": 0}]} for topic_id in ids],
                        forgotten_topics_data=[]))
    for epoch in (1, 7):
        answers.append(send(client, ApiKey.SHARE_ACKNOWLEDGE, 1, group_id="az-sg", member_id=member_id,
                            share_session_epoch=epoch, topics=[]).error_code)
    answers.append(send(client, ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="az-sg", member_id=member_id,
                        member_epoch=-1).error_code)
    return answers


def client_topic_ids(client: WireClient) -> list[uuid.UUID | None]:
    """Set by `probes` per broker: the ids of az-open, az-secret and a ghost topic."""
    return _SHARE_TOPIC_IDS


_SHARE_TOPIC_IDS: list[uuid.UUID | None] = []


def _fetch(client: WireClient, version: int, topics: list[dict[str, Any]], replica_id: int = -1) -> Any:
    return send(client, ApiKey.FETCH, version, replica_id=replica_id, max_wait_ms=0, min_bytes=0,
                max_bytes=1_000_000, isolation_level=0, session_id=0, session_epoch=-1, topics=topics)


def _partition(**extra: Any) -> dict[str, Any]:
    return {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
            "partition_max_bytes": 100_000, **extra}


def probes(ctx: Context) -> list[tuple[str, Callable[[WireClient], Any]]]:
    """(label, request) for every advertised API; each returns the raw answer (or an already reduced value)."""
    every = [*TOPICS, "az-ghost"]
    by_id = [ctx.id_of("az-open"), ctx.id_of("az-secret"), ctx.ghost_id]
    _SHARE_TOPIC_IDS[:] = by_id
    tp0 = [{"partition_index": 0}]

    def txn_verify(client: WireClient) -> Any:
        return send(client, ApiKey.ADD_PARTITIONS_TO_TXN, 5, transactions=[{
            "transactional_id": TXN_ID, "producer_id": 0, "producer_epoch": 0, "verify_only": True,
            "topics": [{"name": t, "partitions": [0]} for t in ("az-open", "az-secret")]}])

    def config_resources(kind: int, names: list[str], op: bool = False) -> list[dict[str, Any]]:
        config = {"name": "retention.ms", "value": "3600000", **({"config_operation": 0} if op else {})}
        return [{"resource_type": kind, "resource_name": name, "configs": [config]} for name in names]

    return [
        ("produce", lambda c: produce(c, ["az-open", "az-secret"])),
        ("fetch by name", lambda c: _fetch(c, 12, [{"topic": t, "partitions": [_partition()]} for t in every])),
        ("fetch by id", lambda c: _fetch(c, 13, [{"topic_id": i, "partitions": [_partition()]} for i in by_id])),
        ("fetch as a follower", lambda c: _fetch(c, 12, [{"topic": "az-open", "partitions": [_partition()]}],
                                                 replica_id=5)),
        ("list offsets", lambda c: send(c, ApiKey.LIST_OFFSETS, 7, replica_id=-1, topics=[
            {"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]} for t in every])),
        ("metadata named", lambda c: send(c, ApiKey.METADATA, 12, allow_auto_topic_creation=False,
                                          topics=[{"name": t} for t in every])),
        ("metadata all", lambda c: [t for t in reveal(send(c, ApiKey.METADATA, 12, topics=None,
                                                           allow_auto_topic_creation=False), ctx)["topics"]
                                    if str(t["name"]).startswith("az-")]),
        ("metadata by id", lambda c: send(c, ApiKey.METADATA, 12, allow_auto_topic_creation=False,
                                          topics=[{"name": None, "topic_id": i} for i in by_id])),
        ("metadata v10 with operations", lambda c: send(
            c, ApiKey.METADATA, 10, allow_auto_topic_creation=False, include_topic_authorized_operations=True,
            include_cluster_authorized_operations=True, topics=[{"name": t} for t in every])),
        ("api versions", lambda c: send(c, ApiKey.API_VERSIONS, 3, client_software_name="probe",
                                        client_software_version="1").error_code),
        ("create topics", lambda c: [
            (t.name, t.error_code, t.num_partitions, t.replication_factor, t.topic_config_error_code, bool(t.configs))
            for t in send(c, ApiKey.CREATE_TOPICS, 7, timeout_ms=10_000, validate_only=True, topics=[
                {"name": name, "num_partitions": 1, "replication_factor": 1}
                for name in ("az-new-topic", "az-other", "az-open")]).topics]),
        ("delete topics", lambda c: send(c, ApiKey.DELETE_TOPICS, 6, timeout_ms=10_000, topics=[
            {"name": name} for name in ("az-secret", "az-ghost")])),
        ("init producer id", lambda c: [send(c, ApiKey.INIT_PRODUCER_ID, 4, transactional_id=txn,
                                             transaction_timeout_ms=60_000, producer_id=-1,
                                             producer_epoch=-1).error_code for txn in (TXN_ID, "az-other-tx", None)]),
        ("offset for leader epoch", lambda c: send(c, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=[
            {"topic": t, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}
            for t in every])),
        ("add partitions to txn", lambda c: send(
            c, ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=0,
            v3_and_below_producer_epoch=0, v3_and_below_topics=[{"name": t, "partitions": [0]}
                                                               for t in ("az-open", "az-secret")])),
        ("add partitions to txn v5 verify", txn_verify),
        ("add offsets to txn", lambda c: send(c, ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=TXN_ID,
                                              producer_id=0, producer_epoch=0, group_id="az-grp")),
        ("end txn", lambda c: send(c, ApiKey.END_TXN, 3, transactional_id=TXN_ID, producer_id=0, producer_epoch=0,
                                   committed=False)),
        # Past the authorizer the transaction check answers differently (Kafka INVALID_PRODUCER_ID_MAPPING,
        # minikafka INVALID_TXN_STATE or INVALID_PRODUCER_EPOCH for a producer id not the transaction's): that is
        # not authorization, so only the authorization outcome per partition is compared.
        ("txn offset commit", lambda c: sorted((t.name, _authorization_outcome(p.error_code))
                                               for t in send(c, ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id=TXN_ID,
                                                             group_id="az-grp", producer_id=999_999, producer_epoch=0,
                                                             topics=[{"name": t, "partitions": [
                                                                 {"partition_index": 0, "committed_offset": 0}]}
                                                                 for t in ("az-open", "az-secret")]).topics
                                               for p in t.partitions)),
        ("describe transactions", lambda c: send(c, ApiKey.DESCRIBE_TRANSACTIONS, 0,
                                                 transactional_ids=[TXN_ID, ONGOING_TXN_ID, "az-ghost-tx"])),
        ("list transactions", lambda c: [s for s in reveal(send(c, ApiKey.LIST_TRANSACTIONS, 1), ctx)
                                         ["transaction_states"] if str(s["transactional_id"]).startswith("az-")]),
        ("describe acls", lambda c: send(c, ApiKey.DESCRIBE_ACLS, 3, resource_type_filter=2,
                                         resource_name_filter="az-open", pattern_type_filter=3, operation=1,
                                         permission_type=1).error_code),
        ("create acls", lambda c: create_acls(c, [(TOPIC, "az-open", LITERAL, "User:carol", "*", 7, ALLOW)])),
        ("delete acls", lambda c: send(c, ApiKey.DELETE_ACLS, 3, filters=[{
            "resource_type_filter": TOPIC, "resource_name_filter": "az-none", "pattern_type_filter": LITERAL,
            "principal_filter": "User:carol", "operation": 1, "permission_type": 1}])),
        ("describe configs", lambda c: [
            (r.resource_type, r.resource_name, r.error_code, bool(r.configs))
            for r in send(c, ApiKey.DESCRIBE_CONFIGS, 4, resources=[
                {"resource_type": kind, "resource_name": name, "configuration_keys": None}
                for kind, name in ((TOPIC, "az-open"), (TOPIC, "az-secret"), (TOPIC, "az-ghost"), (4, "1"))]
            ).results]),
        ("list config resources", lambda c: [send(c, ApiKey.LIST_CONFIG_RESOURCES, 1, resource_types=[4, 8]),
                                             send(c, ApiKey.LIST_CONFIG_RESOURCES, 0).error_code]),
        ("alter configs", lambda c: send(c, ApiKey.ALTER_CONFIGS, 2, validate_only=True,
                                         resources=config_resources(TOPIC, ["az-open", "az-secret"]))),
        ("incremental alter configs", lambda c: send(
            c, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=True,
            resources=config_resources(TOPIC, ["az-open", "az-secret"], op=True))),
        ("create partitions", lambda c: send(c, ApiKey.CREATE_PARTITIONS, 3, timeout_ms=10_000, validate_only=True,
                                             topics=[{"name": t, "count": 2, "assignments": None}
                                                     for t in ("az-open", "az-secret", "az-ghost")])),
        ("find coordinator", lambda c: [(r.key, r.error_code, r.node_id) for kind, key in (
            (0, "az-grp"), (0, "az-secret-grp"), (1, TXN_ID), (1, "az-other-tx"))
            for r in send(c, ApiKey.FIND_COORDINATOR, 4, key_type=kind, coordinator_keys=[key]).coordinators]),
        ("join group", lambda c: [send(c, ApiKey.JOIN_GROUP, 5, group_id=g, session_timeout_ms=10_000,
                                       rebalance_timeout_ms=10_000, member_id="", protocol_type="consumer",
                                       protocols=[{"name": "range", "metadata": b""}]).error_code
                                  for g in ("az-grp", "az-cg")]),
        ("heartbeat", lambda c: send(c, ApiKey.HEARTBEAT, 4, group_id="az-grp", generation_id=1,
                                     member_id="m").error_code),
        ("sync group", lambda c: send(c, ApiKey.SYNC_GROUP, 5, group_id="az-grp", generation_id=1, member_id="m",
                                      protocol_type="consumer", protocol_name="range").error_code),
        ("leave group", lambda c: send(c, ApiKey.LEAVE_GROUP, 5, group_id="az-grp",
                                       members=[{"member_id": "m"}])),
        ("describe groups", lambda c: send(c, ApiKey.DESCRIBE_GROUPS, 5, include_authorized_operations=True,
                                           groups=["az-grp", "az-cg", "az-ghost-grp"])),
        ("list groups", lambda c: [g for g in reveal(send(c, ApiKey.LIST_GROUPS, 5), ctx)["groups"]
                                   if str(g["group_id"]).startswith("az-")]),
        ("offset commit", lambda c: send(c, ApiKey.OFFSET_COMMIT, 8, group_id="az-grp",
                                         generation_id_or_member_epoch=-1, topics=[
            {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1}]} for t in every])),
        ("offset fetch v1", lambda c: send(c, ApiKey.OFFSET_FETCH, 1, group_id="az-grp", topics=[
            {"name": t, "partition_indexes": [0]} for t in every])),
        ("offset fetch v7", lambda c: send(c, ApiKey.OFFSET_FETCH, 7, group_id="az-grp", topics=[
            {"name": t, "partition_indexes": [0]} for t in every])),
        ("offset fetch v8 all", lambda c: send(c, ApiKey.OFFSET_FETCH, 8, groups=[
            {"group_id": g, "topics": None} for g in ("az-grp", "az-cg")])),
        ("consumer group heartbeat by name", lambda c: _heartbeat_until_assigned(
            c, "az-rx", subscribed_topic_names=["az-secret"])),
        ("consumer group heartbeat by regex", lambda c: _heartbeat_until_assigned(
            c, "az-rx", subscribed_topic_regex="az-.*")),
        ("consumer group describe", lambda c: send(c, ApiKey.CONSUMER_GROUP_DESCRIBE, 1,
                                                   group_ids=["az-cg", "az-grp", "az-ghost-cg"],
                                                   include_authorized_operations=True)),
        ("delete groups", lambda c: send(c, ApiKey.DELETE_GROUPS, 2, groups_names=["az-grp", "az-ghost-grp"])),
        ("offset delete", lambda c: send(c, ApiKey.OFFSET_DELETE, 0, group_id="az-grp", topics=[
            {"name": t, "partitions": tp0} for t in ("az-open", "az-secret")])),
        ("delete records", lambda c: send(c, ApiKey.DELETE_RECORDS, 2, timeout_ms=10_000, topics=[
            {"name": t, "partitions": [{"partition_index": 0, "offset": 0}]} for t in every])),
        ("describe log dirs", lambda c: _log_dir_topics(send(c, ApiKey.DESCRIBE_LOG_DIRS, 4, topics=None))),
        ("describe cluster", lambda c: send(c, ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True)),
        ("describe producers", lambda c: send(c, ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
            {"name": t, "partition_indexes": [0]} for t in every])),
        ("describe topic partitions", lambda c: send(c, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0,
                                                     topics=[{"name": t} for t in every])),
        # users=None ("all") would not do: Kafka 4.3.1's error answer fails on it (getErrorResponse iterates them)
        ("describe user scram credentials", lambda c: send(c, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=[
            {"name": name} for name in ("admin", "carol", "az-ghost-user")])),
        ("alter user scram credentials", lambda c: send(c, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=[
            {"name": "az-ghost-user", "mechanism": 1}], upsertions=[])),
        ("describe client quotas", lambda c: send(c, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, components=[],
                                                  strict=False).error_code),
        ("alter client quotas", lambda c: send(c, ApiKey.ALTER_CLIENT_QUOTAS, 1, validate_only=True, entries=[{
            "entity": [{"entity_type": "user", "entity_name": "az-user"}],
            "ops": [{"key": "consumer_byte_rate", "value": 1024.0, "remove": False}]}])),
        # error codes only: Kafka's CLUSTER_AUTHORIZATION_FAILED message prints the whole request
        ("elect leaders", lambda c: _election_errors(send(
            c, ApiKey.ELECT_LEADERS, 2, election_type=0, timeout_ms=10_000,
            topic_partitions=[{"topic": t, "partitions": [0]} for t in every]))),
        ("share group", _share_group),
        ("describe share group offsets", lambda c: send(c, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[
            {"group_id": g, "topics": [{"topic_name": t, "partitions": [0]} for t in ("az-open", "az-secret")]}
            for g in ("az-ghost-sg", "az-grp")])),  # az-sg's state: Kafka initialises it asynchronously
        ("alter share group offsets", lambda c: send(c, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="az-sg",
                                                     topics=[{"topic_name": t, "partitions": [
                                                         {"partition_index": 0, "start_offset": 0}]}
                                                         for t in ("az-open", "az-secret")])),
        ("delete share group offsets", lambda c: send(c, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="az-sg",
                                                      topics=[{"topic_name": t} for t in ("az-open", "az-secret")])),
        ("share group describe", lambda c: send(c, ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=["az-sg", "az-ghost-sg"],
                                                include_authorized_operations=True)),
    ]


#: Kafka's authorization error codes (topic, group, cluster, transactional id, delegation token)
AUTHORIZATION_ERRORS = frozenset({29, 30, 31, 53, 65})


def _authorization_outcome(code: int) -> int | str:
    return code if code in AUTHORIZATION_ERRORS or code == 0 else "past the authorizer"


def _election_errors(response: Any) -> tuple[int, list[tuple[str, int, int]]]:
    return response.error_code, sorted((t.topic, p.partition_id, p.error_code)
                                       for t in response.replica_election_results for p in t.partition_result)


def _log_dir_topics(response: Any) -> tuple[int, list[tuple[str, int]]]:
    return response.error_code, sorted((t.name, len(t.partitions)) for r in response.results for t in r.topics
                                       if t.name.startswith("az-"))


def run(bootstrap_sasl: str, admin_login: tuple[str, str]) -> Observed:
    """The scenario against one broker: prepare as the administrator, probe as carol without ACLs, grant the
    narrow ACLs, probe again."""
    with SaslWireClient(bootstrap_sasl, *admin_login) as admin:
        ctx = prepare(admin)
    observed: Observed = []
    for phase in ("no ACLs", "narrow ACLs"):
        if phase == "narrow ACLs":
            with SaslWireClient(bootstrap_sasl, *admin_login) as admin:
                assert create_acls(admin, NARROW_GRANTS) == [0] * len(NARROW_GRANTS)
        with SaslWireClient(bootstrap_sasl, *CAROL) as carol:
            for label, probe in probes(ctx):
                observed.append((f"{phase}: {label}", reveal(probe(carol), ctx)))
    return observed


#: APIs this scenario sends, to check it covers every advertised one.
def covered_api_keys() -> set[ApiKey]:
    return {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.API_VERSIONS,
            ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH,
            ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT,
            ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS,
            ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.CREATE_PARTITIONS,
            ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
            ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.OFFSET_COMMIT,
            ApiKey.OFFSET_FETCH, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
            ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE, ApiKey.DELETE_RECORDS, ApiKey.DESCRIBE_LOG_DIRS,
            ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_PRODUCERS, ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,  # every login
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.LIST_CONFIG_RESOURCES,
            ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE,  # "share group"
            ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS, ApiKey.ELECT_LEADERS}

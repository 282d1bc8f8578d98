"""ACL authorization of authenticated principals: SASL_PLAINTEXT with SCRAM, StandardAuthorizer,
`super.users=User:admin` (admin bootstrapped with `serve --add-scram`). `User:alice`, whose SCRAM credential admin
creates with AlterUserScramCredentials, is refused produce, consume, group join, transactional produce and topic
deletion with Kafka's codes as confluent-kafka and kafka-python report them, and succeeds once admin grants the
ACLs with CreateAcls. The grants are alice's only: the same client as `User:ANONYMOUS` on the PLAINTEXT listener
stays refused.

Internal topics, as Kafka 4 does: Produce to `__consumer_offsets` fails TOPIC_AUTHORIZATION_FAILED without WRITE
on it and INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic") with it (ReplicaManager.appendToLocalLog;
only the client id `__admin_client` is exempt there); DeleteTopics of it fails TOPIC_AUTHORIZATION_FAILED without
DELETE on it. With DELETE, Kafka 4 deletes it: neither ControllerApis.deleteTopics nor
ReplicationControlManager.deleteTopic has an internal-topic guard (only kafka-topics refuses, client-side), and
minikafka does the same (the module's last step)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError

from tests.integration import acl_clients
from tests.integration.acl_clients import TIMEOUT_S, error_code_of, grant
from tests.integration.sasl_broker import SaslMiniKafka

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ALICE = "User:alice"
allow = functools.partial(acl_clients.allow, ALICE)
INVALID_TOPIC_EXCEPTION = 17  # librdkafka's KafkaError.TOPIC_EXCEPTION

pytestmark = pytest.mark.timeout(240)


def scram(user: str, password: str) -> dict[str, Any]:
    return {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
            "sasl.password": password}


@pytest.fixture(scope="module")
def kafka() -> Iterator[SaslMiniKafka]:
    config = {"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512", "authorizer.class.name": STANDARD_AUTHORIZER,
              "super.users": "User:admin", "auto.create.topics.enable": "false", "offsets.topic.num.partitions": 1,
              "group.initial.rebalance.delay.ms": 0}
    broker = SaslMiniKafka(config, listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
                           add_scram=["SCRAM-SHA-512=[name=admin,password=admin-secret]"])
    with broker:
        yield broker


class Clients:
    """Bootstrap addresses and client configs for admin (super user), alice and ANONYMOUS (PLAINTEXT)."""

    def __init__(self, kafka: SaslMiniKafka) -> None:
        self.sasl = kafka.bootstrap_servers_for("SASL_PLAINTEXT")
        self.plaintext = kafka.bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": self.sasl, **scram("admin", "admin-secret")})
        self.alice = {"bootstrap.servers": self.sasl, **scram("alice", "alice-secret")}
        self.alice_admin = AdminClient(self.alice)


def produce(config: dict[str, Any], topic: str) -> list[int]:
    """One record; the delivery error codes (empty when delivered)."""
    errors: list[int] = []
    producer = Producer({**config, "message.timeout.ms": 8000})
    producer.produce(topic, b"value", key=b"key", on_delivery=lambda err, _msg: err and errors.append(err.code()))
    assert producer.flush(TIMEOUT_S) == 0
    return errors


def first_consumer_error_or_value(config: dict[str, Any], topic: str, group: str) -> Any:
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        for _ in range(TIMEOUT_S * 2):
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                return message.error().code()
            consumer.commit(message, asynchronous=False)
            return message.value()
        raise AssertionError("neither a record nor an error")
    finally:
        consumer.close()


def kafka_python_producer(bootstrap: str, **options: Any) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                         sasl_plain_password="alice-256", max_block_ms=10_000, **options)


def test_an_authenticated_principal_is_refused_until_granted(kafka: SaslMiniKafka) -> None:
    clients = Clients(kafka)
    suffix = uuid.uuid4().hex[:6]
    topic, doomed, txn_topic, group, txn_id = (f"orders-{suffix}", f"doomed-{suffix}", f"txn-{suffix}",
                                               f"group-{suffix}", f"tx-{suffix}")
    for future in clients.admin.create_topics([NewTopic(name, 1, 1) for name in (topic, doomed, txn_topic)]).values():
        future.result(timeout=TIMEOUT_S)
    # admin (a super user, authenticated over SCRAM) creates alice's credentials for both mechanisms
    for mechanism, password in ((ScramMechanism.SCRAM_SHA_512, "alice-secret"),
                                (ScramMechanism.SCRAM_SHA_256, "alice-256")):
        upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, 4096), password.encode())
        for future in clients.admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=TIMEOUT_S)

    # Refused, with Kafka's codes as each client reports them.
    assert produce(clients.alice, topic) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    plain = kafka_python_producer(clients.sasl, enable_idempotence=False)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            plain.send(topic, b"v").get(timeout=TIMEOUT_S)
    finally:
        plain.close(5)
    assert first_consumer_error_or_value(clients.alice, topic, group) == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(clients.admin, allow(ResourceType.GROUP, group, AclOperation.READ))
    assert first_consumer_error_or_value(clients.alice, topic, group) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    transactional = Producer({**clients.alice, "transactional.id": txn_id})
    with pytest.raises(KafkaException) as raised:
        transactional.init_transactions(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error_code_of(clients.alice_admin.delete_topics([doomed])[doomed]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert set(clients.alice_admin.list_topics(timeout=TIMEOUT_S).topics) == set()  # nothing may be described
    for name in ("__consumer_offsets", topic):  # internal topic, no ACL on it: refused like any other
        assert produce(clients.alice, name) == [KafkaError.TOPIC_AUTHORIZATION_FAILED], name
    assert error_code_of(clients.alice_admin.delete_topics(["__consumer_offsets"])["__consumer_offsets"]) == (
        KafkaError.TOPIC_AUTHORIZATION_FAILED)

    # Granted (CreateAcls by admin): the same operations succeed as alice.
    grant(clients.admin,
          allow(ResourceType.TOPIC, topic, AclOperation.WRITE),
          allow(ResourceType.TOPIC, topic, AclOperation.READ),
          allow(ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE),
          allow(ResourceType.TOPIC, txn_topic, AclOperation.WRITE),
          allow(ResourceType.TOPIC, doomed, AclOperation.DELETE))
    assert produce(clients.alice, topic) == []
    idempotent = kafka_python_producer(clients.sasl, enable_idempotence=True)
    try:
        assert idempotent.send(topic, b"idempotent").get(timeout=TIMEOUT_S).offset == 1
    finally:
        idempotent.close(5)
    assert first_consumer_error_or_value(clients.alice, topic, group) == b"value"
    transactional = Producer({**clients.alice, "transactional.id": txn_id})
    transactional.init_transactions(TIMEOUT_S)
    transactional.begin_transaction()
    transactional.produce(txn_topic, b"in-txn")
    transactional.commit_transaction(TIMEOUT_S)
    clients.alice_admin.delete_topics([doomed])[doomed].result(timeout=TIMEOUT_S)
    assert set(clients.alice_admin.list_topics(timeout=TIMEOUT_S).topics) == {topic, txn_topic}

    # The grants name User:alice: ANONYMOUS on the PLAINTEXT listener is still refused.
    assert produce({"bootstrap.servers": clients.plaintext}, topic) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_internal_topic_is_not_written_even_with_broad_acls_and_deleted_only_with_delete(kafka: SaslMiniKafka) -> None:
    clients = Clients(kafka)
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          b"carol-secret")
    for future in clients.admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=TIMEOUT_S)
    grant(clients.admin, AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, "User:carol", "*",
                                    AclOperation.WRITE, AclPermissionType.ALLOW),
          AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, "User:carol", "*",
                     AclOperation.DESCRIBE, AclPermissionType.ALLOW))
    carol = {"bootstrap.servers": clients.sasl, **scram("carol", "carol-secret")}
    assert produce(carol, "__consumer_offsets") == [INVALID_TOPIC_EXCEPTION]
    # WRITE on every topic is not DELETE: the offsets topic stays
    carol_admin = AdminClient(carol)
    assert error_code_of(carol_admin.delete_topics(["__consumer_offsets"])["__consumer_offsets"]) == (
        KafkaError.TOPIC_AUTHORIZATION_FAILED)
    assert "__consumer_offsets" in clients.admin.list_topics(timeout=TIMEOUT_S).topics

    # With DELETE on it Kafka 4 deletes it (no internal-topic guard in the controller); so does minikafka, and the
    # next group coordinator lookup creates it again. Destructive: the last step of this module.
    grant(clients.admin, AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, "User:carol", "*",
                                    AclOperation.DELETE, AclPermissionType.ALLOW))
    carol_admin.delete_topics(["__consumer_offsets"])["__consumer_offsets"].result(timeout=TIMEOUT_S)
    assert "__consumer_offsets" not in clients.admin.list_topics(timeout=TIMEOUT_S).topics
    admin_config = {"bootstrap.servers": clients.sasl, **scram("admin", "admin-secret")}
    topic = f"after-{uuid.uuid4().hex[:6]}"
    for future in clients.admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=TIMEOUT_S)
    assert produce(admin_config, topic) == []
    assert first_consumer_error_or_value(admin_config, topic, f"group-{topic}") == b"value"
    assert "__consumer_offsets" in clients.admin.list_topics(timeout=TIMEOUT_S).topics

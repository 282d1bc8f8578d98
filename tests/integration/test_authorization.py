"""ACL authorization with real clients (confluent-kafka, kafka-python) as an ordinary principal.

On PLAINTEXT every client is `User:ANONYMOUS`. The broker starts with `super.users=User:ANONYMOUS` so the test can
create topics and grant itself ALTER on the cluster (enough to manage ACLs, nothing else), then restarts on the same
data dir with `super.users` empty: the ACLs persist and the clients are now refused produce, consume, group join,
transactional produce and topic deletion with Kafka's codes — and succeed once the test grants the ACLs."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError
from kafka.protocol.producer.transaction import InitProducerIdRequest

from tests.broker_process import BrokerProcess
from tests.integration import acl_clients
from tests.integration.acl_clients import TIMEOUT_S, error_code_of, grant
from tests.wire_client import WireClient

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ME = "User:ANONYMOUS"
allow = functools.partial(acl_clients.allow, ME)
CLUSTER_AUTHORIZATION_FAILED = 31

pytestmark = pytest.mark.timeout(240)


def produce_confluent(bootstrap: str, topic: str, config: dict[str, Any] | None = None) -> list[Any]:
    """One record; returns the delivery errors (empty when delivered)."""
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 8000, **(config or {})})
    producer.produce(topic, b"value", key=b"key", on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    return errors


def init_idempotent_producer(bootstrap: str) -> int:
    """InitProducerId without a transactional id (what an idempotent producer sends first); its error code."""
    with WireClient(bootstrap) as client:
        response = client.request_until_ready(InitProducerIdRequest[4](
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        code: int = response.error_code
        return code


def first_consumer_error_or_value(bootstrap: str, topic: str, group: str) -> Any:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
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


def test_an_ordinary_principal_is_refused_until_granted(broker_factory: Callable[..., BrokerProcess]) -> None:
    suffix = uuid.uuid4().hex[:6]
    topic, doomed, txn_topic, group, txn_id = (f"orders-{suffix}", f"doomed-{suffix}", f"txn-{suffix}",
                                               f"group-{suffix}", f"tx-{suffix}")
    broker = broker_factory({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ME,
                             "auto.create.topics.enable": "false"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1) for name in (topic, doomed, txn_topic)]).values():
        future.result(timeout=TIMEOUT_S)
    grant(admin, allow(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER))

    broker.config["super.users"] = ""
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    # Refused, with Kafka's codes.
    assert [e.code() for e in produce_confluent(broker.bootstrap, topic)] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False, max_block_ms=5000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            plain.send(topic, b"v").get(timeout=TIMEOUT_S)
    finally:
        plain.close(5)
    assert init_idempotent_producer(broker.bootstrap) == CLUSTER_AUTHORIZATION_FAILED  # no IDEMPOTENT_WRITE or WRITE
    assert first_consumer_error_or_value(broker.bootstrap, topic, group) == KafkaError.GROUP_AUTHORIZATION_FAILED
    transactional = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    with pytest.raises(KafkaException) as raised:
        transactional.init_transactions(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error_code_of(admin.delete_topics([doomed])[doomed]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert set(admin.list_topics(timeout=TIMEOUT_S).topics) == set()  # nothing may be described

    # Granted: the same operations succeed.
    grant(admin,
          allow(ResourceType.TOPIC, topic, AclOperation.WRITE),
          allow(ResourceType.TOPIC, topic, AclOperation.READ),
          allow(ResourceType.GROUP, "group-", AclOperation.READ, ResourcePatternType.PREFIXED),
          allow(ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE),
          allow(ResourceType.TOPIC, txn_topic, AclOperation.WRITE),
          allow(ResourceType.TOPIC, doomed, AclOperation.DELETE))
    assert produce_confluent(broker.bootstrap, topic) == []
    assert init_idempotent_producer(broker.bootstrap) == 0  # KIP-679: WRITE on some topic is enough
    idempotent = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, max_block_ms=10000)
    try:
        assert idempotent.send(topic, b"idempotent").get(timeout=TIMEOUT_S).offset == 1
    finally:
        idempotent.close(5)
    assert first_consumer_error_or_value(broker.bootstrap, topic, group) == b"value"
    transactional = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    transactional.init_transactions(TIMEOUT_S)
    transactional.begin_transaction()
    transactional.produce(txn_topic, b"in-txn")
    transactional.commit_transaction(TIMEOUT_S)
    admin.delete_topics([doomed])[doomed].result(timeout=TIMEOUT_S)
    assert set(admin.list_topics(timeout=TIMEOUT_S).topics) == {topic, txn_topic}  # DESCRIBE implied by the grants

    # Internal topics: not produced to, not deleted without an ACL for them.
    assert [e.code() for e in produce_confluent(broker.bootstrap, "__consumer_offsets")] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert error_code_of(admin.delete_topics(["__consumer_offsets"])["__consumer_offsets"]) == (
        KafkaError.TOPIC_AUTHORIZATION_FAILED)

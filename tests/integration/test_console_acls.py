"""The console authorizes per resource with the broker's ACLs (broker/console/routes.py, docs/security.md "The admin
HTTP port"): a principal let in by DESCRIBE on the cluster sees only the topics it may DESCRIBE, the groups it may
DESCRIBE (and in them only those topics' partitions), a topic page only with DESCRIBE, a key's records and values only
with READ on the topic, the cluster page's partitions and coordinators only for the topics and groups it may
DESCRIBE. Over real sockets, with the secured broker of tests/integration/test_admin_http_auth.py
(`viewer` is a PLAIN user without ACLs until this module grants them); `/metrics` shows no group id.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from minikafka.testing import MiniKafka
from tests.integration.test_admin_http_auth import PASSWORDS, basic, http, sasl_admin_config, secured

pytestmark = pytest.mark.timeout(180)
__all__ = ["secured"]  # the module-scoped secured broker fixture


def make_topic(kafka: MiniKafka, prefix: str) -> str:
    """A topic holding k0=secret-0 .. k4=secret-4 (offsets 0..4) in one partition."""
    config = sasl_admin_config(kafka)
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({**config, "linger.ms": 0})
    for i in range(5):
        producer.produce(topic, key=f"k{i}".encode(), value=f"{prefix}-secret-{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    return topic


def commit(kafka: MiniKafka, group: str, topics: list[str]) -> None:
    consumer = Consumer({**sasl_admin_config(kafka), "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 2) for topic in topics], asynchronous=False)
    consumer.close()


def grant(kafka: MiniKafka, *bindings: tuple[Any, str, Any]) -> None:
    acls = [AclBinding(resource_type, name, ResourcePatternType.LITERAL, "User:viewer", "*", operation,
                       AclPermissionType.ALLOW) for resource_type, name, operation in bindings]
    admin = AdminClient(sasl_admin_config(kafka))
    for future in admin.create_acls(acls).values():
        future.result(30)


def test_console_pages_show_only_what_the_principals_acls_allow(secured: MiniKafka) -> None:
    described, readable, hidden = (make_topic(secured, prefix) for prefix in ("described", "readable", "hidden"))
    shown_group, hidden_group = f"shown-{uuid.uuid4().hex[:6]}", f"hidden-{uuid.uuid4().hex[:6]}"
    commit(secured, shown_group, [readable, hidden])
    commit(secured, hidden_group, [readable])
    grant(secured, (ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
          (ResourceType.TOPIC, described, AclOperation.DESCRIBE), (ResourceType.TOPIC, readable, AclOperation.READ),
          (ResourceType.GROUP, shown_group, AclOperation.DESCRIBE))
    viewer = basic("viewer", PASSWORDS["viewer"])
    url = secured.admin_url

    status, _, front = http(url + "/", headers=viewer)
    assert status == 200
    assert f'data-topic="{described}"' in front.decode() and f'data-topic="{readable}"' in front.decode()
    assert hidden.encode() not in front  # neither listed nor in the shown group's partitions
    assert shown_group.encode() in front and hidden_group.encode() not in front
    assert f"{readable}-0: " in front.decode()

    assert http(f"{url}/topic?name={described}", headers=viewer)[0] == 200
    for path in [f"/topic?name={hidden}", f"/topic/live?name={hidden}", "/topic?name=no-such-topic"]:
        status, _, body = http(url + path, headers=viewer)
        assert status == 403 and b"DESCRIBE" in body, path

    for topic in (hidden, described):  # DESCRIBE is not enough for records
        status, _, body = http(f"{url}/key?topic={topic}&key=k1&show=1", headers=viewer)
        assert status == 403 and b"secret" not in body and b"READ" in body, topic
    status, _, body = http(f"{url}/key?topic={readable}&key=k1&show=1", headers=viewer)
    assert status == 200 and b"readable-secret-1" in body

    # the cluster page: the broker for anyone past the gate, partitions and coordinators per DESCRIBE
    for path in ["/cluster", "/cluster/live?internal=1"]:
        status, _, page = http(url + path, headers=viewer)
        assert status == 200 and b'data-broker="1"' in page, path
        assert f'data-topic="{described}"' in page.decode() and f'data-topic="{readable}"' in page.decode(), path
        assert hidden.encode() not in page and b'data-topic="__consumer_offsets"' not in page, path
        assert f'data-key="{shown_group}"' in page.decode() and hidden_group.encode() not in page, path

    # a super user still sees everything
    admin = basic("admin", PASSWORDS["admin"])
    status, _, front = http(url + "/", headers=admin)
    assert status == 200 and hidden.encode() in front and hidden_group.encode() in front
    assert http(f"{url}/key?topic={hidden}&key=k1&show=1", headers=admin)[0] == 200
    status, _, page = http(url + "/cluster/live?internal=1", headers=admin)
    assert status == 200 and hidden_group.encode() in page and b'data-topic="__consumer_offsets"' in page
    assert http(url + "/cluster")[0] == 401  # no credentials

    _, _, metrics = http(url + "/metrics")
    assert shown_group.encode() not in metrics and hidden_group.encode() not in metrics

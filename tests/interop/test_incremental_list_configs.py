"""IncrementalAlterConfigs APPEND and SUBTRACT on every LIST-typed config of every resource type, side by side with
Apache Kafka 4.3.1 (issue 37): the answer to each operation, the value and source DescribeConfigs reports after it,
and, for a broker key that is a topic default, what a topic created afterwards inherits.

Kafka starts APPEND and SUBTRACT from the resource's own stored value, else the key's built-in default
(ConfigurationControlManager.getParts, and ConfigAdminManager.prepareIncrementalConfigs for a BROKER resource): a
broker's `log.cleanup.policy` APPEND `compact` is `delete,compact`, never `compact` alone.

Every step runs through one raw connection per broker (`ConfigSide`), which waits after each alteration until it is
applied. Every broker-level change is deleted again at the end of its case, so the session's Kafka stays as it was.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.broker_process import BrokerProcess
from tests.interop.config_side import (
    APPEND,
    DELETE,
    RESOURCE_BROKER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    SET,
    SUBTRACT,
    ConfigSide,
    module_minikafka,
    side_by_side,
)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]
LIST_TYPE = 7  # DescribeConfigs' config_type of a LIST



@dataclass(frozen=True)
class ListKey:
    """One LIST-typed key on one resource kind, and the item APPEND adds and SUBTRACT removes."""

    kind: str  # "topic", "broker", "broker-default", "group", "client-metrics"
    name: str
    item: str
    topic_synonym: str | None = None  # the topic config a broker key is the default of
    #: False where the two brokers' own set-ups show: `listeners` holds each one's ports, and Kafka's refusals
    #: name its CONTROLLER listener (minikafka has none), so only the error codes and sources are compared
    same_text: bool = True
    #: a cluster-default broker config set for the case (and deleted after it): a topic's APPEND still starts
    #: from the topic config's built-in default, not from the broker's value
    broker_default: tuple[str, str] | None = None

    @property
    def id(self) -> str:
        under = f"[{'='.join(self.broker_default)}]" if self.broker_default else ""
        return f"{self.kind}:{self.name}{under}"


LIST_KEYS = [
    ListKey("topic", "cleanup.policy", "compact"),
    ListKey("topic", "cleanup.policy", "compact", broker_default=("log.cleanup.policy", "compact")),
    ListKey("topic", "leader.replication.throttled.replicas", "0:1"),
    ListKey("topic", "follower.replication.throttled.replicas", "0:1"),
    *(ListKey(kind, name, item, synonym) for kind in ("broker", "broker-default") for name, item, synonym in (
        ("log.cleanup.policy", "compact", "cleanup.policy"),
        ("metric.reporters", "org.apache.kafka.common.metrics.JmxReporter", None),
        ("ssl.enabled.protocols", "TLSv1.1", None),
        ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256", None),
        ("sasl.enabled.mechanisms", "PLAIN", None),
        ("sasl.kerberos.principal.to.local.rules", "RULE:[1:$1]", None),
        ("cordoned.log.dirs", "*", None),
        ("config.providers", "env", None),
    )),
    *(ListKey(kind, "listeners", "PLAINTEXT://127.0.0.1:1", same_text=False) for kind in ("broker", "broker-default")),
    ListKey("client-metrics", "metrics", "org.apache.kafka.producer."),
    ListKey("client-metrics", "match", "client_id=app.*"),
    # no group config is a LIST in Kafka 4.3: APPEND and SUBTRACT are refused
    ListKey("group", "consumer.session.timeout.ms", "50000"),
]


minikafka = pytest.fixture(scope="module", name="minikafka")(module_minikafka)


def resource_of(key: ListKey, suffix: str) -> tuple[int, str]:
    return {
        "topic": (RESOURCE_TOPIC, f"lists-{suffix}"),
        "broker": (RESOURCE_BROKER, "1"),
        "broker-default": (RESOURCE_BROKER, ""),
        "group": (RESOURCE_GROUP, f"lists-{suffix}"),
        "client-metrics": (RESOURCE_CLIENT_METRICS, f"lists-{suffix}"),
    }[key.kind]


def scenario(side: ConfigSide, key: ListKey, suffix: str) -> list[tuple[str, Any]]:
    """APPEND the item twice, SUBTRACT it, SUBTRACT what the key started with, then DELETE: each answer and the
    description after it; for a broker key that is a topic default, a topic created after each broker change."""
    resource_type, resource = resource_of(key, suffix)
    if key.kind == "topic":
        side.create_topic(resource)
    observed: list[tuple[str, Any]] = []
    topics = (f"lists-{suffix}-{n}" for n in itertools.count())

    def step(label: str, operation: int | None, value: str | None) -> tuple[Any, ...]:
        if operation is not None:
            answer = side.alter(resource_type, resource, key.name, operation, value)
            observed.append((label, answer if key.same_text else answer[0]))
        described = side.describe(resource_type, resource, key.name)
        observed.append((f"{label}: described", described if key.same_text else described[1]))
        if key.topic_synonym is not None:
            topic = next(topics)
            side.create_topic(topic)
            observed.append((f"{label}: a new topic's {key.topic_synonym}",
                             side.describe(RESOURCE_TOPIC, topic, key.topic_synonym)[:2]))
        return described

    if key.broker_default is not None:
        assert side.alter(RESOURCE_BROKER, "", key.broker_default[0], SET, key.broker_default[1]) == (0, None)
    try:
        started_with = step("before", None, None)[0] or ""
        step(f"APPEND {key.item}", APPEND, key.item)
        step(f"APPEND {key.item} again", APPEND, key.item)
        step(f"SUBTRACT {key.item}", SUBTRACT, key.item)
        step("SUBTRACT the value described before", SUBTRACT, started_with)
    finally:
        observed.append(("DELETE", side.alter(resource_type, resource, key.name, DELETE, None)))
        if key.broker_default is not None:
            side.alter(RESOURCE_BROKER, "", key.broker_default[0], DELETE, None)
    return observed


@dataclass(frozen=True)
class Refusal:
    """One APPEND or SUBTRACT Kafka refuses (or, for the odd values, accepts) with the resource left as it was."""

    kind: str
    name: str
    operation: int
    value: str | None
    described_after: bool = True  # False: the value shows a broker's own set-up (its log dir, its listeners)

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}:{'APPEND' if self.operation == APPEND else 'SUBTRACT'}:{self.value!r}"


REFUSALS = [
    Refusal("topic", "cleanup.policy", APPEND, "compact, delete"),  # items trimmed, duplicates dropped
    Refusal("topic", "cleanup.policy", APPEND, ",compact,,"),  # an empty item
    Refusal("topic", "cleanup.policy", APPEND, ""),
    Refusal("topic", "cleanup.policy", SUBTRACT, ""),
    Refusal("topic", "cleanup.policy", APPEND, "bogus"),
    Refusal("topic", "cleanup.policy", APPEND, None),
    Refusal("topic", "retention.ms", APPEND, "5"),  # not a LIST
    Refusal("topic", "no.such.config", SUBTRACT, "5"),
    Refusal("broker", "log.cleanup.policy", APPEND, "bogus"),
    Refusal("broker", "log.cleanup.policy", APPEND, ",compact"),
    Refusal("broker", "log.cleanup.policy", SUBTRACT, None),
    Refusal("broker", "log.retention.ms", APPEND, "5"),
    Refusal("broker", "log.retention.ms", SUBTRACT, "5"),
    Refusal("broker", "no.such.config", APPEND, "x"),
    Refusal("broker", "listener.name.plaintext.ssl.cipher.suites", APPEND, "TLS_AES_128_GCM_SHA256"),
    Refusal("broker", "log.dirs", SUBTRACT, "x", described_after=False),  # static
    Refusal("broker", "advertised.listeners", APPEND, "PLAINTEXT://127.0.0.1:1", described_after=False),
    Refusal("broker-default", "log.retention.ms", APPEND, "5"),
    Refusal("broker-default", "no.such.config", APPEND, "5"),
    Refusal("client-metrics", "no.such.config", APPEND, "x"),
]


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda refusal: refusal.id)
def test_append_and_subtract_validate_as_kafka_does(
    apache_kafka: object, minikafka: BrokerProcess, refusal: Refusal
) -> None:
    key = ListKey(refusal.kind, refusal.name, "")
    resource_type, resource = resource_of(key, uuid.uuid4().hex[:8])

    def refused(side: ConfigSide) -> tuple[Any, ...]:
        if refusal.kind == "topic":
            side.create_topic(resource)
        answer = side.alter(resource_type, resource, refusal.name, refusal.operation, refusal.value)
        described = side.describe(resource_type, resource, refusal.name)[:2] if refusal.described_after else None
        if answer[0] == 0:
            side.alter(resource_type, resource, refusal.name, DELETE, None)
        return answer, described

    on_kafka, on_minikafka = side_by_side(apache_kafka, minikafka, refused)
    assert on_minikafka == on_kafka


@pytest.mark.parametrize("key", LIST_KEYS, ids=lambda key: key.id)
def test_append_and_subtract_start_from_the_value_kafka_starts_from(
    apache_kafka: object, minikafka: BrokerProcess, key: ListKey
) -> None:
    suffix = uuid.uuid4().hex[:8]
    on_kafka, on_minikafka = side_by_side(apache_kafka, minikafka, lambda side: scenario(side, key, suffix))
    assert on_minikafka == on_kafka


def test_the_cases_cover_every_list_key_kafka_lets_change(apache_kafka: object) -> None:
    """LIST_KEYS holds every LIST-typed key Apache Kafka 4.3.1 describes as changeable (not read-only), on each
    resource type; the read-only ones are refused as static keys (REFUSALS: log.dirs, advertised.listeners)."""
    side = ConfigSide(apache_kafka.bootstrap, f"sentinel-{uuid.uuid4().hex[:8]}")  # type: ignore[attr-defined]
    resources = {"topic": (RESOURCE_TOPIC, side.sentinel), "broker": (RESOURCE_BROKER, "1"),
                 "group": (RESOURCE_GROUP, "cover"), "client-metrics": (RESOURCE_CLIENT_METRICS, "cover")}
    try:
        described = {kind: {entry.name for entry in side.describe_all(*resource).configs
                            if entry.config_type == LIST_TYPE and not entry.read_only}
                     for kind, resource in resources.items()}
    finally:
        side.close()
    covered = {kind: {key.name for key in LIST_KEYS if key.kind == kind and kind != "group"} for kind in resources}
    assert described == covered
    assert {key.name for key in LIST_KEYS if key.kind == "broker-default"} == covered["broker"]

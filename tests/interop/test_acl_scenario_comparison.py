"""One ACL scenario against Apache Kafka (official jars, KRaft, StandardAuthorizer) and minikafka, over a
SASL_PLAINTEXT listener with SCRAM-SHA-256: every (request, error code) must be the same on both brokers.

Both brokers get the same settings: `super.users=User:admin;User:ANONYMOUS` (Kafka's controller and inter-broker
listeners are PLAINTEXT here, and its controller authorizes the broker's own ANONYMOUS requests, so ANONYMOUS must
be a super user; the scenario never uses the PLAINTEXT listener), and the SCRAM users admin and alice from the
format step (`kafka-storage format --add-scram` / `minikafka serve --add-scram`). Alice asks first with no ACL,
then after the admin grants literal, prefixed and deny ACLs (tests/interop/acl_scenario.py).

Kafka's own `kafka-acls` and `kafka-configs` then run against both brokers over the SASL listener with
`--command-config` (the admin's SCRAM credentials), and as alice, who is refused.

The authorization scenario (tests/interop/authorization_scenario.py) sends one request per API the broker
advertises as carol, with no ACLs and under narrow ACLs, and compares what each answer reveals (error codes,
names, ids, offsets, configs, record bytes) between the two brokers.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from kafka.protocol.metadata.metadata import MetadataRequest

from minikafka.protocol.api_keys import SUPPORTED_VERSIONS
from tests.apache_kafka import ApacheKafka
from tests.interop import authorization_scenario
from tests.interop.acl_scenario import (
    ADMIN,
    ALICE,
    GRANTS,
    SCRAM_CREDENTIALS,
    TOPICS,
    Observed,
    SaslWireClient,
    create_acls,
    create_topics,
    run_requests,
    warm_up_coordinators,
)
from tests.kafka_jars import find_main_class, java_command
from tests.scram_mini_kafka import ScramMiniKafka

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

LISTENER = "SASL_PLAINTEXT"
SECURITY_PROPERTIES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
}
ACL_COMMAND = ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")
CONFIG_COMMAND = ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand")


@pytest.fixture(scope="module")
def brokers(kafka_lib_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Both brokers, started once for the module: name -> bootstrap of the SASL_PLAINTEXT listener."""
    apache = ApacheKafka(tmp_path_factory.mktemp("apache-kafka-acl"), lib_dir=kafka_lib_dir,
                         properties=SECURITY_PROPERTIES, listeners={LISTENER: LISTENER},
                         scram_credentials=SCRAM_CREDENTIALS)
    ours = ScramMiniKafka(SCRAM_CREDENTIALS, config=SECURITY_PROPERTIES, listeners={LISTENER: LISTENER})
    with apache, ours:
        yield {"apache": apache.bootstrap_for(LISTENER), "minikafka": ours.bootstrap_servers_for(LISTENER)}


def scenario(bootstrap: str) -> Observed:
    with SaslWireClient(bootstrap, *ADMIN) as admin:
        assert create_topics(admin, list(TOPICS)) == sorted((name, 0) for name in TOPICS)
        warm_up_coordinators(admin)
    with SaslWireClient(bootstrap, *ALICE) as alice:
        observed = run_requests(alice, "no ACLs", "new-a")
    with SaslWireClient(bootstrap, *ADMIN) as admin:
        assert create_acls(admin, GRANTS) == [0] * len(GRANTS)
    with SaslWireClient(bootstrap, *ALICE) as alice:
        observed += run_requests(alice, "granted", "new-a")
    return observed


def test_acl_scenario_answers_the_same_error_codes(brokers: dict[str, str]) -> None:
    apache = scenario(brokers["apache"])
    ours = scenario(brokers["minikafka"])
    differences = [(label, theirs, mine) for (label, theirs), (_, mine) in zip(apache, ours, strict=True)
                   if theirs != mine]
    assert differences == [], "\n".join(f"{label}: Apache Kafka {a!r}, minikafka {m!r}" for label, a, m in differences)
    # the scenario did exercise refusals and grants, not only errors
    answers = dict(apache)
    assert answers["no ACLs: produce orders"] == 29 and answers["granted: produce orders"] == 0
    assert answers["no ACLs: create acls"] == [31] and answers["granted: create acls"] == [31]
    assert answers["granted: join group grp-a"] == 79  # MEMBER_ID_REQUIRED: past the authorizer
    assert answers["granted: init producer id transactional"] == 0


def test_every_api_reveals_no_more_than_apache_kafka(brokers: dict[str, str]) -> None:
    """Issue 29: for every advertised API, as a principal without ACLs and under narrow ACLs, minikafka's answer
    reveals exactly what Apache Kafka 4.3.1's does."""
    assert set(SUPPORTED_VERSIONS) <= authorization_scenario.covered_api_keys()
    apache = authorization_scenario.run(brokers["apache"], ADMIN)
    ours = authorization_scenario.run(brokers["minikafka"], ADMIN)
    assert [label for label, _ in apache] == [label for label, _ in ours]
    differences = [(label, theirs, mine) for (label, theirs), (_, mine) in zip(apache, ours, strict=True)
                   if theirs != mine]
    assert differences == [], "\n".join(f"{label}:\n  Apache Kafka {a!r}\n  minikafka    {m!r}"
                                         for label, a, m in differences)
    answers = dict(apache)
    # the scenario did reach past the authorizer under the narrow ACLs, not only refusals
    assert answers["no ACLs: produce"] != answers["narrow ACLs: produce"]
    assert answers["no ACLs: consumer group heartbeat by regex"] != answers[
        "narrow ACLs: consumer group heartbeat by regex"]


def kip848_regex_assignment(bootstrap: str, user: tuple[str, str], group: str, regex: str) -> dict[str, int]:
    """A confluent-kafka `group.protocol=consumer` member subscribed to `regex` (sent to the broker as
    SubscribedTopicRegex): topic -> number of partitions assigned, once an assignment has held for 1.5 s (Kafka
    resolves regexes asynchronously, so the first heartbeats may bring nothing) or after 15 s."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user[0], "sasl.password": user[1],
                         "group.id": group, "group.protocol": "consumer", "enable.auto.commit": False,
                         "auto.offset.reset": "latest"})
    try:
        consumer.subscribe([regex])
        deadline = time.monotonic() + 15
        assigned: dict[str, int] = {}
        changed_at = time.monotonic()
        while time.monotonic() < deadline and not (assigned and time.monotonic() - changed_at > 1.5):
            consumer.poll(0.3)
            now = dict(Counter(tp.topic for tp in consumer.assignment()))
            if now != assigned:
                assigned, changed_at = now, time.monotonic()
        return assigned
    finally:
        consumer.close()


def test_kip848_regex_matches_internal_topics_filtered_by_describe(brokers: dict[str, str]) -> None:
    """Issue 23 (scope 2) with a KIP-848 client: a regex matches every topic of the cluster, internal ones
    included, and only topics the member may DESCRIBE are assigned (Kafka's TopicRegexResolver)."""
    outcomes = {}
    for target, bootstrap in brokers.items():
        topic = "k848-topic"
        with SaslWireClient(bootstrap, *ADMIN) as admin:
            assert create_topics(admin, [topic]) == [(topic, 0)]
            assert create_acls(admin, [(3, "k848-carol", 3, "User:carol", "*", 3, 3),  # READ on the group
                                       (2, topic, 3, "User:carol", "*", 8, 3)]) == [0, 0]  # DESCRIBE on the topic
            offsets_partitions = len(admin.request(MetadataRequest[12](
                topics=[MetadataRequest.MetadataRequestTopic(name="__consumer_offsets")],
                allow_auto_topic_creation=False)).topics[0].partitions)
        regex = f"^(__consumer_offsets|{topic})$"
        as_admin = kip848_regex_assignment(bootstrap, ADMIN, "k848-admin", regex)
        as_carol = kip848_regex_assignment(bootstrap, authorization_scenario.CAROL, "k848-carol", regex)
        outcomes[target] = (as_admin, as_carol)
        assert as_admin == {"__consumer_offsets": offsets_partitions, topic: 1}, target
        assert as_carol == {topic: 1}, target
    assert outcomes["apache"][1] == outcomes["minikafka"][1]


def command_config(tmp_path: Path, user: str, password: str) -> Path:
    """A `--command-config` properties file for the SASL listener with `user`'s SCRAM credentials."""
    path = tmp_path / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{user}" password="{password}";\n')
    return path


def kafka_tool(lib_dir: Path, main: tuple[str, ...], args: list[str]) -> subprocess.CompletedProcess[str]:
    command = java_command(lib_dir, find_main_class(lib_dir, *main), args, heap="256m")
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("target", ["apache", "minikafka"])
def test_kafka_acls_and_kafka_configs_over_sasl(brokers: dict[str, str], kafka_lib_dir: Path, tmp_path: Path,
                                                target: str) -> None:
    """Kafka's own tools with `--command-config`: the admin manages ACLs, topic configs and SCRAM users; alice,
    an ordinary user, is refused by the authorizer; bob authenticates with the credential kafka-configs made."""
    base = ["--bootstrap-server", brokers[target]]
    as_admin = [*base, "--command-config", str(command_config(tmp_path, *ADMIN))]
    as_alice = [*base, "--command-config", str(command_config(tmp_path, *ALICE))]
    topic = f"cli-{target}"
    with SaslWireClient(brokers[target], *ADMIN) as admin:
        assert create_topics(admin, [topic]) == [(topic, 0)]

    _ok(kafka_tool(kafka_lib_dir, ACL_COMMAND, [*as_admin, "--add", "--allow-principal", "User:bob", "--operation",
                                                "Read", "--operation", "Describe", "--topic", topic]))
    listed = _ok(kafka_tool(kafka_lib_dir, ACL_COMMAND, [*as_admin, "--list", "--topic", topic]))
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in listed
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert "(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    refused = kafka_tool(kafka_lib_dir, ACL_COMMAND, [*as_alice, "--add", "--allow-principal", "User:alice",
                                                      "--operation", "All", "--topic", topic])
    assert refused.returncode != 0
    assert "ClusterAuthorizationException" in refused.stdout + refused.stderr, refused.stdout + refused.stderr

    _ok(kafka_tool(kafka_lib_dir, CONFIG_COMMAND, [*as_admin, "--alter", "--entity-type", "topics", "--entity-name",
                                                   topic, "--add-config", "retention.ms=3600000"]))
    described = _ok(kafka_tool(kafka_lib_dir, CONFIG_COMMAND, [*as_admin, "--describe", "--entity-type", "topics",
                                                               "--entity-name", topic]))
    assert f"Dynamic configs for topic {topic} are:" in described and "retention.ms=3600000" in described
    _ok(kafka_tool(kafka_lib_dir, CONFIG_COMMAND, [*as_admin, "--alter", "--entity-type", "users", "--entity-name",
                                                   "bob", "--add-config", "SCRAM-SHA-256=[password=bob-secret]"]))
    with SaslWireClient(brokers[target], "bob", "bob-secret"):
        pass  # SaslAuthenticate succeeded with the credential kafka-configs salted and hashed

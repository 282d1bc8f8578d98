"""The docs' Security page, section "SASL and ACLs" (docs/security.md), run as written: its server.properties (as
`serve --config`, with this test's certificate paths), its `--add-scram` bootstrap, its client properties files,
and its `kafka-configs`, `kafka-topics` and `kafka-acls` commands (Apache Kafka's own tools from the official 4.x
jars). Only the paths and the port are replaced; MiniKafka adds its PLAINTEXT readiness listener and picks the
ports. Then alice, refused before the ACLs, produces and consumes with confluent-kafka and kcat reading the page's
alice.properties, and the PLAIN user from the JAAS line authenticates."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from tests.integration.sasl_broker import SaslMiniKafka
from tests.interop.test_admin_cli import run_tool
from tests.tls_material import CertificateAuthority

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

README = Path(__file__).resolve().parents[2] / "docs" / "security.md"  # the docs site's Security page
SECTION = "## SASL and ACLs"
README_ADDRESS = "127.0.0.1:9094"
TOOLS = {
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "kafka-acls": ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"),
}


def readme_blocks() -> list[str]:
    """The fenced code blocks of the README's security section, in order."""
    text = README.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    return re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S)


def properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}



def test_readme_sasl_ssl_and_acls_example(tmp_path: Path, kafka_lib_dir: Path) -> None:
    server_properties, serve_command, admin_properties, alice_properties, commands = readme_blocks()
    ca = CertificateAuthority()
    paths = {"/etc/minikafka/server.pem": str(ca.issue_server().write_pem_keystore(tmp_path / "server.pem",
                                                                                     key_password="key-secret")),
             "/etc/minikafka/ca.pem": str(ca.write_pem_truststore(tmp_path / "ca.pem"))}

    def local(text: str) -> str:
        for readme_path, path in paths.items():
            text = text.replace(readme_path, path)
        return text

    config_file = tmp_path / "server.properties"
    config_file.write_text(local(server_properties))
    assert properties(server_properties)["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL"
    serve_args = shlex.split(serve_command)
    add_scram = [serve_args[i + 1] for i, arg in enumerate(serve_args) if arg == "--add-scram"]
    with SaslMiniKafka(properties_file=config_file, listeners={"SASL_SSL": "SASL_SSL"},
                       add_scram=add_scram) as kafka:
        bootstrap = kafka.bootstrap_servers_for("SASL_SSL")
        (tmp_path / "admin.properties").write_text(local(admin_properties))
        (tmp_path / "alice.properties").write_text(local(alice_properties))
        alice = {"bootstrap.servers": bootstrap, **properties(local(alice_properties))}

        lines = [line for line in commands.splitlines() if line.strip()]
        for line in lines:
            args = [arg.replace(README_ADDRESS, bootstrap).replace("admin.properties",
                                                                   str(tmp_path / "admin.properties"))
                    for arg in shlex.split(line)]
            if args[0] == "kafka-acls" and "--topic" in args:  # the first grant: alice is refused until now
                assert produce(alice, "orders") == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
            run_tool(kafka_lib_dir, TOOLS[args[0]], args[1:])

        assert produce(alice, "orders") == []
        assert consume(alice, "orders", "billing") == b"readme"
        kcat = shutil.which("kcat")
        if kcat is not None:
            consumed = subprocess.run([kcat, "-F", str(tmp_path / "alice.properties"), "-b", bootstrap, "-C",
                                       "-t", "orders", "-o", "beginning", "-e", "-q", "-f", "%s\n"],
                                      capture_output=True, text=True, timeout=60)
            assert consumed.returncode == 0 and consumed.stdout.splitlines() == ["readme"], consumed.stderr

        # the PLAIN user of the JAAS line authenticates; with no ACL it may describe nothing
        bob = AdminClient({**alice, "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": "bob-secret"})
        assert set(bob.list_topics(timeout=20).topics) == set()


def produce(config: dict[str, str], topic: str) -> list[int]:
    errors: list[int] = []
    producer = Producer({**config, "message.timeout.ms": 8000})
    producer.produce(topic, b"readme", on_delivery=lambda err, _msg: err and errors.append(err.code()))
    assert producer.flush(30) == 0
    return errors


def consume(config: dict[str, str], topic: str, group: str) -> bytes:
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                value: bytes = message.value()
                return value
        raise AssertionError("no record")
    finally:
        consumer.close()

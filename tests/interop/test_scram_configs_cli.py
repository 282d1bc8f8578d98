"""Apache Kafka's `kafka-configs` (from its official 4.x jars) managing SCRAM credentials on minikafka: the tool
salts and hashes the password itself and sends AlterUserScramCredentials; the stored credential then
authenticates kafka-python's SCRAM client against the broker's own SCRAM server (`--describe` for users also
needs DescribeClientQuotas, which minikafka does not serve, so the result is read with DescribeUserScramCredentials)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient
from kafka.admin._users import ScramMechanism as ClientScramMechanism
from kafka.net.sasl.scram import ScramClient

from minikafka.broker.security.scram import ScramMechanism
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.security.scram_sasl_server import ScramSaslServer
from tests.broker_process import BrokerProcess
from tests.kafka_jars import find_main_class, java_command

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

CONFIG_COMMAND = ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand")



def kafka_configs(lib_dir: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    command = java_command(lib_dir, find_main_class(lib_dir, *CONFIG_COMMAND), args, heap="256m")
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_kafka_configs_adds_and_deletes_scram_credentials(broker: BrokerProcess, kafka_lib_dir: Path) -> None:
    both = kafka_configs(kafka_lib_dir, [
        "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "alice",
        "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-512]"])
    # Kafka's controller (ScramControlManager) allows one alteration per user and request, whatever the mechanism
    assert both.returncode != 0
    assert "A user credential cannot be altered twice in the same request" in both.stdout + both.stderr
    for config in ("SCRAM-SHA-256=[iterations=8192,password=alice-secret]", "SCRAM-SHA-512=[password=alice-512]"):
        added = kafka_configs(kafka_lib_dir, [
            "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "alice",
            "--add-config", config])
        assert added.returncode == 0, added.stdout[-3000:] + added.stderr[-3000:]
        assert "Completed updating config for user alice." in added.stdout
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        assert admin.describe_user_scram_credentials(["alice"])["alice"]["credential_infos"] == [
            {"mechanism": ClientScramMechanism.SCRAM_SHA_256, "iterations": 8192},
            {"mechanism": ClientScramMechanism.SCRAM_SHA_512, "iterations": 4096}]
    finally:
        admin.close()
    broker.stop()
    store = ScramCredentialStore.load(Path(broker.data_dir))
    for mechanism, password in ((ScramMechanism.SCRAM_SHA_256, "alice-secret"),
                                (ScramMechanism.SCRAM_SHA_512, "alice-512")):
        server = ScramSaslServer(mechanism, store.get)
        client = ScramClient("alice", password, mechanism.mechanism_name)
        client.process_server_first_message(server.evaluate_response(client.first_message()))
        client.process_server_final_message(server.evaluate_response(client.final_message()))
        assert server.is_complete
    broker.start()
    deleted = kafka_configs(kafka_lib_dir, [
        "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "alice",
        "--delete-config", "SCRAM-SHA-512"])
    assert deleted.returncode == 0, deleted.stdout[-3000:] + deleted.stderr[-3000:]
    assert ScramCredentialStore.load(Path(broker.data_dir)).get("alice", ScramMechanism.SCRAM_SHA_512) is None

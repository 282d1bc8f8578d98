"""AlterUserScramCredentials / DescribeUserScramCredentials against a running broker: kafka-python's admin
client (which salts and hashes client-side, as Kafka's AdminClient), raw requests for Kafka's error codes, the
credentials surviving a restart, `minikafka serve --add-scram`, and SASL requests on a PLAINTEXT listener."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafka.admin import KafkaAdminClient
from kafka.admin._users import ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from minikafka.broker.security.scram_credentials import SCRAM_CREDENTIALS_FILE
from minikafka.protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient


def admin_client(broker: BrokerProcess) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)


def test_admin_client_alters_and_describes_and_the_credentials_survive_a_restart(broker: BrokerProcess) -> None:
    admin = admin_client(broker)
    try:
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "alice-secret", iterations=8192),
            UserScramCredentialUpsertion("bob", "SCRAM-SHA-512", "bob-secret"),
        ]) == {"alice": None, "bob": None}
        described = admin.describe_user_scram_credentials()
        assert described == {
            "alice": {"error": None, "credential_infos": [{"mechanism": ScramMechanism.SCRAM_SHA_256,
                                                           "iterations": 8192}]},
            "bob": {"error": None, "credential_infos": [{"mechanism": ScramMechanism.SCRAM_SHA_512,
                                                         "iterations": 4096}]},
        }
        assert admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", "SCRAM-SHA-512")]) == {
            "bob": None}
    finally:
        admin.close()
    stored = (Path(broker.data_dir) / SCRAM_CREDENTIALS_FILE).read_text()
    assert "alice-secret" not in stored and [e["user"] for e in json.loads(stored)["credentials"]] == ["alice"]
    broker.restart()
    admin = admin_client(broker)
    try:
        assert admin.describe_user_scram_credentials(["alice", "bob"]) == {
            "alice": {"error": None, "credential_infos": [{"mechanism": ScramMechanism.SCRAM_SHA_256,
                                                           "iterations": 8192}]},
            "bob": {"error": "Attempt to describe a user credential that does not exist: bob", "credential_infos": []},
        }
    finally:
        admin.close()


def test_kafkas_error_codes_over_the_wire(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        altered = client.request(AlterUserScramCredentialsRequest[0](
            deletions=[("nobody", 1)],
            upsertions=[("weak", 1, 4095, b"salt", b"x" * 32), ("huge", 2, 16385, b"salt", b"x" * 64),
                        ("odd", 0, 4096, b"salt", b"x" * 32), ("ok", 1, 4096, b"salt", b"x" * 32)]))
        assert {(r.user, r.error_code, r.error_message) for r in altered.results} == {
            ("nobody", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
            ("weak", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
            ("huge", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
            ("odd", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            ("ok", ErrorCode.NONE, None),
        }
        twice = client.request(AlterUserScramCredentialsRequest[0](
            deletions=[("ok", 1)], upsertions=[("ok", 2, 4096, b"salt", b"x" * 64)]))
        assert [(r.user, r.error_code) for r in twice.results] == [("ok", ErrorCode.DUPLICATE_RESOURCE)]
        described = client.request(DescribeUserScramCredentialsRequest[0](users=[("ok",), ("ok",), ("ghost",)]))
        assert described.error_code == ErrorCode.NONE
        assert {(r.user, r.error_code) for r in described.results} == {
            ("ok", ErrorCode.DUPLICATE_RESOURCE), ("ghost", ErrorCode.RESOURCE_NOT_FOUND)}
        everyone = client.request(DescribeUserScramCredentialsRequest[0](users=None))
        assert [(r.user, [(c.mechanism, c.iterations) for c in r.credential_infos]) for r in everyone.results] == [
            ("ok", [(1, 4096)])]


def test_sasl_requests_on_a_plaintext_listener_get_illegal_sasl_state(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        handshake = client.request(SaslHandshakeRequest[1](mechanism="PLAIN"))
        assert (handshake.error_code, handshake.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
        authenticate = client.request(SaslAuthenticateRequest[2](auth_bytes=b"\0a\0b"))
        assert (authenticate.error_code, authenticate.error_message) == (
            ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication")


class AddScramBroker(BrokerProcess):
    """The suite's broker started with `minikafka serve --add-scram ...`."""

    def __init__(self, data_dir: Path, add_scram: list[str]) -> None:
        super().__init__(data_dir)
        self.add_scram = add_scram

    def command(self) -> list[str]:
        command = super().command()
        for argument in self.add_scram:
            command += ["--add-scram", argument]
        return command


def test_serve_add_scram_stores_the_bootstrap_credential(tmp_path: Path) -> None:
    broker = AddScramBroker(tmp_path / "data", ["SCRAM-SHA-256=[name=admin,password=admin-secret]",
                                                "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]"])
    broker.start()
    try:
        admin = admin_client(broker)
        try:
            assert admin.describe_user_scram_credentials(["admin"])["admin"]["credential_infos"] == [
                {"mechanism": ScramMechanism.SCRAM_SHA_256, "iterations": 4096},
                {"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 8192}]
        finally:
            admin.close()
    finally:
        broker.stop()


def test_serve_add_scram_refuses_a_bad_argument_before_serving(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "minikafka.broker", "serve", "--override", f"log.dirs={tmp_path / 'data'}",
         "--add-scram", "SCRAM-SHA-256=[name=admin,password=x,iterations=100]"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256" in done.stderr

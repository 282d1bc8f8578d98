"""The metrics/admin HTTP port once security is configured (broker/admin_auth.py), over real sockets.

One secured broker for the module: a SASL_PLAINTEXT listener (PLAIN users from JAAS, SCRAM users bootstrapped with
`serve --add-scram`), the StandardAuthorizer and `super.users=User:admin;User:ops`:

    admin     SCRAM-SHA-256, super user          operator  SCRAM-SHA-512, no ACL until a test grants one
    ops       PLAIN, super user                  viewer    PLAIN, no ACL

Topics and ACLs are made by confluent-kafka's admin client over SCRAM as `admin`. `/metrics` stays open; `/admin/*`
answers 401 (with the Basic challenge) without or with wrong credentials, 403 to a user neither super nor granted,
200 once an ACL allows ALTER on the cluster. A second broker without security keeps the old open behaviour. The
`minikafka compact` CLI and the pipeline's admin calls pass credentials (options and environment variables).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from minikafka.broker.__main__ import main as minikafka_main
from minikafka.broker.admin_auth import parse_basic_credentials
from minikafka.broker.admin_client import ADMIN_PASSWORD_ENV, ADMIN_USER_ENV, AdminCredentials, admin_credentials
from minikafka.cleaner.retained_offset_plan import RetainedOffsetPlanWriter
from minikafka.pipeline.audit import fetch_cleaner_state
from minikafka.pipeline.exact_plan import PartitionPlan, cleanable_ranges, submit_plan
from minikafka.testing import MiniKafka

TIMEOUT_S = 30
PASSWORDS = {"admin": "admin-secret", "operator": "operator-secret", "ops": "ops-plain", "viewer": "viewer-plain"}
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="ops" '
              'password="ops-plain" user_ops="ops-plain" user_viewer="viewer-plain";')
CHALLENGE = 'Basic realm="minikafka"'
KEYS = 5
pytestmark = pytest.mark.timeout(180)


class ScramBootstrappedKafka(MiniKafka):
    """A MiniKafka started with `minikafka serve --add-scram ...`."""

    def __init__(self, config: dict[str, Any], listeners: dict[str, str], add_scram: list[str]) -> None:
        super().__init__(config, listeners=listeners)
        self.add_scram = add_scram

    def command(self) -> list[str]:
        command = super().command()
        for argument in self.add_scram:
            command += ["--add-scram", argument]
        return command


@pytest.fixture(scope="module")
def secured() -> Iterator[MiniKafka]:
    config = {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ops",
        "log.cleaner.backoff.ms": 100,
    }
    add_scram = ["SCRAM-SHA-256=[name=admin,password=admin-secret]",
                 "SCRAM-SHA-512=[name=operator,password=operator-secret,iterations=8192]"]
    with ScramBootstrappedKafka(config, {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, add_scram) as broker:
        yield broker


@pytest.fixture(scope="module")
def open_broker() -> Iterator[MiniKafka]:
    with MiniKafka({"log.cleaner.backoff.ms": 100}) as broker:
        yield broker


def sasl_admin_config(kafka: MiniKafka) -> dict[str, Any]:
    return {"bootstrap.servers": kafka.bootstrap_servers_for("SASL_PLAINTEXT"), "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": PASSWORDS["admin"]}


def compacted_topic(kafka: MiniKafka, client_config: dict[str, Any]) -> str:
    """A new cleanup.policy=compact topic holding two records of each of KEYS keys (offsets 0..2*KEYS-1)."""
    topic = f"admin-auth-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(client_config)
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result(TIMEOUT_S)
    producer = Producer({**client_config, "linger.ms": 0})
    for i in range(2 * KEYS):
        producer.produce(topic, key=f"k{i % KEYS}".encode(), value=f"v{i}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    return topic


@pytest.fixture(scope="module")
def secured_topic(secured: MiniKafka) -> str:
    return compacted_topic(secured, sasl_admin_config(secured))


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def http(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=b"" if method == "POST" else None, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def cleaner_state_url(kafka: MiniKafka, topic: str) -> str:
    return f"{kafka.admin_url}/admin/cleaner-state?topic={topic}"


def compact_url(kafka: MiniKafka, topic: str) -> str:
    return f"{kafka.admin_url}/admin/compact?topic={topic}&wait=true&timeout_ms=20000"


def test_metrics_stay_open(secured: MiniKafka) -> None:
    status, _headers, body = http(secured.metrics_url)
    assert status == 200
    assert b"kafka_" in body or b"minikafka" in body


def test_admin_requests_need_valid_credentials(secured: MiniKafka, secured_topic: str) -> None:
    url = cleaner_state_url(secured, secured_topic)
    status, headers, _ = http(url)
    assert (status, headers.get("WWW-Authenticate")) == (401, CHALLENGE)
    status, headers, _ = http(url, headers=basic("admin", "wrong-password"))
    assert (status, headers.get("WWW-Authenticate")) == (401, CHALLENGE)
    assert http(url, headers=basic("nobody", "admin-secret"))[0] == 401
    assert http(url, headers={"Authorization": "Bearer abc"})[0] == 401
    assert http(url, headers={"Authorization": "Basic not-base64!"})[0] == 401
    # Unknown admin paths are refused before routing: no endpoint probing without credentials.
    assert http(f"{secured.admin_url}/admin/no-such-endpoint")[0] == 401
    assert http(compact_url(secured, secured_topic), "POST")[0] == 401

    status, _headers, body = http(url, headers=basic("admin", PASSWORDS["admin"]))  # SCRAM super user
    assert status == 200
    assert json.loads(body)["topic"] == secured_topic
    assert http(url, headers=basic("ops", PASSWORDS["ops"]))[0] == 200  # PLAIN super user
    assert http(f"{secured.admin_url}/admin/no-such-endpoint", headers=basic("admin", PASSWORDS["admin"]))[0] == 404


def test_a_user_without_a_cluster_acl_is_forbidden_until_granted(secured: MiniKafka, secured_topic: str) -> None:
    state_url, compact = cleaner_state_url(secured, secured_topic), compact_url(secured, secured_topic)
    operator = basic("operator", PASSWORDS["operator"])
    status, headers, _ = http(state_url, headers=operator)
    assert (status, "WWW-Authenticate" in headers) == (403, False)
    assert http(compact, "POST", headers=operator)[0] == 403
    assert http(state_url, headers=basic("viewer", PASSWORDS["viewer"]))[0] == 403  # PLAIN, no ACL

    admin = AdminClient(sasl_admin_config(secured))
    grant = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:operator", "*",
                       AclOperation.ALTER, AclPermissionType.ALLOW)
    for future in admin.create_acls([grant]).values():
        future.result(timeout=TIMEOUT_S)

    status, _headers, body = http(compact, "POST", headers=operator)
    assert status == 200, body
    reply = json.loads(body)
    assert reply["done"] and [r["status"] for r in reply["results"]] in (["cleaned"], ["nothing_to_clean"])
    assert http(state_url, headers=operator)[0] == 200  # ALTER implies DESCRIBE
    assert http(state_url, headers=basic("viewer", PASSWORDS["viewer"]))[0] == 403


def test_a_broker_without_security_needs_no_credentials(open_broker: MiniKafka) -> None:
    topic = compacted_topic(open_broker, {"bootstrap.servers": open_broker.bootstrap_servers})
    assert http(cleaner_state_url(open_broker, topic))[0] == 200
    assert http(compact_url(open_broker, topic), "POST")[0] == 200
    assert http(open_broker.metrics_url)[0] == 200


def _listening_addresses(port: int) -> set[str]:
    """Local IPv4/IPv6 addresses (hex, as /proc/net shows them) with a socket in LISTEN state on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                address, _, hex_port = fields[1].rpartition(":")
                if int(hex_port, 16) == port and fields[3] == "0A":
                    found.add(address)
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the kernel's socket table (Linux)")
def test_the_admin_port_listens_on_loopback_only_by_default(secured: MiniKafka) -> None:
    assert _listening_addresses(secured.metrics_port) == {"0100007F"}  # 127.0.0.1, and nothing else


def test_compact_cli_with_credentials(secured: MiniKafka, secured_topic: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    base = ["compact", secured_topic, "--admin-url", secured.admin_url, "--wait", "--timeout", "20"]
    assert minikafka_main(base) == 1
    assert "HTTP 401" in capsys.readouterr().err
    assert minikafka_main([*base, "--admin-user", "admin", "--admin-password", "wrong"]) == 1
    assert minikafka_main([*base, "--admin-user", "admin", "--admin-password", PASSWORDS["admin"]]) == 0
    output = capsys.readouterr()
    assert "total removed" in output.out
    assert PASSWORDS["admin"] not in output.out + output.err
    # The environment variables, in a real `minikafka compact` process.
    env = {**os.environ, ADMIN_USER_ENV: "ops", ADMIN_PASSWORD_ENV: PASSWORDS["ops"]}
    done = subprocess.run([sys.executable, "-m", "minikafka.broker", *base], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "total removed" in done.stdout and PASSWORDS["ops"] not in done.stdout + done.stderr


def test_pipeline_admin_calls_pass_credentials(secured: MiniKafka, secured_topic: str) -> None:
    with pytest.raises(ValueError, match="HTTP 401"):
        fetch_cleaner_state(secured.admin_url, secured_topic)
    credentials = AdminCredentials("admin", PASSWORDS["admin"])
    state = fetch_cleaner_state(secured.admin_url, secured_topic, credentials=credentials)
    assert state is not None and state["topic"] == secured_topic
    # An exact plan (what `compact --exact` streams after Spark): the latest record of each key in the range.
    [cleanable] = cleanable_ranges(state, None)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "plan"
        with open(path, "wb") as file:
            writer = RetainedOffsetPlanWriter(file, uuid.UUID(state["topic_id_uuid"]), 0, cleanable.start_offset,
                                              cleanable.end_offset)
            latest = {offset % KEYS: offset for offset in range(cleanable.start_offset, cleanable.end_offset)}
            writer.add_many(sorted(latest.values()))
            writer.finish()
        plan = PartitionPlan(0, cleanable.start_offset, cleanable.end_offset, len(latest), path)
        with pytest.raises(ValueError, match="refused"):
            submit_plan(secured.admin_url, secured_topic, plan, wait=True, timeout_s=20)
        reply = submit_plan(secured.admin_url, secured_topic, plan, wait=True, timeout_s=20, credentials=credentials)
    assert reply["done"], reply


def test_no_password_reaches_the_broker_log(secured: MiniKafka, secured_topic: str) -> None:
    url = cleaner_state_url(secured, secured_topic)
    assert http(url, headers=basic("admin", "wrong-password"))[0] == 401
    assert http(url, headers=basic("viewer", PASSWORDS["viewer"]))[0] == 403
    assert http(url, headers=basic("admin", PASSWORDS["admin"]))[0] == 200
    text = secured.log_path.read_text(errors="replace")
    assert "authentication failed" in text and "principal User:viewer is not allowed DESCRIBE" in text
    for password in (*PASSWORDS.values(), "wrong-password"):
        assert password not in text  # refusals are logged without the password


def test_credentials_from_options_and_environment() -> None:
    env = {ADMIN_USER_ENV: "env-user", ADMIN_PASSWORD_ENV: "env-secret"}
    assert admin_credentials(None, None, {}) is None
    assert admin_credentials(None, None, env) == AdminCredentials("env-user", "env-secret")
    assert admin_credentials("cli-user", None, env) == AdminCredentials("cli-user", "env-secret")
    assert admin_credentials("cli-user", "cli-secret", env) == AdminCredentials("cli-user", "cli-secret")
    assert "env-secret" not in repr(admin_credentials(None, None, env))
    with pytest.raises(ValueError, match="needs --admin-password"):
        admin_credentials("cli-user", None, {})
    header = AdminCredentials("ünï", "pa:ss").headers()["Authorization"]
    assert parse_basic_credentials(header) == ("ünï", "pa:ss")  # RFC 7617: the password may contain ':'

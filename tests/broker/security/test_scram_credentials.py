"""`ScramCredentialStore` (persistence, Kafka's alter/describe rules) and the `--add-scram` argument parser."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from kafka.net.sasl.scram import ScramClient

from minikafka.broker.security.sasl_server import SaslAuthenticationError, SaslError
from minikafka.broker.security.scram import ScramMechanism, salted_password
from minikafka.broker.security.scram_credentials import (
    SCRAM_CREDENTIALS_FILE,
    ScramCredentialDeletion,
    ScramCredentialStore,
    ScramCredentialUpsertion,
)
from minikafka.broker.security.scram_parser import parse_add_scram
from minikafka.broker.security.scram_sasl_server import ScramSaslServer
from minikafka.protocol.errors import ErrorCode

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def upsertion(user: str, password: str, mechanism: ScramMechanism = SHA256, iterations: int = 4096,
              salt: bytes = b"salt-of-the-earth") -> ScramCredentialUpsertion:
    """What a client sends: Kafka's AdminClient salts and hashes the password itself."""
    return ScramCredentialUpsertion(user, mechanism.type_code, iterations, salt,
                                    salted_password(mechanism, password, salt, iterations))


def authenticates(store: ScramCredentialStore, user: str, password: str, mechanism: ScramMechanism) -> bool:
    """Whether the SCRAM exchange succeeds; False only when the server refuses it (its SASL errors), so a bug
    that raises anything else fails the test instead of reading as a refused login."""
    server = ScramSaslServer(mechanism, store.get)
    client = ScramClient(user, password, mechanism.mechanism_name)
    try:
        client.process_server_first_message(server.evaluate_response(client.first_message()))
        client.process_server_final_message(server.evaluate_response(client.final_message()))
    except (SaslError, SaslAuthenticationError):
        return False
    return server.is_complete


def results(store: ScramCredentialStore, deletions: list[ScramCredentialDeletion],
            upsertions: list[ScramCredentialUpsertion]) -> dict[str, tuple[ErrorCode, str | None]]:
    return {r.user: (r.error_code, r.error_message) for r in store.alter(deletions, upsertions)}


def test_credentials_survive_a_reload_and_the_file_holds_nothing_in_clear(tmp_path: Path) -> None:
    store = ScramCredentialStore.load(tmp_path)
    assert results(store, [], [upsertion("alice", "alice-secret", iterations=8192),
                               upsertion("bob", "bob-secret", SHA512)]) == {
        "alice": (ErrorCode.NONE, None), "bob": (ErrorCode.NONE, None)}
    reloaded = ScramCredentialStore.load(tmp_path)
    assert authenticates(reloaded, "alice", "alice-secret", SHA256)
    assert authenticates(reloaded, "bob", "bob-secret", SHA512)
    assert not authenticates(reloaded, "alice", "wrong", SHA256)
    assert not authenticates(reloaded, "bob", "bob-secret", SHA256)
    raw = (tmp_path / SCRAM_CREDENTIALS_FILE).read_bytes()
    salted = salted_password(SHA256, "alice-secret", b"salt-of-the-earth", 8192)
    for secret in (b"alice-secret", b"bob-secret", salted, base64.b64encode(salted),
                   hashlib.pbkdf2_hmac("sha512", b"bob-secret", b"salt-of-the-earth", 4096)):
        assert secret not in raw
    entries = json.loads(raw)["credentials"]
    assert {(e["user"], e["mechanism"], e["iterations"]) for e in entries} == {
        ("alice", "SCRAM-SHA-256", 8192), ("bob", "SCRAM-SHA-512", 4096)}
    assert not list(tmp_path.glob("*.tmp"))


def test_alter_rules_and_messages_are_kafkas(tmp_path: Path) -> None:
    store = ScramCredentialStore.load(tmp_path)
    store.alter([], [upsertion("alice", "a")])
    assert results(store, [ScramCredentialDeletion("carol", SHA256.type_code)], [
        upsertion("dave", "d", iterations=4095),
        upsertion("erin", "e", iterations=16385),
        upsertion("frank", "f", iterations=16384),
        ScramCredentialUpsertion("grace", 3, 4096, b"s", b"p"),
        upsertion("", "x"),
        upsertion("heidi", "h"), upsertion("heidi", "h", SHA512),
    ]) == {
        "carol": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "dave": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "erin": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "frank": (ErrorCode.NONE, None),
        "grace": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "heidi": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
    }
    assert store.users() == ["alice", "frank"]  # heidi's two upsertions were both refused
    assert results(store, [ScramCredentialDeletion("alice", SHA256.type_code)], [upsertion("alice", "b")]) == {
        "alice": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")}
    assert authenticates(store, "alice", "a", SHA256)
    assert results(store, [ScramCredentialDeletion("alice", SHA256.type_code)], []) == {"alice": (ErrorCode.NONE, None)}
    assert ScramCredentialStore.load(tmp_path).users() == ["frank"]


def test_describe_all_named_unknown_and_duplicate_users() -> None:
    store = ScramCredentialStore()
    store.alter([], [upsertion("alice", "a", iterations=8192)])
    store.alter([], [upsertion("alice", "a", SHA512)])
    store.alter([], [upsertion("bob", "b")])
    everyone = store.describe(None)
    assert [(r.user, r.error_code, r.credential_infos) for r in everyone] == [
        ("alice", ErrorCode.NONE, ((1, 8192), (2, 4096))), ("bob", ErrorCode.NONE, ((1, 4096),))]
    assert store.describe([]) == everyone
    named = {r.user: (r.error_code, r.error_message) for r in store.describe(["bob", "zed", "alice", "alice"])}
    assert named == {
        "bob": (ErrorCode.NONE, None),
        "zed": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: zed"),
        "alice": (ErrorCode.DUPLICATE_RESOURCE,
                  "Cannot describe SCRAM credentials for the same user twice in a single request: alice"),
    }


def test_add_scram_argument_as_kafka_storage_format_takes_it(tmp_path: Path) -> None:
    user, mechanism, credential = parse_add_scram("SCRAM-SHA-256=[name=admin,password=admin-secret]")
    assert (user, mechanism, credential.iterations) == ("admin", SHA256, 4096)
    store = ScramCredentialStore.load(tmp_path)
    store.upsert(user, mechanism, credential)
    assert authenticates(ScramCredentialStore.load(tmp_path), "admin", "admin-secret", SHA256)
    salt = base64.b64encode(b"0123456789").decode()
    user, mechanism, credential = parse_add_scram(
        f'SCRAM-SHA-512=[name="alice",salt="{salt}",iterations=8192,password=alice-secret]')
    assert (user, mechanism, credential.iterations, credential.salt) == ("alice", SHA512, 8192, b"0123456789")
    salted = base64.b64encode(salted_password(SHA512, "alice-secret", b"0123456789", 8192)).decode()
    assert parse_add_scram(f"SCRAM-SHA-512=[name=alice,salt={salt},saltedpassword={salted},iterations=8192]")[2] \
        == credential


@pytest.mark.parametrize(("argument", "message"), [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=name=a,password=b]", "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[name=a,password=b", "Expected configuration string to end with ]"),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=a]", "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,saltedpassword=AAAA]", "You must supply 'salt' with 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,password=b,colour=red]", "Unknown SCRAM configurations: colour"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=4095]",
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256"),
    ("SCRAM-SHA-512=[name=a,password=b,iterations=16385]",
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_512"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=many]", "Failed to parse iterations count: many"),
    ("SCRAM-SHA-256=[name]", "No equals sign found in SCRAM component: name"),
])
def test_add_scram_errors_are_kafkas(argument: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_add_scram(argument)
    assert str(raised.value) == message

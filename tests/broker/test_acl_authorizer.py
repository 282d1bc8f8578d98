"""StandardAuthorizer rules (Kafka's StandardAuthorizerData): literal/prefixed/wildcard patterns, deny wins,
implied operations, super users, allow.everyone.if.no.acl.found, hosts, authorizeByResourceType; ACL filters;
persistence of the bindings in the log dir across a reload; the authorizer's config keys."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from minikafka.broker.security.acl_store import ACL_FILE, AclStore
from minikafka.broker.security.acls import (
    ANY_BINDING,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from minikafka.broker.security.authorizer import StandardAuthorizer, authorizer_from_props
from minikafka.broker.security.authorizer_config import STANDARD_AUTHORIZER, AuthorizerConfig
from minikafka.broker.session import KafkaPrincipal, Session
from minikafka.protocol.errors import InvalidConfigError, KafkaStorageError

ALICE = Session(KafkaPrincipal("User", "alice"), "10.0.0.1")
BOB = Session(KafkaPrincipal("User", "bob"), "10.0.0.2")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
Op = AclOperation


def acl(resource_type: ResourceType, name: str, principal: str, operation: AclOperation,
        permission: AclPermissionType = ALLOW, pattern_type: PatternType = LITERAL, host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern_type),
                      AccessControlEntry(principal, host, operation, permission))


def authorizer(*bindings: AclBinding, store: AclStore | None = None, **props: str) -> StandardAuthorizer:
    config = AuthorizerConfig.from_props({"authorizer.class.name": STANDARD_AUTHORIZER,
                                          **{key.replace("_", "."): value for key, value in props.items()}})
    created = StandardAuthorizer(config, store)
    if bindings:
        assert asyncio.run(created.create_acls(list(bindings))) == [None] * len(bindings)
    return created


def allowed(auth: StandardAuthorizer, session: Session, operation: AclOperation, resource_type: ResourceType,
            name: str) -> bool:
    return auth.authorize(session, [Action(operation, resource_type, name)])[0]


def test_literal_acl_allows_only_its_resource_principal_and_operation() -> None:
    auth = authorizer(acl(TOPIC, "orders", "User:alice", Op.READ))
    assert allowed(auth, ALICE, Op.READ, TOPIC, "orders")
    assert not allowed(auth, ALICE, Op.WRITE, TOPIC, "orders")
    assert not allowed(auth, ALICE, Op.READ, TOPIC, "orders2")  # a literal name is not a prefix
    assert not allowed(auth, ALICE, Op.READ, GROUP, "orders")
    assert not allowed(auth, BOB, Op.READ, TOPIC, "orders")


def test_prefixed_acl_matches_names_that_start_with_it() -> None:
    auth = authorizer(acl(TOPIC, "fin-", "User:alice", Op.WRITE, pattern_type=PREFIXED))
    assert allowed(auth, ALICE, Op.WRITE, TOPIC, "fin-")
    assert allowed(auth, ALICE, Op.WRITE, TOPIC, "fin-payments")
    assert not allowed(auth, ALICE, Op.WRITE, TOPIC, "fi")
    assert not allowed(auth, ALICE, Op.WRITE, TOPIC, "xfin-payments")


def test_wildcard_resource_and_wildcard_principal() -> None:
    auth = authorizer(acl(TOPIC, "*", "User:alice", Op.READ), acl(GROUP, "g1", "User:*", Op.READ))
    assert allowed(auth, ALICE, Op.READ, TOPIC, "anything")
    assert not allowed(auth, BOB, Op.READ, TOPIC, "anything")
    assert allowed(auth, BOB, Op.READ, GROUP, "g1")
    assert allowed(auth, Session(KafkaPrincipal("Group", "ops"), "10.0.0.3"), Op.READ, GROUP, "g1")


def test_deny_wins_over_allow_from_any_pattern() -> None:
    auth = authorizer(
        acl(TOPIC, "*", "User:alice", Op.ALL),
        acl(TOPIC, "secret-", "User:*", Op.READ, DENY, PREFIXED),
    )
    assert allowed(auth, ALICE, Op.READ, TOPIC, "public")
    assert not allowed(auth, ALICE, Op.READ, TOPIC, "secret-keys")
    assert allowed(auth, ALICE, Op.WRITE, TOPIC, "secret-keys")  # the DENY is for READ only
    auth = authorizer(acl(TOPIC, "t", "User:alice", Op.READ), acl(TOPIC, "t", "User:alice", Op.ALL, DENY))
    assert not allowed(auth, ALICE, Op.READ, TOPIC, "t")


def test_implied_operations_apply_to_allow_acls_only() -> None:
    auth = authorizer(
        acl(TOPIC, "r", "User:alice", Op.READ), acl(TOPIC, "w", "User:alice", Op.WRITE),
        acl(TOPIC, "d", "User:alice", Op.DELETE), acl(TOPIC, "a", "User:alice", Op.ALTER),
        acl(TOPIC, "c", "User:alice", Op.CREATE), acl(TOPIC, "ac", "User:alice", Op.ALTER_CONFIGS),
        acl(TOPIC, "all", "User:alice", Op.ALL),
    )
    for name in ("r", "w", "d", "a", "all"):
        assert allowed(auth, ALICE, Op.DESCRIBE, TOPIC, name), name
    assert not allowed(auth, ALICE, Op.DESCRIBE, TOPIC, "c")  # CREATE does not imply DESCRIBE
    assert allowed(auth, ALICE, Op.DESCRIBE_CONFIGS, TOPIC, "ac")
    assert not allowed(auth, ALICE, Op.DESCRIBE_CONFIGS, TOPIC, "a")
    assert not allowed(auth, ALICE, Op.READ, TOPIC, "w")  # implication goes one way only
    assert all(allowed(auth, ALICE, op, TOPIC, "all") for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER_CONFIGS))
    # A DENY READ does not deny DESCRIBE (Kafka: "a DENY ACL for READ on a resource does not DENY describe").
    auth = authorizer(acl(TOPIC, "t", "User:alice", Op.DESCRIBE), acl(TOPIC, "t", "User:alice", Op.READ, DENY))
    assert allowed(auth, ALICE, Op.DESCRIBE, TOPIC, "t")
    assert not allowed(auth, ALICE, Op.READ, TOPIC, "t")


def test_super_users_are_allowed_even_against_deny() -> None:
    auth = authorizer(acl(TOPIC, "*", "User:*", Op.ALL, DENY), super_users="User:admin; User:alice")
    assert auth.config.super_users == {"User:admin", "User:alice"}
    assert allowed(auth, ALICE, Op.DELETE, TOPIC, "t")
    assert allowed(auth, ALICE, Op.ALTER, CLUSTER, "kafka-cluster")
    assert not allowed(auth, BOB, Op.READ, TOPIC, "t")


def test_allow_everyone_if_no_acl_found_applies_only_to_resources_without_any_acl() -> None:
    auth = authorizer(acl(TOPIC, "guarded", "User:bob", Op.READ), allow_everyone_if_no_acl_found="true")
    assert allowed(auth, ALICE, Op.WRITE, TOPIC, "open")
    assert not allowed(auth, ALICE, Op.READ, TOPIC, "guarded")  # the resource has ACLs, none for alice
    auth = authorizer(acl(TOPIC, "guarded", "User:bob", Op.READ))
    assert not allowed(auth, ALICE, Op.WRITE, TOPIC, "open")  # default false


def test_host_must_match_unless_wildcard() -> None:
    auth = authorizer(acl(TOPIC, "t", "User:alice", Op.READ, host="10.0.0.1"),
                      acl(TOPIC, "t", "User:alice", Op.WRITE, DENY, host="10.9.9.9"),
                      acl(TOPIC, "t", "User:alice", Op.WRITE))
    assert allowed(auth, ALICE, Op.READ, TOPIC, "t")
    assert not allowed(auth, Session(ALICE.principal, "10.0.0.7"), Op.READ, TOPIC, "t")
    assert allowed(auth, ALICE, Op.WRITE, TOPIC, "t")
    assert not allowed(auth, Session(ALICE.principal, "10.9.9.9"), Op.WRITE, TOPIC, "t")


def test_authorize_by_resource_type_kip_679() -> None:
    assert not authorizer().authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
    assert authorizer(acl(TOPIC, "t", "User:alice", Op.WRITE)).authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
    assert authorizer(acl(TOPIC, "x-", "User:*", Op.ALL, pattern_type=PREFIXED)).authorize_by_resource_type(
        ALICE, Op.WRITE, TOPIC)
    dominated = authorizer(acl(TOPIC, "fin-a", "User:alice", Op.WRITE),
                           acl(TOPIC, "fin-", "User:alice", Op.WRITE, DENY, PREFIXED))
    assert not dominated.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
    wildcard_deny = authorizer(acl(TOPIC, "t", "User:alice", Op.WRITE), acl(TOPIC, "*", "User:alice", Op.WRITE, DENY))
    assert not wildcard_deny.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
    assert authorizer(super_users="User:alice").authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)


def test_filters_follow_kafkas_matching_rules() -> None:
    literal = acl(TOPIC, "orders", "User:alice", Op.READ)
    wildcard = acl(TOPIC, "*", "User:bob", Op.WRITE)
    prefixed = acl(TOPIC, "ord", "User:alice", Op.DESCRIBE, DENY, PREFIXED)
    group = acl(GROUP, "orders", "User:alice", Op.READ)
    auth = authorizer(literal, wildcard, prefixed, group)

    def select(resource_type: ResourceType, name: str | None, pattern_type: PatternType,
               principal: str | None = None, operation: AclOperation = Op.ANY,
               permission: AclPermissionType = AclPermissionType.ANY) -> set[AclBinding]:
        return set(auth.acls(AclBindingFilter(ResourcePatternFilter(resource_type, name, pattern_type),
                                              AccessControlEntryFilter(principal, None, operation, permission))))

    assert set(auth.acls(ANY_BINDING)) == {literal, wildcard, prefixed, group}
    assert select(TOPIC, "orders", PatternType.MATCH) == {literal, wildcard, prefixed}
    assert select(TOPIC, "orders", PatternType.ANY) == {literal}  # ANY: exact name, any pattern type
    assert select(TOPIC, "ord", PREFIXED) == {prefixed}
    assert select(ResourceType.ANY, "orders", LITERAL) == {literal, group}
    assert select(ResourceType.ANY, None, PatternType.ANY, principal="User:alice") == {literal, prefixed, group}
    assert select(TOPIC, None, PatternType.ANY, permission=DENY) == {prefixed}
    assert select(TOPIC, None, PatternType.ANY, operation=Op.WRITE) == {wildcard}


def test_create_validates_each_binding_and_is_idempotent() -> None:
    auth = authorizer()
    good = acl(TOPIC, "t", "User:alice", Op.READ)
    errors = asyncio.run(auth.create_acls([
        good,
        good,
        acl(ResourceType.ANY, "t", "User:alice", Op.READ),
        acl(TOPIC, "t", "User:alice", Op.READ, pattern_type=PatternType.MATCH),
        acl(TOPIC, "t", "User:alice", Op.ANY),
        acl(TOPIC, "t", "User:alice", Op.READ, AclPermissionType.ANY),
        acl(TOPIC, "", "User:alice", Op.READ),
        acl(CLUSTER, "my-cluster", "User:alice", Op.ALTER),
        acl(TOPIC, "t", "alice", Op.READ),
    ]))
    assert errors == [
        None, None,
        "Invalid resourceType ANY",
        "Invalid patternType MATCH",
        "Invalid operation ANY",
        "Invalid permissionType ANY",
        "Invalid empty resource name",
        "The only valid name for the CLUSTER resource is kafka-cluster",
        "Could not parse principal from `alice` (no colon is present separating the principal type from the "
        "principal name)",
    ]
    assert auth.acls(ANY_BINDING) == [good]


def test_delete_removes_what_each_filter_matches_and_refuses_unknown_filters() -> None:
    keep = acl(GROUP, "g", "User:alice", Op.READ)
    auth = authorizer(acl(TOPIC, "a", "User:alice", Op.READ), acl(TOPIC, "b", "User:bob", Op.WRITE), keep)
    topic_filter = AclBindingFilter(ResourcePatternFilter(TOPIC, None, PatternType.ANY),
                                    AccessControlEntryFilter(None, None, Op.ANY, AclPermissionType.ANY))
    unknown = AclBindingFilter(ResourcePatternFilter(ResourceType.UNKNOWN, None, PatternType.ANY),
                               AccessControlEntryFilter(None, None, Op.ANY, AclPermissionType.ANY))
    first, second = asyncio.run(auth.delete_acls([topic_filter, unknown]))
    assert {binding.pattern.name for binding in first.deleted} == {"a", "b"} and first.error is None
    assert second.error == "Unknown patternFilter." and second.deleted == ()
    assert auth.acls(ANY_BINDING) == [keep]


def test_acls_persist_in_the_log_dir_and_reload(tmp_path: Path) -> None:
    props = {"authorizer.class.name": STANDARD_AUTHORIZER}
    first = authorizer_from_props(props, tmp_path)
    assert first is not None
    bindings = [acl(TOPIC, "t", "User:alice", Op.READ), acl(GROUP, "g-", "User:*", Op.ALL, DENY, PREFIXED)]
    assert asyncio.run(first.create_acls(bindings)) == [None, None]
    document = json.loads((tmp_path / ACL_FILE).read_text())
    assert document["version"] == 1 and len(document["acls"]) == 2
    assert not list(tmp_path.glob("*.tmp"))

    reloaded = authorizer_from_props(props, tmp_path)
    assert reloaded is not None and set(reloaded.acls(ANY_BINDING)) == set(bindings)
    assert allowed(reloaded, ALICE, Op.READ, TOPIC, "t")
    assert not allowed(reloaded, ALICE, Op.READ, GROUP, "g-1")

    asyncio.run(reloaded.delete_acls([ANY_BINDING]))
    again = authorizer_from_props(props, tmp_path)
    assert again is not None and again.acls(ANY_BINDING) == []


def test_a_stale_write_never_overwrites_a_newer_one(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    newer, older = [acl(TOPIC, "new", "User:a", Op.READ)], [acl(TOPIC, "old", "User:a", Op.READ)]
    store.write(2, newer)
    store.write(1, older)
    assert store.load() == newer


def test_a_malformed_acl_file_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / ACL_FILE).write_text('{"version": 1, "acls": [{"resource_type": "TOPIX"}]}')
    with pytest.raises(KafkaStorageError, match="Malformed ACL file"):
        AclStore(tmp_path).load()


def test_authorizer_config_keys() -> None:
    assert authorizer_from_props({}, None) is None  # Kafka's default: no authorizer
    assert authorizer_from_props({"authorizer.class.name": ""}, None) is None
    old = authorizer_from_props({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}, None)
    assert old is not None and not old.config.allow_everyone_if_no_acl_found and old.config.super_users == set()
    message = ("Invalid value com.acme.Authz for configuration authorizer.class.name: "
               "Class com.acme.Authz could not be found.")
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        authorizer_from_props({"authorizer.class.name": "com.acme.Authz"}, None)
    with pytest.raises(InvalidConfigError, match=re.escape("allow.everyone.if.no.acl.found")):
        authorizer_from_props({"authorizer.class.name": STANDARD_AUTHORIZER,
                               "allow.everyone.if.no.acl.found": "maybe"}, None)

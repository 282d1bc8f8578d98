"""DescribeAcls / CreateAcls / DeleteAcls (29-31) over the wire against a running broker: SECURITY_DISABLED without
an authorizer, per-creation INVALID_REQUEST, grouping by resource pattern, DeleteAcls' matching bindings, the ACLs
surviving a restart, and CLUSTER_AUTHORIZATION_FAILED for a caller that is no longer a super user.

On PLAINTEXT every client is `User:ANONYMOUS`: `super.users=User:ANONYMOUS` makes the test a super user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.admin.acl import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest

from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC, GROUP, CLUSTER, ANY_TYPE = 2, 3, 4, 1
LITERAL, PREFIXED, MATCH, ANY_PATTERN = 3, 4, 2, 1
ANY_OP, ALL, READ, WRITE, ALTER, DESCRIBE = 1, 2, 3, 4, 7, 8
ALLOW, DENY, ANY_PERMISSION = 3, 2, 1
NONE, CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, SECURITY_DISABLED = 0, 31, 42, 54


def creation(resource_type: int, name: str, pattern_type: int, principal: str, operation: int,
             permission: int = ALLOW, host: str = "*") -> Any:
    return CreateAclsRequest.AclCreation(resource_type=resource_type, resource_name=name,
                                         resource_pattern_type=pattern_type, principal=principal, host=host,
                                         operation=operation, permission_type=permission)


def describe(client: WireClient, resource_type: int = ANY_TYPE, name: str | None = None,
             pattern_type: int = ANY_PATTERN, principal: str | None = None, version: int = 3) -> Any:
    return client.request(DescribeAclsRequest[version](
        resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=pattern_type,
        principal_filter=principal, host_filter=None, operation=ANY_OP, permission_type=ANY_PERMISSION))


def described(response: Any) -> set[tuple[int, str, int, str, str, int, int]]:
    return {(resource.resource_type, resource.resource_name, resource.pattern_type, acl.principal, acl.host,
             acl.operation, acl.permission_type) for resource in response.resources for acl in resource.acls}


def delete_filter(resource_type: int, name: str | None, pattern_type: int, principal: str | None = None) -> Any:
    return DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=pattern_type,
        principal_filter=principal, host_filter=None, operation=ANY_OP, permission_type=ANY_PERMISSION)


def test_the_acl_apis_are_advertised_with_kafka_4_versions() -> None:
    assert SUPPORTED_VERSIONS[ApiKey.DESCRIBE_ACLS] == (1, 3)
    assert SUPPORTED_VERSIONS[ApiKey.CREATE_ACLS] == (1, 3)
    assert SUPPORTED_VERSIONS[ApiKey.DELETE_ACLS] == (1, 3)


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as client:
        created = client.request(CreateAclsRequest[3](creations=[creation(TOPIC, "t", LITERAL, "User:a", READ)]))
        assert [(r.error_code, r.error_message) for r in created.results] == [
            (SECURITY_DISABLED, "No Authorizer is configured.")]
        response = describe(client)
        assert (response.error_code, response.error_message) == (
            SECURITY_DISABLED, "No Authorizer is configured on the broker")
        deleted = client.request(DeleteAclsRequest[3](filters=[delete_filter(ANY_TYPE, None, ANY_PATTERN)]))
        assert [r.error_code for r in deleted.filter_results] == [SECURITY_DISABLED]


def test_create_describe_delete_and_reload(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"})
    with WireClient(broker.bootstrap) as client:
        created = client.request(CreateAclsRequest[3](creations=[
            creation(TOPIC, "orders", LITERAL, "User:alice", READ),
            creation(TOPIC, "orders", LITERAL, "User:bob", WRITE, DENY, host="10.1.2.3"),
            creation(TOPIC, "fin-", PREFIXED, "User:*", ALL),
            creation(GROUP, "g1", LITERAL, "User:alice", READ),
            creation(CLUSTER, "kafka-cluster", LITERAL, "User:ANONYMOUS", DESCRIBE),
            creation(ANY_TYPE, "orders", LITERAL, "User:alice", READ),
            creation(TOPIC, "orders", MATCH, "User:alice", READ),
            creation(CLUSTER, "other-cluster", LITERAL, "User:alice", ALTER),
            creation(TOPIC, "orders", LITERAL, "alice", READ),
        ]))
        assert [(r.error_code, r.error_message) for r in created.results] == [
            (NONE, None), (NONE, None), (NONE, None), (NONE, None), (NONE, None),
            (INVALID_REQUEST, "Invalid resourceType ANY"),
            (INVALID_REQUEST, "Invalid patternType MATCH"),
            (INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (INVALID_REQUEST, "Could not parse principal from `alice` (no colon is present separating the "
                              "principal type from the principal name)"),
        ]
        everything = {
            (TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
            (TOPIC, "orders", LITERAL, "User:bob", "10.1.2.3", WRITE, DENY),
            (TOPIC, "fin-", PREFIXED, "User:*", "*", ALL, ALLOW),
            (GROUP, "g1", LITERAL, "User:alice", "*", READ, ALLOW),
            (CLUSTER, "kafka-cluster", LITERAL, "User:ANONYMOUS", "*", DESCRIBE, ALLOW),
        }
        response = describe(client)
        assert response.error_code == NONE and described(response) == everything
        orders = [r for r in response.resources if r.resource_name == "orders"]
        assert len(orders) == 1 and len(orders[0].acls) == 2  # grouped by resource pattern
        assert described(describe(client, TOPIC, "fin-payments", MATCH)) == {
            (TOPIC, "fin-", PREFIXED, "User:*", "*", ALL, ALLOW)}
        assert described(describe(client, principal="User:alice", version=1)) == {
            (TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
            (GROUP, "g1", LITERAL, "User:alice", "*", READ, ALLOW)}
        unknown = describe(client, resource_type=0)
        assert unknown.error_code == INVALID_REQUEST and unknown.resources == []

        deleted = client.request(DeleteAclsRequest[3](filters=[
            delete_filter(TOPIC, "orders", LITERAL, "User:bob"),
            delete_filter(TOPIC, None, 0),
            delete_filter(GROUP, "nothing", LITERAL),
        ]))
        first, second, third = deleted.filter_results
        assert first.error_code == NONE and [
            (m.resource_name, m.principal, m.host, m.operation, m.permission_type, m.pattern_type)
            for m in first.matching_acls] == [("orders", "User:bob", "10.1.2.3", WRITE, DENY, LITERAL)]
        assert (second.error_code, second.error_message) == (INVALID_REQUEST, "Unknown patternFilter.")
        assert (third.error_code, third.matching_acls) == (NONE, [])
    remaining = everything - {(TOPIC, "orders", LITERAL, "User:bob", "10.1.2.3", WRITE, DENY)}

    broker.restart()  # the ACLs live in the log dir
    with WireClient(broker.bootstrap) as client:
        assert described(describe(client)) == remaining

    broker.config["super.users"] = ""
    broker.restart()  # now an ordinary User:ANONYMOUS, allowed to DESCRIBE the cluster, not to ALTER it
    with WireClient(broker.bootstrap) as client:
        assert described(describe(client)) == remaining
        scram = client.request(AlterUserScramCredentialsRequest[0](deletions=[
            AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="alice", mechanism=1)], upsertions=[]))
        assert [(r.user, r.error_code) for r in scram.results] == [("alice", CLUSTER_AUTHORIZATION_FAILED)]
        refused = client.request(CreateAclsRequest[2](creations=[creation(TOPIC, "x", LITERAL, "User:a", READ)]))
        assert [r.error_code for r in refused.results] == [CLUSTER_AUTHORIZATION_FAILED]
        refused = client.request(DeleteAclsRequest[2](filters=[delete_filter(ANY_TYPE, None, ANY_PATTERN)]))
        assert [(r.error_code, r.matching_acls) for r in refused.filter_results] == [
            (CLUSTER_AUTHORIZATION_FAILED, [])]
        assert described(describe(client)) == remaining

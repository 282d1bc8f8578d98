"""Apache Kafka's own `kafka-acls` tool (AclCommand, from its official 4.x jars) against minikafka: `--add`, `--list`
and `--remove` go through CreateAcls, DescribeAcls and DeleteAcls; the broker's answers are checked over the wire."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.protocol.admin.acl import DescribeAclsRequest

from tests.broker_process import BrokerProcess
from tests.interop.test_admin_cli import run_tool
from tests.wire_client import WireClient

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

ACL_COMMAND = ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")



def acls_on_broker(bootstrap: str) -> set[tuple[int, str, int, str, str, int, int]]:
    with WireClient(bootstrap) as client:
        response = client.request(DescribeAclsRequest[3](
            resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
            host_filter=None, operation=1, permission_type=1))
    assert response.error_code == 0
    return {(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in response.resources for a in r.acls}


def test_kafka_acls_add_list_remove(broker_factory: Callable[..., BrokerProcess], kafka_lib_dir: Path) -> None:
    broker = broker_factory({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                             "super.users": "User:ANONYMOUS"})
    base = ["--bootstrap-server", broker.bootstrap]
    run_tool(kafka_lib_dir, ACL_COMMAND, [*base, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                                          "--operation", "Describe", "--topic", "orders", "--group", "billing"])
    run_tool(kafka_lib_dir, ACL_COMMAND, [*base, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9",
                                          "--operation", "Write", "--topic", "fin-", "--resource-pattern-type",
                                          "prefixed"])
    assert acls_on_broker(broker.bootstrap) == {
        (2, "orders", 3, "User:alice", "*", 3, 3), (2, "orders", 3, "User:alice", "*", 8, 3),
        (3, "billing", 3, "User:alice", "*", 3, 3), (3, "billing", 3, "User:alice", "*", 8, 3),
        (2, "fin-", 4, "User:bob", "10.0.0.9", 4, 2),
    }

    listed = run_tool(kafka_lib_dir, ACL_COMMAND, [*base, "--list", "--topic", "orders"]).stdout
    assert "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)" in listed
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    assert "billing" not in listed and "fin-" not in listed
    listed = run_tool(kafka_lib_dir, ACL_COMMAND, [*base, "--list", "--principal", "User:bob"]).stdout
    assert "(principal=User:bob, host=10.0.0.9, operation=WRITE, permissionType=DENY)" in listed

    run_tool(kafka_lib_dir, ACL_COMMAND, [*base, "--remove", "--force", "--allow-principal", "User:alice",
                                          "--operation", "Read", "--operation", "Describe", "--topic", "orders"])
    assert acls_on_broker(broker.bootstrap) == {
        (3, "billing", 3, "User:alice", "*", 3, 3), (3, "billing", 3, "User:alice", "*", 8, 3),
        (2, "fin-", 4, "User:bob", "10.0.0.9", 4, 2),
    }

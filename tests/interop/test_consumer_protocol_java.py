"""KIP-848 with the Java client (issue 12): three `group.protocol=consumer` Java members (each its own JVM,
tests/interop/java GroupMemberClient) join one by one and share six partitions, the first is SIGKILLed and its
partitions move to the other two once its session times out, the survivors commit, and a new member resumes at
the committed offsets — run against Apache Kafka 4.3.1 and minikafka with the same group settings. The
uniform assignor's partition sets after each join (by join order), the kill, the committed offsets and Kafka's
own `kafka-consumer-groups --describe` (offsets, `--members`, `--state`, plain and `--verbose`) of the stable
two-member group must be the same on both; minikafka's offsets also survive a restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.apache_kafka import ApacheKafka
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic
from tests.interop.consumer_groups_cli import describe
from tests.interop.consumer_protocol_scenario import COMMITTED, PARTITIONS, produce
from tests.interop.java_group_member import JavaGroupMember, settle
from tests.interop.kip848_brokers import SESSION_TIMEOUT_MS, fast_apache_kafka, fast_minikafka

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]

TOPIC, GROUP = "kip848-java", "kip848-java-g"  # fixed: the tools' outputs are compared across brokers
PER_PARTITION = 10  # records produced to each partition: the log end offset


@pytest.fixture(scope="module")
def kip848_apache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from fast_apache_kafka(tmp_path_factory.mktemp("kip848-apache"))


def _sizes(members: int) -> list[int]:
    return [PARTITIONS // members + (1 if index < PARTITIONS % members else 0) for index in range(members)]


def _scenario(bootstrap: str, lib_dir: Path, log_dir: Path) -> dict[str, Any]:
    create_topic(bootstrap, TOPIC, PARTITIONS)
    produce(bootstrap, TOPIC, PER_PARTITION)
    members: list[JavaGroupMember] = []
    try:
        joined = []
        for index in range(3):
            members.append(JavaGroupMember(bootstrap, TOPIC, GROUP, client_id=f"java-{index}", log_dir=log_dir))
            joined.append([sorted(owned) for owned in settle(members, _sizes(len(members)), PARTITIONS)])
        victim, survivors = members[0], members[1:]
        before = [member.assignment for member in survivors]
        victim.kill()
        killed_at = time.monotonic()
        after = settle(survivors, [3, 3], PARTITIONS)
        moved_after_s = time.monotonic() - killed_at
        for member, owned in zip(survivors, after, strict=True):
            assert member.commit({partition: COMMITTED[partition] for partition in owned}) == {
                partition: COMMITTED[partition] for partition in owned}
        outcome = {
            "joined": joined,
            "after_kill": [sorted(owned) for owned in after],
            "kept": all(old <= new for old, new in zip(before, after, strict=True)),
            "victims_moved": victim.assignment <= set().union(*after),
            "moved_after_session_timeout": SESSION_TIMEOUT_MS / 1000 - 1.0 <= moved_after_s < 30,
            "committed_read_back": survivors[0].committed(),
            "tool": _describe_with_tool(lib_dir, bootstrap, survivors),
        }
        for member in survivors:
            assert member.exit() == 0 and member.errors() == []
        return outcome
    finally:
        for member in members:
            member.kill()


def _describe_with_tool(lib_dir: Path, bootstrap: str, members: list[JavaGroupMember]) -> dict[str, Any]:
    """The tool's tables, checked against what the members know of themselves and then made comparable across
    brokers: member ids (random) become the client id of the member that has them, which member owns a
    partition (Kafka's choice among members depends on its hash order) becomes "<owner>", an assignment
    "<assignment>", and the coordinator's address (a port) its node id."""
    client_of = {member.member_id: member.name for member in members}
    owner = {partition: member.name for member in members for partition in member.assignment}
    assigned = {member.name: f"{TOPIC}:" + ",".join(map(str, sorted(member.assignment))) for member in members}
    tables: dict[str, Any] = {}
    for name, options in {"offsets": (), "members": ("--members",), "members_verbose": ("--members", "--verbose"),
                          "state": ("--state",), "state_verbose": ("--state", "--verbose")}.items():
        rows = describe(lib_dir, bootstrap, GROUP, *options)
        for row in rows:
            if "CONSUMER-ID" in row:
                assert client_of[row["CONSUMER-ID"]] == row["CLIENT-ID"], (row, client_of)
                row["CONSUMER-ID"] = f"<member {row['CLIENT-ID']}>"
            if "PARTITION" in row:
                assert owner[int(row["PARTITION"])] == row["CLIENT-ID"], (row, owner)
                row["CONSUMER-ID"] = row["CLIENT-ID"] = "<owner>"
            for column in ("CURRENT-ASSIGNMENT", "TARGET-ASSIGNMENT"):
                if column in row:
                    assert row[column] == assigned[row["CLIENT-ID"]], (row, assigned)
                    row[column] = "<assignment>"
            if "COORDINATOR" in row:
                address, node = row["COORDINATOR"].split()
                assert address == bootstrap, row
                row["COORDINATOR"] = node
        tables[name] = sorted(rows, key=lambda row: (row.get("CLIENT-ID", ""), int(row.get("PARTITION", -1))))
    return tables


def _resume(bootstrap: str, log_dir: Path) -> tuple[dict[int, int], dict[int, int]]:
    """(the first offset a new member consumes of each partition, the committed offsets it reads)."""
    member = JavaGroupMember(bootstrap, TOPIC, GROUP, client_id="java-resumed", log_dir=log_dir)
    try:
        member.wait_for(lambda _events: len(member.first_offsets()) == PARTITIONS, 90, "records of every partition")
        first, committed = member.first_offsets(), member.committed()
        assert member.exit() == 0
        return first, committed
    finally:
        member.kill()


def _check_tool_output(tables: dict[str, Any]) -> None:
    """What the tool shows of the stable two-member group, pinned to the scenario."""
    offsets = tables["offsets"]
    assert [(row["TOPIC"], int(row["PARTITION"]), int(row["CURRENT-OFFSET"]), int(row["LOG-END-OFFSET"]),
             int(row["LAG"])) for row in sorted(offsets, key=lambda row: int(row["PARTITION"]))] == [
        (TOPIC, partition, COMMITTED[partition], PER_PARTITION, PER_PARTITION - COMMITTED[partition])
        for partition in range(PARTITIONS)]
    assert {row["HOST"] for row in offsets} == {"/127.0.0.1"}
    members = tables["members_verbose"]
    assert [(row["CLIENT-ID"], row["HOST"], row["#PARTITIONS"]) for row in members] == [
        ("java-1", "/127.0.0.1", "3"), ("java-2", "/127.0.0.1", "3")]
    for row in members:
        assert row["CURRENT-EPOCH"] == row["TARGET-EPOCH"]
    assert [{key: row[key] for key in ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")}
            for row in members] == tables["members"]
    [state] = tables["state"]
    assert state == {"GROUP": GROUP, "COORDINATOR": "(1)", "ASSIGNMENT-STRATEGY": "uniform", "STATE": "Stable",
                     "#MEMBERS": "2"}
    [verbose] = tables["state_verbose"]
    assert {key: verbose[key] for key in state} == state
    assert verbose["GROUP-EPOCH"] == verbose["TARGET-ASSIGNMENT-EPOCH"] == members[0]["CURRENT-EPOCH"]


def test_java_members_share_move_and_commit_as_on_apache_kafka(kip848_apache: ApacheKafka, kafka_lib_dir: Path,
                                                                java_client: None, tmp_path: Path) -> None:
    apache_logs, logs = tmp_path / "apache-members", tmp_path / "minikafka-members"
    apache_logs.mkdir()
    logs.mkdir()
    apache = _scenario(kip848_apache.bootstrap, kafka_lib_dir, apache_logs)
    apache_resumed = _resume(kip848_apache.bootstrap, apache_logs)
    broker: BrokerProcess = fast_minikafka(tmp_path / "data")
    broker.start()
    try:
        outcome = _scenario(broker.bootstrap, kafka_lib_dir, logs)
        broker.stop()
        broker.start()
        resumed = _resume(broker.bootstrap, logs)
    finally:
        broker.stop()

    assert apache["joined"] == [[[0, 1, 2, 3, 4, 5]], [[0, 1, 2], [3, 4, 5]], [[0, 1], [3, 4], [2, 5]]]
    assert outcome["joined"] == apache["joined"]  # the uniform assignor's sticky result, member by member
    for result in (apache, outcome):
        # each survivor keeps its two and gets one of the victim's (which one is up to Kafka's hash order)
        victims = set(result["joined"][-1][0])
        assert [len(set(owned) & victims) for owned in result["after_kill"]] == [1, 1]
        assert result["kept"] and result["victims_moved"] and result["moved_after_session_timeout"]
        assert result["committed_read_back"] == COMMITTED
        _check_tool_output(result["tool"])
    assert outcome["tool"] == apache["tool"]
    assert apache_resumed == (COMMITTED, COMMITTED)
    assert resumed == (COMMITTED, COMMITTED)  # after minikafka's restart

"""Mixed classic/consumer groups (issue 12, `group.consumer.migration.policy` at its default `bidirectional`),
with Java members against Apache Kafka 4.3.1 and minikafka side by side.

Online upgrade: three classic members (`group.protocol=classic`, range) share six partitions; one by one a
`group.protocol=consumer` member joins — the first one turns the group into a consumer group — and then a
classic member leaves. Then a classic member joins the consumer group, the consumer members leave one by one,
and when only the classic member is left the group is downgraded to a classic group, which a second classic
member then joins. After every step: the group's type and state (ListGroups), the members' assignments cover
every partition exactly once with the sizes the assignors give, and every member commits its partitions
without an error. Where only classic members are in the group, the range assignor's partition ranges are
compared too; which member holds which partition is not (range orders members by their random ids, and
Kafka's uniform assignor depends on its hash order). In the two mixed states Kafka's `kafka-consumer-groups
--describe --members --verbose` and `--state --verbose` must show the same (UPGRADED is false exactly for the
classic members), and at the end Kafka's `--offsets-decoder` must read minikafka's conversion records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.apache_kafka import ApacheKafka, check_dump_clean, dump_log
from tests.integration.client_drivers import create_topic
from tests.interop.consumer_groups_cli import describe
from tests.interop.consumer_protocol_scenario import PARTITIONS, produce
from tests.interop.java_group_member import JavaGroupMember, settle
from tests.interop.kip848_brokers import FAST_CLASSIC_MEMBER, fast_apache_kafka, fast_minikafka

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]

TOPIC, GROUP = "migration", "migration-g"


@pytest.fixture(scope="module")
def kip848_apache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from fast_apache_kafka(tmp_path_factory.mktemp("migration-apache"))


def _group(bootstrap: str) -> tuple[str, str]:
    """(type, state) of GROUP as ListGroups shows it, once it is Stable (a step may end mid-rebalance)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        listed = admin.list_consumer_groups(request_timeout=10).result()
        [entry] = [group for group in listed.valid if group.group_id == GROUP]
        kind, state = entry.type.name.lower(), entry.state.name.lower()
        if state == "stable" or time.monotonic() > deadline:
            return kind, state
        time.sleep(0.2)


class _Scenario:
    """One run of the steps against one broker; `steps` records what each step ended with."""

    def __init__(self, bootstrap: str, lib_dir: Path, log_dir: Path) -> None:
        self.bootstrap = bootstrap
        self.lib_dir = lib_dir
        self.log_dir = log_dir
        self.members: list[JavaGroupMember] = []
        self.steps: list[tuple[Any, ...]] = []

    def join(self, name: str, protocol: str) -> JavaGroupMember:
        member = JavaGroupMember(self.bootstrap, TOPIC, GROUP, protocol=protocol, client_id=name,
                                 log_dir=self.log_dir,
                                 consumer_config=FAST_CLASSIC_MEMBER if protocol == "classic" else None)
        self.members.append(member)
        return member

    def leave(self, name: str) -> None:
        [member] = [member for member in self.members if member.name == name]
        self.members.remove(member)
        assert member.exit() == 0 and member.errors() == []

    def step(self, label: str, sizes: list[int], commit_offset: int, tool: bool = False) -> None:
        owned = settle(self.members, sizes, PARTITIONS)
        kind, state = _group(self.bootstrap)
        for member in self.members:
            if not member.assignment:
                # A classic member's eager rebalance began after the group settled (it revokes everything first,
                # so its latest poll owns nothing): commit once it owns its partitions again.
                settle(self.members, sizes, PARTITIONS)
            member.commit({partition: commit_offset for partition in member.assignment})
        classic_only = all(member.name.startswith("classic") for member in self.members)
        ranges = sorted(sorted(partitions) for partitions in owned)  # range: by member id, and ids are random
        self.steps.append((label, kind, state, sorted(map(len, owned)), ranges if classic_only else None))
        if tool:
            self.steps.append((label, *self.described()))

    def described(self) -> tuple[dict[str, str], list[str], dict[str, str]]:
        """`kafka-consumer-groups --describe --members --verbose` and `--state --verbose` of the stable group,
        checked against what the members know of themselves: whether each member uses the consumer protocol
        (UPGRADED) by client id, the partition counts, the state. Epochs are checked to agree but not kept: the
        classic generation the group is upgraded at depends on how the classic members' joins interleaved."""
        by_id = {member.member_id: member for member in self.members}
        [state] = describe(self.lib_dir, self.bootstrap, GROUP, "--state", "--verbose")
        epoch = state.pop("GROUP-EPOCH")
        assert state.pop("TARGET-ASSIGNMENT-EPOCH") == epoch, state
        del state["COORDINATOR"]
        upgraded, counts = {}, []
        for row in describe(self.lib_dir, self.bootstrap, GROUP, "--members", "--verbose"):
            member = by_id[row["CONSUMER-ID"]]
            assert row["CLIENT-ID"] == member.name and row["HOST"] == "/127.0.0.1", row
            assert row["CURRENT-ASSIGNMENT"] == row["TARGET-ASSIGNMENT"] == f"{TOPIC}:" + ",".join(
                map(str, sorted(member.assignment))), row
            assert row["CURRENT-EPOCH"] == row["TARGET-EPOCH"] == epoch, (row, epoch)
            upgraded[member.name] = row["UPGRADED"]
            counts.append(row["#PARTITIONS"])
        return upgraded, sorted(counts), state

    def run(self) -> dict[int, int]:
        create_topic(self.bootstrap, TOPIC, PARTITIONS)
        produce(self.bootstrap, TOPIC)
        try:
            for index in range(3):
                self.join(f"classic-{index}", "classic")
            self.step("three classic members", [2, 2, 2], 1)
            for index in range(3):
                self.join(f"consumer-{index}", "consumer")
                self.step(f"consumer-{index} joined", [2, 2, 1, 1], 2, tool=index == 0)
                self.leave(f"classic-{index}")
                self.step(f"classic-{index} left", [2, 2, 2], 3)
            self.join("classic-3", "classic")
            self.step("a classic member joins the consumer group", [2, 2, 1, 1], 4, tool=True)
            for index, sizes in enumerate(([2, 2, 2], [3, 3], [6])):
                self.leave(f"consumer-{index}")
                self.step(f"consumer-{index} left", sizes, 5)
            self.join("classic-4", "classic")
            self.step("a classic member joins the downgraded group", [3, 3], 6)
            committed = self.members[0].committed()
            for name in [member.name for member in self.members]:
                self.leave(name)
        finally:
            for member in self.members:
                member.kill()
        logged = [line for path in self.log_dir.glob("*.stderr.log") for line in path.read_text().splitlines()
                  if "] WARN " in line or "] ERROR " in line]
        assert logged == [], logged[:20]
        return committed


EXPECTED_STEPS = [
    ("three classic members", "classic", "stable", [2, 2, 2], [[0, 1], [2, 3], [4, 5]]),
    ("consumer-0 joined", "consumer", "stable", [1, 1, 2, 2], None),
    ("classic-0 left", "consumer", "stable", [2, 2, 2], None),
    ("consumer-1 joined", "consumer", "stable", [1, 1, 2, 2], None),
    ("classic-1 left", "consumer", "stable", [2, 2, 2], None),
    ("consumer-2 joined", "consumer", "stable", [1, 1, 2, 2], None),
    ("classic-2 left", "consumer", "stable", [2, 2, 2], None),
    ("a classic member joins the consumer group", "consumer", "stable", [1, 1, 2, 2], None),
    ("consumer-0 left", "consumer", "stable", [2, 2, 2], None),
    ("consumer-1 left", "consumer", "stable", [3, 3], None),
    ("consumer-2 left", "classic", "stable", [6], [[0, 1, 2, 3, 4, 5]]),
    ("a classic member joins the downgraded group", "classic", "stable", [3, 3], [[0, 1, 2], [3, 4, 5]]),
]


def test_online_upgrade_mixed_group_and_downgrade_as_on_apache_kafka(kip848_apache: ApacheKafka, java_client: None,
                                                                    kafka_lib_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "apache").mkdir()
    (tmp_path / "minikafka").mkdir()
    apache = _Scenario(kip848_apache.bootstrap, kafka_lib_dir, tmp_path / "apache")
    apache_committed = apache.run()
    assert [step for step in apache.steps if len(step) == 5] == EXPECTED_STEPS
    assert [step[1] for step in apache.steps if len(step) == 4] == [
        {"classic-0": "false", "classic-1": "false", "classic-2": "false", "consumer-0": "true"},
        {"consumer-0": "true", "consumer-1": "true", "consumer-2": "true", "classic-3": "false"}]
    broker = fast_minikafka(tmp_path / "data")
    broker.start()
    try:
        scenario = _Scenario(broker.bootstrap, kafka_lib_dir, tmp_path / "minikafka")
        committed = scenario.run()
    finally:
        assert broker.stop() == 0
    assert scenario.steps == apache.steps
    assert committed == apache_committed == {partition: 6 for partition in range(PARTITIONS)}
    # Kafka's own decoder reads the conversion records: members using the classic protocol inside the consumer
    # group (ClassicMemberMetadata, tagged) and the classic group metadata written by the downgrade.
    logs = [path for path in broker.data_dir.glob("__consumer_offsets-*/*.log") if path.stat().st_size > 0]
    dumped = dump_log(logs, deep=True, index_sanity=False, lib_dir=kip848_apache.lib_dir, offsets_decoder=True)
    assert check_dump_clean(dumped) == []
    assert '"classicMemberMetadata":{"sessionTimeoutMs":6000,"supportedProtocols":[{"name":"range"' in dumped.stdout
    assert '"protocolType":"consumer"' in dumped.stdout

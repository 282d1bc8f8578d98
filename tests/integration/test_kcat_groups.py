"""Issue 3 "Done when": `kcat -G group topic` (librdkafka's balanced consumer) consumes as a group.

One kcat reads everything and commits on exit, a second run of the same group reads only what came after;
two concurrent kcat members split the partitions between them and each record reaches exactly one of them.
Skipped with a reason when kcat is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = [
    pytest.mark.skipif(KCAT is None, reason="kcat is not on PATH (apt-get install kcat to run this test)"),
    pytest.mark.timeout(90),
]
OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}
TIMEOUT_S = 30.0
FORMAT = "%p %o %k %s\n"


def _kcat(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KCAT is not None
    result = subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, f"kcat {' '.join(args)} exited {result.returncode}:\n{result.stderr}"
    return result


def _produce(bootstrap: str, topic: str, keys: range) -> None:
    _kcat("-b", bootstrap, "-P", "-t", topic, "-K", ":", stdin="".join(f"k{i}:v{i}\n" for i in keys))


def _rows(output: str) -> list[tuple[int, int, str, str]]:
    rows = []
    for line in output.splitlines():
        partition, offset, key, value = line.split(" ")
        rows.append((int(partition), int(offset), key, value))
    return rows


def _consume_as_group(bootstrap: str, group: str, topic: str) -> list[tuple[int, int, str, str]]:
    """`kcat -G` until the end of every assigned partition (-e); kcat commits its offsets when it closes."""
    result = _kcat("-b", bootstrap, "-G", group, topic, "-X", "auto.offset.reset=earliest", "-e", "-f", FORMAT)
    assert f"Group {group} rebalanced" in result.stderr, result.stderr
    return _rows(result.stdout)


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    listed = admin.list_consumer_group_offsets([request])[group].result(timeout=TIMEOUT_S)
    return {tp.partition: tp.offset for tp in listed.topic_partitions}


def test_kcat_group_commits_and_a_second_run_resumes(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory(OVERRIDES)
    topic, group = "kcat-group", "kcat-g1"
    create_topic(broker.bootstrap, topic, 3)
    _produce(broker.bootstrap, topic, range(30))

    first = _consume_as_group(broker.bootstrap, group, topic)
    assert sorted((key, value) for _, _, key, value in first) == sorted((f"k{i}", f"v{i}") for i in range(30))
    end_offsets = {p: 1 + max(o for partition, o, _, _ in first if partition == p) for p in range(3)}
    for p in range(3):
        assert sorted(o for partition, o, _, _ in first if partition == p) == list(range(end_offsets[p]))
    assert _committed(broker.bootstrap, group, topic, 3) == end_offsets

    _produce(broker.bootstrap, topic, range(30, 39))
    second = _consume_as_group(broker.bootstrap, group, topic)
    assert sorted(key for _, _, key, _ in second) == sorted(f"k{i}" for i in range(30, 39))
    for partition, offset, _, _ in second:
        assert offset >= end_offsets[partition], f"re-read committed records: {second}"


class KcatMember:
    """A running `kcat -G` process; a thread follows its stderr for the current assignment. Owns the process."""

    ASSIGNED = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)")

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        assert KCAT is not None
        self.process = subprocess.Popen(
            [KCAT, "-b", bootstrap, "-G", group, topic, "-X", "auto.offset.reset=earliest", "-u", "-f", FORMAT],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.assignment: set[int] = set()
        self.lines: list[str] = []
        self.stderr: list[str] = []
        self._threads = [threading.Thread(target=self._follow_stderr, daemon=True),
                         threading.Thread(target=self._follow_stdout, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _follow_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            match = self.ASSIGNED.search(line)
            if match:
                partitions = {int(p) for p in re.findall(r"\[(\d+)\]", match.group(2))}
                self.assignment = partitions if match.group(1) == "assigned" else set()

    def _follow_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for thread in self._threads:
            thread.join(5)


def test_two_kcat_members_split_the_partitions(broker_factory: Callable[..., BrokerProcess]) -> None:
    broker = broker_factory(OVERRIDES)
    topic, group = "kcat-split", "kcat-g2"
    create_topic(broker.bootstrap, topic, 4)
    members = [KcatMember(broker.bootstrap, group, topic)]
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while members[0].assignment != {0, 1, 2, 3} and time.monotonic() < deadline:
            time.sleep(0.05)
        members.append(KcatMember(broker.bootstrap, group, topic))
        while time.monotonic() < deadline:
            first, second = members[0].assignment, members[1].assignment
            if first and second and not first & second and first | second == {0, 1, 2, 3}:
                break
            time.sleep(0.05)
        assignments = [member.assignment for member in members]
        assert sorted(len(a) for a in assignments) == [2, 2], [m.stderr for m in members]

        _produce(broker.bootstrap, topic, range(40))
        while sum(len(m.lines) for m in members) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # a duplicate delivery, if any, would show up here
        keys: Counter[str] = Counter()
        for member, assignment in zip(members, assignments, strict=True):
            rows = _rows("\n".join(member.lines))
            assert {partition for partition, _, _, _ in rows} <= assignment
            keys.update(key for _, _, key, _ in rows)
        assert keys == Counter(f"k{i}" for i in range(40)), "every record reaches exactly one member"
    finally:
        for member in members:
            member.stop()

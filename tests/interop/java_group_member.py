"""`JavaGroupMember`: one Java KafkaConsumer in a group (the Java interop client's `--mode group-member`,
tests/interop/java GroupMemberClient), run as its own JVM.

The JVM prints JSON lines (assignment changes, records, commit results) that a reader thread collects; the test
sends commands on its stdin (`commit`, `committed`, `exit`) and can SIGKILL it, so that only the coordinator's
session timeout takes its partitions away.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from tests.interop.java_client import LIB_DIR, MAIN_CLASS, ensure_built


class JavaGroupMember:
    """Owns one GroupMemberClient process, its stdin and the events it printed (guarded by a condition)."""

    def __init__(self, bootstrap: str, topic: str, group: str, *, protocol: str = "consumer",
                 client_id: str | None = None, log_dir: Path | None = None,
                 consumer_config: dict[str, str] | None = None) -> None:
        jar = ensure_built()
        self.name = client_id or f"{protocol}-member"
        args = ["--mode", "group-member", "--bootstrap", bootstrap, "--topic", topic, "--group", group,
                "--protocol", protocol]
        if client_id is not None:
            args += ["--client-id", client_id]
        if consumer_config:
            args += ["--consumer-config", ",".join(f"{key}={value}" for key, value in consumer_config.items())]
        self._stderr: IO[bytes] | int = subprocess.DEVNULL
        if log_dir is not None:
            self._stderr = open(log_dir / f"{self.name}.stderr.log", "wb")  # noqa: SIM115 -- closed in wait()
        self.process = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", f"{jar}:{LIB_DIR}/*", MAIN_CLASS, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1,
        )
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                with self._changed:
                    self.events.append(json.loads(line))
                    self._changed.notify_all()
        with self._changed:
            self.events.append({"event": "exited"})
            self._changed.notify_all()

    # -- what it printed ---------------------------------------------------------------------------------
    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], Any], timeout_s: float = 60.0,
                 what: str = "a condition") -> Any:
        """The first truthy `predicate(events)` within `timeout_s`; AssertionError with the events otherwise."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                result = predicate(self.events)
                if result:
                    return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{self.name}: no {what} within {timeout_s}s; events: {self.events[-20:]}")
                self._changed.wait(remaining)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._changed:
            return [event for event in self.events if event["event"] == kind]

    @property
    def assignment(self) -> set[int]:
        """The partitions it owned after its latest poll."""
        shown = self.of_kind("assignment")
        return set(shown[-1]["partitions"]) if shown else set()

    @property
    def member_id(self) -> str:
        shown = [event for event in self.of_kind("assignment") if event["member_id"]]
        return str(shown[-1]["member_id"]) if shown else ""

    def errors(self) -> list[dict[str, Any]]:
        return self.of_kind("error")

    def first_offsets(self) -> dict[int, int]:
        """The offset of the first record it consumed from each partition."""
        first: dict[int, int] = {}
        for event in self.of_kind("records"):
            first.setdefault(event["partition"], event["first_offset"])
        return first

    # -- commands ----------------------------------------------------------------------------------------
    def _send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def commit(self, offsets: dict[int, int], timeout_s: float = 60.0) -> dict[int, int]:
        """commitSync `offsets` (partition -> next offset) of its topic; returns what it committed."""
        done_before = len(self.of_kind("committed")) + len(self.errors())
        self._send("commit " + ",".join(f"{partition}={offset}" for partition, offset in sorted(offsets.items())))
        self.wait_for(lambda events: len([e for e in events if e["event"] in ("committed", "error")]) > done_before,
                      timeout_s, "commit result")
        errors = self.errors()
        assert len(errors) == 0, errors
        return {int(p): o for p, o in self.of_kind("committed")[-1]["offsets"].items()}

    def committed(self, timeout_s: float = 60.0) -> dict[int, int]:
        """The group's committed offset of every partition of its topic (-1: none)."""
        before = len(self.of_kind("committed_read"))
        self._send("committed")
        self.wait_for(lambda events: len([e for e in events if e["event"] == "committed_read"]) > before
                      or any(e["event"] == "error" for e in events), timeout_s, "committed offsets")
        assert self.errors() == [], self.errors()
        return {int(p): o for p, o in self.of_kind("committed_read")[-1]["offsets"].items()}

    def exit(self, timeout_s: float = 60.0) -> int:
        """Close the consumer (it leaves the group) and wait for the JVM."""
        if self.process.poll() is None:
            try:
                self._send("exit")
            except (BrokenPipeError, OSError):
                pass
        return self.wait(timeout_s)

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, the coordinator must notice the missing heartbeats."""
        self.process.kill()
        self.wait(30)

    def wait(self, timeout_s: float) -> int:
        try:
            code = self.process.wait(timeout_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(10)
            if self.process.stdin is not None:
                try:
                    self.process.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
            if not isinstance(self._stderr, int):
                self._stderr.close()
        self._reader.join(10)
        return code


def settle(members: Iterable[JavaGroupMember], sizes: list[int], partitions: int,
           timeout_s: float = 90.0) -> list[set[int]]:
    """Wait until the members' assignments have these sizes (sorted) and cover every partition exactly once."""
    members = list(members)
    deadline = time.monotonic() + timeout_s
    while True:
        current = [member.assignment for member in members]
        union = set().union(*current)
        if sorted(map(len, current)) == sorted(sizes) and len(union) == partitions == sum(map(len, current)):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"assignments did not settle to {sizes}: {current}; errors: "
                                 f"{[member.errors() for member in members]}")
        time.sleep(0.05)

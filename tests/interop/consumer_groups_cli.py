"""Run Apache Kafka's own `kafka-consumer-groups.sh` (ConsumerGroupCommand, official jars) and parse its tables."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.kafka_jars import find_main_class, java_command

TOOL = ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "kafka.admin.ConsumerGroupCommand")
TOOL_TIMEOUT_S = 120
_COORDINATOR = "COORDINATOR (ID)"


def consumer_groups(lib_dir: Path, bootstrap: str, *args: str) -> str:
    """The tool's stdout; it must exit 0 and log no warning or error."""
    command = java_command(lib_dir, find_main_class(lib_dir, *TOOL), ["--bootstrap-server", bootstrap, *args],
                           heap="256m")
    done = subprocess.run(command, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    noisy = [line for line in done.stderr.splitlines() if " WARN " in line or " ERROR " in line]
    assert noisy == [], done.stderr[-3000:]
    return done.stdout


def parse_table(output: str) -> list[dict[str, str]]:
    """The rows of the table under the "GROUP ..." header, by column name. `COORDINATOR (ID)` is one column
    ("127.0.0.1:9092 (1)"); no other value of the tool's describe tables contains a space."""
    lines = [line for line in output.splitlines() if line.strip()]
    header_at = next(index for index, line in enumerate(lines) if line.startswith("GROUP "))
    header = lines[header_at].replace(_COORDINATOR, "COORDINATOR").split()
    rows = []
    for line in lines[header_at + 1:]:
        values = line.split()
        if "COORDINATOR" in header:
            at = header.index("COORDINATOR")
            values[at:at + 2] = [" ".join(values[at:at + 2])]
        assert len(values) == len(header), (header, line)
        rows.append(dict(zip(header, values, strict=True)))
    return rows


def describe(lib_dir: Path, bootstrap: str, group: str, *options: str) -> list[dict[str, str]]:
    """`kafka-consumer-groups --describe --group GROUP [options]`, parsed."""
    return parse_table(consumer_groups(lib_dir, bootstrap, "--describe", "--group", group, *options))

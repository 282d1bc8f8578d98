"""The README's command for Kafka's command-line tools: `python -m bench.kafka_tools` writes `kafka-configs`,
`kafka-topics`, `kafka-share-groups`, ... and they work against minikafka as the README uses them, from PATH."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


def test_the_readmes_kafka_tools_command_puts_kafkas_tools_on_path(
    kafka_lib_dir: Path, broker: BrokerProcess, tmp_path: Path
) -> None:
    readme = (REPO / "README.md").read_text()
    (command,) = re.findall(r"`\.venv/bin/python (-m bench\.kafka_tools)`", readme)
    bin_dir = tmp_path / "bin"
    made = subprocess.run([sys.executable, *shlex.split(command), str(bin_dir)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert f'export PATH="{bin_dir}:$PATH"' in made.stdout
    for tool in ("kafka-configs", "kafka-topics", "kafka-acls", "kafka-consumer-groups", "kafka-share-groups"):
        assert os.access(bin_dir / tool, os.X_OK), tool
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}

    def tool(*args: str) -> str:
        done = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    tool("kafka-topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", "orders", "--partitions", "3")
    tool("kafka-configs", "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "topics",
         "--entity-name", "orders", "--add-config", "cleanup.policy=compact")
    described = tool("kafka-configs", "--bootstrap-server", broker.bootstrap, "--describe", "--entity-type", "topics",
                     "--entity-name", "orders")
    assert "cleanup.policy=compact" in described
